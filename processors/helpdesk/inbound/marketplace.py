"""A marketplace's notifications (gateway/helpdesk/inbound/marketplace.py). The `Message` of a Notification is an order
or a return (docs/helpdesk.md, "Marketplace"):

- an **order** upserts the buyer (identity `marketplace` `<marketplace>:<buyer id>`, and address) and attaches the
  order's facts (helpdesk_orders), a newer `updated_at` replacing older facts;
- a **return** adds the return to its order's facts and opens a ticket (channel `marketplace`, tag `return`), the
  buyer's comment as its first message; the same return's later notifications are internal notes on that ticket.

A SubscriptionConfirmation was confirmed by the gateway before it was stored: it is recorded as such, as is an
UnsubscribeConfirmation."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.commerce import instant
from processors.helpdesk.inbound.service import Apply, Context, failed
from storage.helpdesk import customers, orders, tickets
from storage.helpdesk.customers import CustomerRecord
from storage.helpdesk.inbound import Outcome

IDENTITY = "marketplace"
_ORDER_FIELDS = ("marketplace", "status", "items", "total", "purchased_at", "updated_at")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _recorded(outcome: str, classification: str) -> Apply:
    def apply(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
        return Outcome(outcome, classification=classification)

    return apply


def buyer(
    connection: Connection, organization_id: str, content: dict[str, Any], now: datetime, recorded: list[str]
) -> CustomerRecord:
    """The order's buyer as a customer: by the marketplace's buyer id, else by address, else one for the order."""
    who = _object(content.get("buyer"))
    marketplace = str(content.get("marketplace") or "marketplace")
    email = who.get("email") if isinstance(who.get("email"), str) and "@" in who["email"] else None
    name = str(who["name"]).strip()[:255] if isinstance(who.get("name"), str) and who["name"].strip() else None
    if who.get("id") is None and email:
        return customers.find_or_create(connection, organization_id, email=email, name=name, now=now, recorded=recorded)
    value = f"{marketplace}:{who['id']}" if who.get("id") is not None else f"{marketplace}:order:{content['order_id']}"
    return customers.find_or_create_by_identity(
        connection,
        organization_id,
        kind=IDENTITY,
        value=value,
        name=name or email or f"Buyer of order {content['order_id']}",
        email=email,
        now=now,
        recorded=recorded,
    )


def order_facts(content: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """The order's facts after this notification: its own fields (an order's), the returns kept."""
    facts = dict(stored or {})
    if content["type"] == "order":
        facts |= {name: content[name] for name in _ORDER_FIELDS if content.get(name) is not None}
    facts["source"] = "marketplace"
    if content["type"] == "return":
        returns = dict(facts.get("returns") or {})
        returns[content["return_id"]] = {
            name: content.get(name) for name in ("status", "reason", "items", "updated_at") if content.get(name)
        }
        facts["returns"] = returns
    return facts


async def handle(_context: Context, event: Any) -> Apply:
    message = json.loads(event.body)
    kind = _object(message).get("Type")
    if kind == "SubscriptionConfirmation":
        return _recorded("subscription confirmed", "subscription_confirmation")
    if kind == "UnsubscribeConfirmation":
        return _recorded("unsubscribed: the subscription is not renewed", "unsubscribe_confirmation")
    if kind != "Notification":
        return failed("not an SNS message")
    content = json.loads(message["Message"])
    if not isinstance(content, dict) or content.get("type") not in ("order", "return") or not content.get("order_id"):
        return failed("the Message is neither an order nor a return")
    order_id = str(content["order_id"])

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        organization_id = event.organization_id
        customer = buyer(connection, organization_id, content, now, recorded)
        stored = orders.get(connection, event.channel_id, order_id)
        if content["type"] == "order":
            before = instant(stored.details.get("updated_at")) if stored else None
            after = instant(content.get("updated_at"))
            if before is not None and after is not None and after < before:
                return Outcome(f"order {order_id} unchanged: an older update", classification="order")
        facts = order_facts(content, stored.details if stored else None)
        orders.save(
            connection,
            organization_id=organization_id,
            channel_id=event.channel_id,
            order_id=order_id,
            customer_id=customer.id,
            details=facts,
            now=now,
        )
        if content["type"] == "order":
            return Outcome(f"order {order_id} attached to its buyer", classification="order")
        return _return(connection, event, content, customer, now=now, recorded=recorded)

    return apply


def _return(
    connection: Connection,
    event: Any,
    content: dict[str, Any],
    customer: CustomerRecord,
    *,
    now: datetime,
    recorded: list[str],
) -> Outcome:
    return_id, order_id = str(content["return_id"]), str(content["order_id"])
    reason = str(content.get("reason") or "no reason given")
    status = str(content.get("status") or "requested")
    thread_key = f"marketplace:{event.channel_id}:return:{return_id}"
    ticket = tickets.latest_of_thread(connection, event.organization_id, thread_key)
    if ticket is None:
        comment = content.get("comment")
        message = (
            comment.strip() if isinstance(comment, str) else ""
        ) or f"Return {return_id} of order {order_id} ({status}): {reason}"
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
