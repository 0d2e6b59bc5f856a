"""A marketplace's notifications (gateway/helpdesk/inbound/marketplace.py). The `Message` of a Notification is an order
or a return (docs/helpdesk.md, "Marketplace"):

- an **order** upserts the buyer (identity `marketplace` `<marketplace>:<buyer id>`, and address) and attaches the
  order's facts (helpdesk_orders), a newer `updated_at` replacing older facts;
- a **return** adds the return to its order's facts and opens a ticket (channel `marketplace`, tag `return`), the
  buyer's comment as its first message; the same return's later notifications are internal notes on that ticket.

A SubscriptionConfirmation was confirmed by the gateway before it was stored: it is recorded as such, as is an
UnsubscribeConfirmation."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.commerce import instant
from processors.helpdesk.inbound.service import Apply, Context
from storage.helpdesk import customers, orders, tickets
from storage.helpdesk.customers import CustomerRecord
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import (
    MARKETPLACE_NOTICE,
    SNS_MESSAGE,
    MarketplaceBuyer,
    MarketplaceNotice,
    MarketplaceOrder,
    MarketplaceReturn,
    SnsSubscriptionConfirmation,
    SnsUnsubscribeConfirmation,
)

IDENTITY = "marketplace"
_ORDER_FIELDS = ("marketplace", "status", "items", "total", "purchased_at", "updated_at")
_RETURN_FIELDS = ("status", "reason", "items", "updated_at")


def _recorded(outcome: str, classification: str) -> Apply:
    def apply(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
        return Outcome(outcome, classification=classification)

    return apply


def buyer(
    connection: Connection, organization_id: str, notice: MarketplaceNotice, now: datetime, recorded: list[str]
) -> CustomerRecord:
    """The order's buyer as a customer: by the marketplace's buyer id, else by address, else one for the order."""
    who = notice.buyer or MarketplaceBuyer()
    marketplace = notice.marketplace or "marketplace"
    email = who.email if who.email and "@" in who.email else None
    name = who.name.strip()[:255] if who.name and who.name.strip() else None
    if who.id is None and email:
        return customers.find_or_create(connection, organization_id, email=email, name=name, now=now, recorded=recorded)
    value = f"{marketplace}:{who.id}" if who.id is not None else f"{marketplace}:order:{notice.order_id}"
    return customers.find_or_create_by_identity(
        connection,
        organization_id,
        kind=IDENTITY,
        value=value,
        name=name or email or f"Buyer of order {notice.order_id}",
        email=email,
        now=now,
        recorded=recorded,
    )


def order_facts(notice: MarketplaceNotice, stored: dict[str, Any] | None) -> dict[str, Any]:
    """The order's facts after this notification: its own fields (an order's), the returns kept."""
    facts = dict(stored or {})
    given = msgspec.to_builtins(notice)
    if isinstance(notice, MarketplaceOrder):
        facts |= {name: given[name] for name in _ORDER_FIELDS if given[name] is not None}
    facts["source"] = "marketplace"
    if isinstance(notice, MarketplaceReturn):
        returns = dict(facts.get("returns") or {})
        returns[notice.return_id] = {name: given[name] for name in _RETURN_FIELDS if given[name]}
        facts["returns"] = returns
    return facts


async def handle(_context: Context, event: Any) -> Apply:
    message = SNS_MESSAGE.decode(event.body)
    if isinstance(message, SnsSubscriptionConfirmation):
        return _recorded("subscription confirmed", "subscription_confirmation")
    if isinstance(message, SnsUnsubscribeConfirmation):
        return _recorded("unsubscribed: the subscription is not renewed", "unsubscribe_confirmation")
    notice = MARKETPLACE_NOTICE.decode(message.message)

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        organization_id = event.organization_id
        customer = buyer(connection, organization_id, notice, now, recorded)
        stored = orders.get(connection, event.channel_id, notice.order_id)
        if isinstance(notice, MarketplaceOrder):
            before = instant(stored.details.get("updated_at")) if stored else None
            after = instant(notice.updated_at)
            if before is not None and after is not None and after < before:
                return Outcome(f"order {notice.order_id} unchanged: an older update", classification="order")
        facts = order_facts(notice, stored.details if stored else None)
        orders.save(
            connection,
            organization_id=organization_id,
            channel_id=event.channel_id,
            order_id=notice.order_id,
            customer_id=customer.id,
            details=facts,
            now=now,
        )
        if isinstance(notice, MarketplaceReturn):
            return _return(connection, event, notice, customer, now=now, recorded=recorded)
        return Outcome(f"order {notice.order_id} attached to its buyer", classification="order")

    return apply


def _return(
    connection: Connection,
    event: Any,
    notice: MarketplaceReturn,
    customer: CustomerRecord,
    *,
    now: datetime,
    recorded: list[str],
) -> Outcome:
    return_id, order_id = notice.return_id, notice.order_id
    reason = notice.reason or "no reason given"
    status = notice.status or "requested"
    thread_key = f"marketplace:{event.channel_id}:return:{return_id}"
    ticket = tickets.latest_of_thread(connection, event.organization_id, thread_key)
    if ticket is None:
        message = (notice.comment or "").strip() or f"Return {return_id} of order {order_id} ({status}): {reason}"
        made = tickets.create(
            connection,
            event.organization_id,
            subject=f"Return {return_id} for order {order_id}: {reason}"[:255],
            customer=customer,
            channel="marketplace",
            tags=["return"],
            message=message,
            thread_key=thread_key,
            actor_id=None,
            now=now,
            recorded=recorded,
        )
        return Outcome("new ticket", classification="return", ticket_id=made.id)
    note = tickets.add_conversation(
        connection,
        ticket,
        author_type="agent",
        author_id=None,
        body=f"Return {return_id} of order {order_id} is now {status}: {reason}",
        internal=True,
        now=now,
        recorded=recorded,
    )
    return Outcome(
        "noted on its return's ticket", classification="return", ticket_id=ticket.id, conversation_id=note.id
    )
