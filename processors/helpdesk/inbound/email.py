"""Inbound mail, of every provider kind: parsed into one `Mail` (mail.py), its attachments put in the blob store, then
classified and threaded in the order of section 4.6 (In-Reply-To, every References id, a `[Ticket #<number>]`
subject, a stored Message-ID) onto its ticket, or made a new ticket. A bounce becomes an internal note on the ticket
of the mail it returns and marks the address bouncing; auto-replies, our own mail coming back, delayed-delivery
notices and feedback reports make no ticket. A customer's reply reopens a resolved or closed ticket, at most
REOPENS_PER_HOUR times an hour per ticket (the backstop against a loop with another machine)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound import mail as mails
from processors.helpdesk.inbound.mail import Mail
from processors.helpdesk.inbound.service import Apply, Context
from storage.helpdesk import channels, customers, tickets
from storage.helpdesk.inbound import Outcome

REOPENS_PER_HOUR = 3
CLOSED = ("resolved", "closed")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def parse(event: Any) -> Mail:
    """The event's mail, by its provider kind (kinds A, B and C give fields; D the raw message)."""
    details = event.details or {}
    if event.provider == "email_d":
        return mails.from_rfc822(event.body, envelope_to=details.get("envelope_to"))
    raise ValueError(f"no mail parser for {event.provider}")


async def handle(context: Context, event: Any) -> Apply:
    mail = parse(event)
    attachments = []
    for index, attachment in enumerate(mail.attachments):
        name = _UNSAFE.sub("_", attachment.name)[:100] or "attachment"
        key = f"helpdesk/{event.organization_id}/inbound/{event.id}/{index}-{name}"
        await context.blobs.put(key, attachment.data, attachment.content_type)
        attachments.append(
            {
                "name": attachment.name,
                "content_type": attachment.content_type,
                "size": len(attachment.data),
                "blob": key,
            }
        )

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        own = channels.addresses_of(connection, event.channel_id, "email")
        kind = mails.classify(mail, own)
        if kind in mails.NO_TICKET:
            return Outcome(f"no ticket: {kind.replace('_', ' ')}", classification=kind)
        if kind == mails.BOUNCE:
            return _bounce(connection, event, mail, now, recorded)
        return _message(connection, event, mail, kind=kind, attachments=attachments, now=now, recorded=recorded)

    return apply


def _thread(connection: Connection, organization_id: str, mail: Mail) -> tuple[tickets.TicketRecord, str] | None:
    """The ticket the mail belongs to, and the rule that found it."""
    for rule, ids in (("In-Reply-To", mail.in_reply_to), ("References", mail.references)):
        found = tickets.tickets_of_message_ids(connection, organization_id, ids)
        for message_id in ids:
            if message_id in found:
                ticket = tickets.get(connection, organization_id, found[message_id])
                if ticket is not None:
                    return ticket, rule
    number = mails.ticket_number(mail.subject)
    if number is not None:
        ticket = tickets.by_number(connection, organization_id, number)
        if ticket is not None:
            return ticket, "subject"
    if mail.message_id:
        found = tickets.tickets_of_message_ids(connection, organization_id, [mail.message_id])
        if mail.message_id in found:
            ticket = tickets.get(connection, organization_id, found[mail.message_id])
            if ticket is not None:
                return ticket, "Message-ID"
    return None


def _message(
    connection: Connection,
    event: Any,
    mail: Mail,
    *,
    kind: str,
    attachments: list[dict[str, Any]],
    now: datetime,
    recorded: list[str],
) -> Outcome:
    organization_id = event.organization_id
    if not mail.sender:
        return Outcome("no ticket: the mail has no sender", classification="invalid")
    customer = customers.find_or_create(
        connection, organization_id, email=mail.sender, name=mail.sender_name or None, now=now, recorded=recorded
    )
    body = mail.text or "(no text)"
    threaded = _thread(connection, organization_id, mail)
    if threaded is None:
        subject = mails.strip_reply_prefixes(mail.subject)[:255] or "(no subject)"
        ticket = tickets.create(
            connection,
            organization_id,
            subject=subject,
            customer_id=customer.id,
            channel="voice" if kind == mails.VOICEMAIL else "email",
            tags=["voicemail"] if kind == mails.VOICEMAIL else (),
            message=body,
            message_id=mail.message_id,
            attachments=attachments,
            actor_id=None,
            now=now,
            recorded=recorded,
        )
        return Outcome("new ticket", classification=kind, ticket_id=ticket.id)
    ticket, rule = threaded
    conversation = tickets.add_conversation(
        connection,
        ticket,
        author_type="customer",
        author_id=customer.id,
        body=body,
        internal=False,
        message_id=mail.message_id,
        attachments=attachments,
        now=now,
        recorded=recorded,
    )
    outcome = f"threaded by {rule}"
    if ticket.status in CLOSED:
        if tickets.reopenings_since(connection, ticket.id, now - timedelta(hours=1)) < REOPENS_PER_HOUR:
            tickets.change(
                connection,
                organization_id,
                ticket.id,
                tickets.Changes(status="open", reason=tickets.REOPENED_BY_INBOUND),
                actor_id=None,
                now=now,
                recorded=recorded,
            )
            outcome += ", reopened"
        else:
            outcome += f", not reopened (reopened {REOPENS_PER_HOUR} times within the hour)"
    return Outcome(outcome, classification=kind, ticket_id=ticket.id, conversation_id=conversation.id)


def _bounce(connection: Connection, event: Any, mail: Mail, now: datetime, recorded: list[str]) -> Outcome:
    organization_id = event.organization_id
    marked = []
    for recipient in mails.bounced_recipients(mail):
        customer = customers.mark_bouncing(connection, organization_id, recipient, now)
        if customer is not None and customer.email:
            marked.append(customer.email)
    ids = mails.bounced_message_ids(mail)
    found = tickets.tickets_of_message_ids(connection, organization_id, ids)
    ticket = None
    for message_id in ids:
        if message_id in found and (ticket := tickets.get(connection, organization_id, found[message_id])):
            break
    if ticket is None:
        return Outcome(f"bounce of no known mail; bouncing: {', '.join(marked) or 'none'}", "bounce")
    failed_to = f" to {', '.join(marked)}" if marked else ""
    note = tickets.add_conversation(
        connection,
        ticket,
        author_type="agent",
        author_id=None,
        body=f"Delivery failed{failed_to}: {mail.subject}\n\n{mail.text}"[:65536],
        internal=True,
        now=now,
        recorded=recorded,
    )
    return Outcome("bounce noted on its ticket", classification="bounce", ticket_id=ticket.id, conversation_id=note.id)
