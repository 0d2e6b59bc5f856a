"""The email sending provider's events on the mail the helpdesk sends (gateway/helpdesk/inbound/email_provider.py),
one stored event each:

- `bounce` and `dropped`: the recipient's address is marked bouncing (the helpdesk sends it nothing automatic), and
  an internal note goes on the ticket of the mail, found by its Message-ID (`smtp-id`, else the custom argument
  `message_id`) among the conversations' stored Message-IDs; the delivery of the reply that mail was is `bounced`;
- `spamreport` (a complaint): the same, the note saying the recipient reported the mail as spam;
- `delivered`: the reply's delivery is `delivered` (recorded: the outcome `delivered`, with the mail's ticket when
  known); `deferred`: recorded, the
  provider retries; every other kind (`processed`, `open`, `click`, `unsubscribe`...): recorded."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.service import Apply, Context
from storage.helpdesk import customers, outbound, tickets
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import DELIVERY_EVENT, DeliveryEvent

BOUNCES = ("bounce", "dropped")
COMPLAINTS = ("spamreport",)


def message_id_of(item: DeliveryEvent) -> str | None:
    """The Message-ID of the mail an event is about, without angle brackets."""
    for value in (item.smtp_id, item.message_id):
        if value and value.strip().strip("<>").strip():
            return value.strip().strip("<>").strip()
    return None


def note_of(kind: str, item: DeliveryEvent, email: str) -> str:
    if kind in COMPLAINTS:
        return f"Complaint: {email} reported the mail as spam. Nothing automatic is sent to this address any more."
    return f"Delivery failed to {email}{failure_of(item)}. Nothing automatic is sent to this address any more."


def failure_of(item: DeliveryEvent) -> str:
    """` (<status>): <reason>` of a failed delivery."""
    status = f" ({item.status})" if item.status else ""
    return f"{status}: {item.reason or item.response or 'no reason given'}"


async def handle(_context: Context, event: Any) -> Apply:
    item = DELIVERY_EVENT.decode(event.body)
    kind = item.event.strip().lower()
    email = item.email.strip().lower()
    message_id = message_id_of(item)

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        organization_id = event.organization_id
        found = tickets.tickets_of_message_ids(connection, organization_id, [message_id] if message_id else [])
        ticket = tickets.get(connection, organization_id, found[message_id]) if message_id in found else None
        ticket_id = ticket.id if ticket else None
        if message_id and kind in ("delivered", *BOUNCES):
            state: outbound.State = "delivered" if kind == "delivered" else "bounced"
            error = None if kind == "delivered" else f"the email provider reported a {kind}{failure_of(item)}"
            outbound.report(connection, organization_id, message_id, state, medium="email", error=error, now=now)
        if kind == "delivered":
            return Outcome("delivered", classification="delivery", ticket_id=ticket_id)
        if kind == "deferred":
            return Outcome("deferred: the provider retries", classification="deferred", ticket_id=ticket_id)
        if kind not in BOUNCES + COMPLAINTS:
            return Outcome(f"recorded: {kind}", classification=kind[:32], ticket_id=ticket_id)
        classification = "complaint" if kind in COMPLAINTS else "bounce"
        customer = customers.mark_bouncing(connection, organization_id, email, now)
        marked = "address marked bouncing" if customer is not None else "no customer has this address"
        if ticket is None:
            return Outcome(f"{classification} of no known mail; {marked}", classification=classification)
        note = tickets.add_conversation(
            connection,
            ticket,
            author_type="agent",
            author_id=None,
            body=note_of(kind, item, email),
            internal=True,
            now=now,
            recorded=recorded,
        )
        return Outcome(
            f"{classification} noted on its ticket; {marked}",
            classification=classification,
            ticket_id=ticket.id,
            conversation_id=note.id,
        )

    return apply
