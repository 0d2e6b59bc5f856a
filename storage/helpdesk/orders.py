"""Orders (a shop's or a marketplace's, as their events tell them), a customer's data export, and the erasure of
customers' personal data (docs/helpdesk.md, "Commerce"): what the privacy topics of a shop ask for.

Erasure keeps the records the organization needs (its tickets, their numbers and states, the customer as "Redacted
customer") and removes what is personal: the customer's address, name, phone and identities, their orders, what
their tickets and conversations say (subjects, bodies, attachments), the activity and webhook events that repeat it,
the raw inbound events that carried it (found by the tickets they became, or by the customer's address or phone in
their bytes), the mail kept for the address, the messages of the replies to them (a queued one is never sent), and,
outside the transaction, the blobs: attachments and exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, Text, bindparam, delete, false, func, insert, or_, select, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.engine import Connection

from storage.common import later, mail
from storage.common.webhooks.events import record_events
from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from storage.helpdesk import customers, events, inbound
from storage.helpdesk.customers import CUSTOMERS, IDENTITIES
from storage.helpdesk.keys import SERVICE
from storage.helpdesk.models import Call, Order
from storage.helpdesk.tickets import CONVERSATIONS, OUTBOUND, TICKETS
from topics.helpdesk import WEBHOOKS
from wire.ids import new_uuid

ORDERS = cast(Table, Order.__table__)
CALLS = cast(Table, Call.__table__)
REDACTED = "(redacted)"
REDACTED_NAME = "Redacted customer"
DATA_REQUEST = "data_request"
"""The classification of a privacy data request's inbound event, whose outcome names its export."""
EXPORT_OUTCOME = "export stored: "
_EXPORT_KEY = re.compile(r"export stored: (\S+)")
MIN_NEEDLE = 5
"""A value searched for in raw bytes is at least this long (shorter ones would match unrelated events)."""
_KEPT_KEYS = ("customerId", "ticketId", "ticketNumber", "conversationId", "status", "priority")
"""What a scrubbed webhook event's `data` keeps: ids and states, nothing a person wrote or is."""


@dataclass(frozen=True, slots=True)
class OrderRecord:
    id: str
    organization_id: str
    channel_id: str
    customer_id: str | None
    order_id: str
    details: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def _order(row: Any) -> OrderRecord:
    return OrderRecord(**{name: getattr(row, name) for name in OrderRecord.__slots__})  # type: ignore[attr-defined]


_GET = select(ORDERS).where(ORDERS.c.channel_id == bindparam("channel_id"), ORDERS.c.order_id == bindparam("order_id"))


def get(connection: Connection, channel_id: str, order_id: str) -> OrderRecord | None:
    row = connection.execute(_GET, {"channel_id": channel_id, "order_id": order_id}).first()
    return _order(row) if row else None


def save(
    connection: Connection,
    *,
    organization_id: str,
    channel_id: str,
    order_id: str,
    customer_id: str | None,
    details: dict[str, Any],
    now: datetime,
) -> OrderRecord:
    """The channel's order with these facts, made or replaced (its customer kept when the event names none). One
    order's events are processed one after the other (they share a partition)."""
    current = get(connection, channel_id, order_id)
    if current is None:
        record = OrderRecord(new_uuid(), organization_id, channel_id, customer_id, order_id, details, now, now)
        connection.execute(insert(ORDERS).values({n: getattr(record, n) for n in OrderRecord.__slots__}))  # type: ignore[attr-defined]
        return record
    customer_id = customer_id or current.customer_id
    connection.execute(
        update(ORDERS).where(ORDERS.c.id == current.id).values(customer_id=customer_id, details=details, updated_at=now)
    )
    return OrderRecord(current.id, organization_id, channel_id, customer_id, order_id, details, current.created_at, now)


def of_customer(connection: Connection, organization_id: str, customer_id: str) -> list[OrderRecord]:
    rows = connection.execute(
        select(ORDERS)
        .where(ORDERS.c.organization_id == organization_id, ORDERS.c.customer_id == customer_id)
        .order_by(ORDERS.c.created_at, ORDERS.c.id)
    )
    return [_order(row) for row in rows]


# Exports ------------------------------------------------------------------------------------------------------------


def export_key(organization_id: str, customer_id: str, event_id: str) -> str:
    """Where the export a data request (inbound event `event_id`) made of a customer's data is kept."""
    return f"helpdesk/{organization_id}/exports/{customer_id}/{event_id}.json"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def customer_data(connection: Connection, organization_id: str, customer_id: str) -> dict[str, Any] | None:
    """Everything the organization holds about one customer, as JSON: the customer, how channels name them, their
    orders, and their tickets with every conversation. None when there is no such customer."""
    customer = customers.get(connection, organization_id, customer_id)
    if customer is None:
        return None
    identities = connection.execute(
        select(IDENTITIES.c.kind, IDENTITIES.c.value).where(
            IDENTITIES.c.organization_id == organization_id, IDENTITIES.c.customer_id == customer_id
        )
    )
    ticket_rows = list(
        connection.execute(
            select(TICKETS)
            .where(TICKETS.c.organization_id == organization_id, TICKETS.c.customer_id == customer_id)
            .order_by(TICKETS.c.created_at, TICKETS.c.id)
        )
    )
    conversations: dict[str, list[dict[str, Any]]] = {row.id: [] for row in ticket_rows}
    if ticket_rows:
        for row in connection.execute(
            select(CONVERSATIONS)
            .where(CONVERSATIONS.c.ticket_id.in_(list(conversations)))
            .order_by(CONVERSATIONS.c.created_at, CONVERSATIONS.c.id)
        ):
            conversations[row.ticket_id].append(
                {
                    "id": row.id,
                    "author_type": row.author_type,
                    "internal": row.internal,
                    "body": row.body,
                    "attachments": [
                        {key: value for key, value in attachment.items() if key != "blob"}
                        for attachment in row.attachments or []
                    ],
                    "created_at": _iso(row.created_at),
                }
            )
    return {
        "customer": {
            "id": customer.id,
            "email": customer.email,
            "name": customer.name,
            "phone": customer.phone,
            "bouncing": customer.bouncing,
            "created_at": _iso(customer.created_at),
            "updated_at": _iso(customer.updated_at),
        },
        "identities": [{"kind": row.kind, "value": row.value} for row in identities],
        "orders": [
            {"order_id": order.order_id, "details": order.details, "created_at": _iso(order.created_at)}
            for order in of_customer(connection, organization_id, customer_id)
        ],
        "tickets": [
            {
                "id": row.id,
                "number": row.number,
                "subject": row.subject,
                "status": row.status,
                "channel": row.channel,
                "created_at": _iso(row.created_at),
                "conversations": conversations[row.id],
            }
            for row in ticket_rows
        ],
    }


def exports_of(connection: Connection, organization_id: str, customer_ids: Sequence[str]) -> list[str]:
    """The blob keys of the exports made of these customers' data (their data requests' outcomes name them)."""
    if not customer_ids:
        return []
    rows = connection.scalars(
        select(inbound.EVENTS.c.outcome).where(
            inbound.EVENTS.c.organization_id == organization_id,
            inbound.EVENTS.c.classification == DATA_REQUEST,
            inbound.EVENTS.c.outcome.is_not(None),
        )
    )
    wanted = {f"/exports/{customer_id}/" for customer_id in customer_ids}
    keys = []
    for outcome in rows:
        found = _EXPORT_KEY.search(outcome or "")
        if found and any(part in found.group(1) for part in wanted):
            keys.append(found.group(1))
    return keys


# Erasure ------------------------------------------------------------------------------------------------------------


def shop_customers(connection: Connection, organization_id: str, identity_kind: str, prefix: str) -> list[str]:
    """The customers a shop (or a marketplace) named: identities of `identity_kind` whose value starts `prefix`."""
    escaped = prefix.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return list(
        dict.fromkeys(
            connection.scalars(
                select(IDENTITIES.c.customer_id).where(
                    IDENTITIES.c.organization_id == organization_id,
                    IDENTITIES.c.kind == identity_kind,
                    IDENTITIES.c.value.like(f"{escaped}%", escape="/"),
                )
            )
        )
    )


def _ticket_ids(connection: Connection, organization_id: str, customer_ids: Sequence[str]) -> list[str]:
    if not customer_ids:
        return []
    return list(
        connection.scalars(
            select(TICKETS.c.id).where(
                TICKETS.c.organization_id == organization_id, TICKETS.c.customer_id.in_(list(customer_ids))
            )
        )
    )


def _written_by(connection: Connection, organization_id: str, customer_ids: Sequence[str]) -> list[str]:
    """The conversations these customers wrote, on whichever ticket they are now."""
    if not customer_ids:
        return []
    return list(
        connection.scalars(
            select(CONVERSATIONS.c.id).where(
                CONVERSATIONS.c.organization_id == organization_id,
                CONVERSATIONS.c.author_type == "customer",
                CONVERSATIONS.c.author_id.in_(list(customer_ids)),
            )
        )
    )


def erasure_blobs(connection: Connection, organization_id: str, customer_ids: Sequence[str]) -> list[str]:
    """The blobs that hold these customers' data: their conversations' attachments (those on their tickets, and
    their own messages wherever they are) and their exports. Read before the erasure, and deleted outside its
    transaction."""
    keys = exports_of(connection, organization_id, customer_ids)
    ticket_ids = _ticket_ids(connection, organization_id, customer_ids)
    written = _written_by(connection, organization_id, customer_ids)
    if ticket_ids or written:
        for attachments in connection.scalars(
            select(CONVERSATIONS.c.attachments).where(
                or_(CONVERSATIONS.c.ticket_id.in_(ticket_ids), CONVERSATIONS.c.id.in_(written))
            )
        ):
            keys.extend(str(item["blob"]) for item in attachments or [] if item.get("blob"))
    return list(dict.fromkeys(keys))


def _escaped(needle: str) -> str:
    return "%" + needle.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


def _mentions(connection: Connection, column: Any, needles: Iterable[str], *, binary: bool) -> ColumnElement[bool]:
    """`column` (raw bytes, or JSON) contains one of `needles`, regardless of ASCII case."""
    clauses = []
    for needle in needles:
        if connection.dialect.name == "postgresql":
            text = func.encode(column, "escape") if binary else sql_cast(column, Text)
            clauses.append(text.ilike(_escaped(needle), escape="/"))
        else:  # SQLite's LIKE ignores ASCII case
            clauses.append(sql_cast(column, Text).like(_escaped(needle), escape="/"))
    return or_(false(), *clauses)


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure changed, in counts (nothing personal)."""

    customers: int
    tickets: int
    orders: int
    inbound_events: int
    webhook_events: int


def erase(
    connection: Connection,
    organization_id: str,
    *,
    customer_ids: Sequence[str],
    needles: Iterable[str] = (),
    channel_id: str | None = None,
    order_ids: Sequence[str] = (),
    whole_channel: bool = False,
    now: datetime,
    recorded: list[str],
) -> Erased:
    """Erase the personal data of `customer_ids` within the organization (see the module's docstring). `needles`
    (addresses, phone numbers the request named) are searched for besides the customers' own; `order_ids` of
    `channel_id` are deleted whoever they belong to; `whole_channel`: every order and every raw event of the channel
    goes (a shop's redaction)."""
    later.flush(connection)  # the activity and webhook events this transaction wrote are scrubbed too
    customer_ids = list(dict.fromkeys(customer_ids))
    found = list(connection.execute(select(CUSTOMERS).where(CUSTOMERS.c.id.in_(customer_ids)))) if customer_ids else []
    customer_ids = [row.id for row in found if row.organization_id == organization_id]
    wanted = {needle.strip() for needle in needles if needle and len(needle.strip()) >= MIN_NEEDLE}
    for row in found:
        wanted.update(value for value in (row.email, row.phone) if value and len(value) >= MIN_NEEDLE)
    if customer_ids:
        wanted.update(
            value
            for kind, value in connection.execute(
                select(IDENTITIES.c.kind, IDENTITIES.c.value).where(
                    IDENTITIES.c.organization_id == organization_id, IDENTITIES.c.customer_id.in_(customer_ids)
                )
            )
            if kind in ("email", "phone", "sms", "whatsapp") and len(value) >= MIN_NEEDLE
        )
    ticket_ids = _ticket_ids(connection, organization_id, customer_ids)
    # Their replies' messages first: a queued one is never sent, a sent one's copy goes. First, because deleting them
    # waits for a reply sender recording a send of theirs (it holds their rows while it writes the `delivery_changed`
    # event naming the recipient), so that its event is committed before the events below are scrubbed; a sender
    # that comes later finds the rows gone and records nothing (storage/helpdesk/outbound.py `record`).
    sent_to = [*([OUTBOUND.c.ticket_id.in_(ticket_ids)] if ticket_ids else []), OUTBOUND.c.recipient.in_(wanted)]
    connection.execute(delete(OUTBOUND).where(OUTBOUND.c.organization_id == organization_id, or_(*sent_to)))
    written = _written_by(connection, organization_id, customer_ids)
    if written:  # their messages on tickets no longer theirs (a merge moved them)
        connection.execute(
            update(CONVERSATIONS).where(CONVERSATIONS.c.id.in_(written)).values(body=REDACTED, attachments=[])
        )
        connection.execute(
            update(events.EVENTS)
            .where(
                events.EVENTS.c.organization_id == organization_id,
                events.EVENTS.c.aggregate_type == "conversation",
                events.EVENTS.c.aggregate_id.in_(written),
            )
            .values(event_data={"redacted": True})
        )

    if ticket_ids:
        connection.execute(
            update(CONVERSATIONS).where(CONVERSATIONS.c.ticket_id.in_(ticket_ids)).values(body=REDACTED, attachments=[])
        )
        connection.execute(
            update(TICKETS)
            .where(TICKETS.c.id.in_(ticket_ids))
            .values(subject=REDACTED, thread_key=None, updated_at=now)
        )
        connection.execute(
            update(events.EVENTS)
            .where(events.EVENTS.c.organization_id == organization_id, events.EVENTS.c.ticket_id.in_(ticket_ids))
            .values(event_data={"redacted": True})
        )
        connection.execute(
            update(CALLS)
            .where(CALLS.c.organization_id == organization_id, CALLS.c.ticket_id.in_(ticket_ids))
            .values(details={}, transcription=None, recording_url=None)
        )

    orders_gone = 0
    if customer_ids:
        orders_gone += connection.execute(
            delete(ORDERS).where(ORDERS.c.organization_id == organization_id, ORDERS.c.customer_id.in_(customer_ids))
        ).rowcount
    if channel_id is not None and (whole_channel or order_ids):
        scope = ORDERS.c.channel_id == channel_id
        if not whole_channel:
            scope = scope & ORDERS.c.order_id.in_(list(order_ids))
        orders_gone += connection.execute(delete(ORDERS).where(scope)).rowcount

    emails = [row.email for row in found if row.email]
    mail.forget_mails(connection, SERVICE, emails)
    if customer_ids:
        connection.execute(
            delete(IDENTITIES).where(
                IDENTITIES.c.organization_id == organization_id, IDENTITIES.c.customer_id.in_(customer_ids)
            )
        )
        connection.execute(
            update(CUSTOMERS)
            .where(CUSTOMERS.c.id.in_(customer_ids))
            .values(email=None, name=REDACTED_NAME, phone=None, bouncing=False, updated_at=now)
        )
    inbound_gone = _erase_inbound(
        connection, organization_id, wanted, ticket_ids=ticket_ids, channel_id=channel_id, whole_channel=whole_channel
    )
    hooks_gone = _scrub_webhook_events(connection, organization_id, wanted | set(customer_ids) | set(ticket_ids))
    updates = []
    for customer_id in customer_ids:  # after the scrub: these events say only that the customer is redacted
        redacted = customers.get(connection, organization_id, customer_id)
        assert redacted is not None
        updates.append(("customer.updated", customers.webhook_data(redacted)))
    recorded += record_events(connection, WEBHOOKS, organization_id, updates, now=now)
    return Erased(len(customer_ids), len(ticket_ids), orders_gone, inbound_gone, hooks_gone)


def _erase_inbound(
    connection: Connection,
    organization_id: str,
    needles: set[str],
    *,
    ticket_ids: Sequence[str],
    channel_id: str | None,
    whole_channel: bool,
) -> int:
    """Raw events that carried the data: the body emptied, the details and the sender in the partition key gone, an
    outcome that names the person replaced. An erased event still pending fails when processed: it cannot bring the
    data back."""
    inbound_events = inbound.EVENTS.c
    scope = or_(
        false(),
        _mentions(connection, inbound_events.body, needles, binary=True),
        _mentions(connection, inbound_events.details, needles, binary=False),
        _mentions(connection, inbound_events.outcome, needles, binary=False),
        _mentions(connection, inbound_events.partition_key, needles, binary=False),
    )
    if ticket_ids:
        scope = or_(scope, inbound_events.ticket_id.in_(list(ticket_ids)))
    if whole_channel and channel_id is not None:
        scope = or_(scope, inbound_events.channel_id == channel_id)
    rows = list(
        connection.execute(
            select(inbound_events.id, inbound_events.channel_id, inbound_events.outcome).where(
                inbound_events.organization_id == organization_id, scope
            )
        )
    )
    for row in rows:
        outcome = row.outcome
        if outcome and any(needle.lower() in outcome.lower() for needle in needles):
            outcome = f"{REDACTED} {(row.outcome or '').split(':', 1)[0]}"
        connection.execute(
            update(inbound.EVENTS)
            .where(inbound_events.id == row.id)
            .values(body=b"", details={"redacted": True}, partition_key=f"{row.channel_id}:redacted", outcome=outcome)
        )
    return len(rows)


def _scrub_webhook_events(connection: Connection, organization_id: str, needles: set[str]) -> int:
    """The organization's outgoing webhook events that name the customer, their tickets or their conversations keep
    only ids and states (a delivery still due sends that)."""
    table = WEBHOOK_EVENTS
    rows = list(
        connection.execute(
            select(table.c.id, table.c.body).where(
                table.c.service == WEBHOOKS.service,
                table.c.owner_id == organization_id,
                _mentions(connection, table.c.body, needles, binary=True),
            )
        )
    )
    for row in rows:
        try:
            body = json.loads(row.body)
        except ValueError:
            body = {}
        if isinstance(body, dict) and isinstance(body.get("data"), dict):
            kept = {key: value for key, value in body["data"].items() if key in _KEPT_KEYS}
            body["data"] = kept | {"redacted": True}
        else:
            body = {"redacted": True}
        connection.execute(
            update(table).where(table.c.id == row.id).values(body=json.dumps(body, separators=(",", ":")).encode())
        )
    return len(rows)
