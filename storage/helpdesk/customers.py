"""The helpdesk's customers (contacts): one per address within an organization. Every change records its outgoing
webhook event (`customer.created`, `customer.updated`) in its own transaction; customers have no activity-log
aggregate (section 2.3 names none)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from storage.common.db import per_dialect
from storage.common.paging import newest_first
from storage.common.webhooks.events import record_events
from storage.helpdesk.models import Customer, CustomerIdentity, Order, Ticket
from topics.helpdesk import WEBHOOKS
from wire.ids import new_uuid

CUSTOMERS = cast(Table, Customer.__table__)
IDENTITIES = cast(Table, CustomerIdentity.__table__)
TICKETS = cast(Table, Ticket.__table__)
ORDERS = cast(Table, Order.__table__)


class MergeRefused(Exception):
    """A merge into a customer the organization does not have (409)."""


class EmailTaken(Exception):
    """Another customer of the organization has this address (409)."""


@dataclass(frozen=True, slots=True)
class CustomerRecord:
    id: str
    organization_id: str
    email: str | None
    name: str
    phone: str | None
    bouncing: bool
    created_at: datetime
    updated_at: datetime


def _customer(row: Any) -> CustomerRecord:
    return CustomerRecord(**{name: getattr(row, name) for name in CustomerRecord.__slots__})  # type: ignore[attr-defined]


def webhook_data(customer: CustomerRecord) -> dict[str, Any]:
    """`data` of customer.created and customer.updated deliveries."""
    return {
        "customerId": customer.id,
        "email": customer.email,
        "name": customer.name,
        "phone": customer.phone,
    }


_LIVE = CUSTOMERS.c.deleted_at.is_(None)
_GET = select(CUSTOMERS).where(
    CUSTOMERS.c.organization_id == bindparam("organization_id"), CUSTOMERS.c.id == bindparam("customer_id"), _LIVE
)
_BY_EMAIL = select(CUSTOMERS).where(
    CUSTOMERS.c.organization_id == bindparam("organization_id"), CUSTOMERS.c.email == bindparam("email")
)
_INSERT = insert(CUSTOMERS)
_BY_IDENTITY = (
    select(CUSTOMERS)
    .join(IDENTITIES, IDENTITIES.c.customer_id == CUSTOMERS.c.id)
    .where(
        IDENTITIES.c.organization_id == bindparam("organization_id"),
        IDENTITIES.c.kind == bindparam("kind"),
        IDENTITIES.c.value == bindparam("value"),
    )
)
_INSERT_IDENTITY = insert(IDENTITIES)
"""Statements on a ticket create's path are built once (building them per call cost most of its storage time)."""


def _identity_upsert(insert_: Any) -> Any:
    statement = insert_(IDENTITIES)
    return statement.on_conflict_do_update(
        index_elements=[IDENTITIES.c.organization_id, IDENTITIES.c.kind, IDENTITIES.c.value],
        set_={"customer_id": statement.excluded.customer_id},
    )


_ADD_IDENTITY = per_dialect(_identity_upsert)
"""An identity given to a customer, whoever held it before."""


def get(connection: Connection, organization_id: str, customer_id: str) -> CustomerRecord | None:
    row = connection.execute(_GET, {"organization_id": organization_id, "customer_id": customer_id}).first()
    return _customer(row) if row else None


def by_email(connection: Connection, organization_id: str, email: str) -> CustomerRecord | None:
    """The customer with this address, or the one a merge gave it to (an `email` identity: a customer has one
    address, a person may write from several)."""
    address = email.lower()
    row = connection.execute(_BY_EMAIL, {"organization_id": organization_id, "email": address}).first()
    if row is None:
        return by_identity(connection, organization_id, "email", address)
    return _customer(row)


def create(
    connection: Connection,
    organization_id: str,
    *,
    email: str | None,
    name: str,
    phone: str | None,
    now: datetime,
    recorded: list[str],
) -> CustomerRecord:
    """A new customer and its `customer.created` event; EmailTaken when the address has one already."""
    address = email.lower() if email is not None else None
    customer = CustomerRecord(new_uuid(), organization_id, address, name, phone, False, now, now)
    try:
        connection.execute(_INSERT, {n: getattr(customer, n) for n in CustomerRecord.__slots__})  # type: ignore[attr-defined]
    except IntegrityError:
        raise EmailTaken(email or "") from None
    created = [("customer.created", webhook_data(customer))]
    recorded += record_events(connection, WEBHOOKS, organization_id, created, now=now)
    return customer


def find_or_create(
    connection: Connection, organization_id: str, *, email: str, name: str | None, now: datetime, recorded: list[str]
) -> CustomerRecord:
    """The organization's customer with this address, made when there is none (its name: `name`, else the address's
    local part)."""
    found = by_email(connection, organization_id, email)
    if found is not None:
        return found
    local_part = email.split("@", maxsplit=1)[0]
    return create(
        connection, organization_id, email=email, name=name or local_part, phone=None, now=now, recorded=recorded
    )


def update_customer(
    connection: Connection,
    organization_id: str,
    customer_id: str,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    recorded: list[str],
) -> CustomerRecord | None:
    """Apply `changes` (email, name, phone); None when there is no such customer. A change records
    `customer.updated`; an update that changes nothing records nothing."""
    current = get(connection, organization_id, customer_id)
    if current is None:
        return None
    changes = {k: v.lower() if k == "email" else v for k, v in changes.items()}  # lower-cased before comparing
    changes = {k: v for k, v in changes.items() if getattr(current, k) != v}
    if not changes:
        return current
    try:
        connection.execute(update(CUSTOMERS).where(CUSTOMERS.c.id == customer_id).values(**changes, updated_at=now))
    except IntegrityError:
        raise EmailTaken(changes.get("email", "")) from None
    updated = get(connection, organization_id, customer_id)
    assert updated is not None
    changed = [("customer.updated", webhook_data(updated))]
    recorded += record_events(connection, WEBHOOKS, organization_id, changed, now=now)
    return updated


def listing(
    connection: Connection, organization_id: str, *, email: str | None, limit: int, cursor: str | None
) -> tuple[list[CustomerRecord], bool]:
    scope = (CUSTOMERS.c.organization_id == organization_id) & _LIVE
    if email is not None:
        scope = scope & (CUSTOMERS.c.email == email.lower())
    rows, more = newest_first(connection, CUSTOMERS, select(CUSTOMERS), scope, limit=limit, cursor=cursor)
    return [_customer(row) for row in rows], more


def by_identity(connection: Connection, organization_id: str, kind: str, value: str) -> CustomerRecord | None:
    """The customer a channel's sender id (`phone`, `whatsapp`, `messenger`, `shop`, ...) names, if known."""
    row = connection.execute(_BY_IDENTITY, {"organization_id": organization_id, "kind": kind, "value": value}).first()
    return _customer(row) if row else None


def find_or_create_by_identity(
    connection: Connection,
    organization_id: str,
    *,
    kind: str,
    value: str,
    name: str | None,
    email: str | None = None,
    phone: str | None = None,
    now: datetime,
    recorded: list[str],
) -> CustomerRecord:
    """The customer a channel's sender id names; else the one with `email`, now named by the id too; else a new one
    (named `name`, else the id). A sender's messages are processed one after the other (they share a partition), so
    two of them do not make two customers."""
    found = by_identity(connection, organization_id, kind, value)
    if found is not None:
        return found
    customer = by_email(connection, organization_id, email) if email else None
    if customer is None:
        customer = create(
            connection, organization_id, email=email, name=name or value, phone=phone, now=now, recorded=recorded
        )
    connection.execute(
        _INSERT_IDENTITY, {"organization_id": organization_id, "kind": kind, "value": value, "customer_id": customer.id}
    )
    return customer


def mark_bouncing(connection: Connection, organization_id: str, email: str, now: datetime) -> CustomerRecord | None:
    """Mail to `email` bounced: its customer (if any) is marked, so nothing automatic is sent there again."""
    row = connection.execute(_BY_EMAIL, {"organization_id": organization_id, "email": email.lower()}).first()
    customer = _customer(row) if row else None  # the customer's own address; not one a merge kept as an identity
    if customer is None or customer.bouncing:
        return customer
    connection.execute(update(CUSTOMERS).where(CUSTOMERS.c.id == customer.id).values(bouncing=True, updated_at=now))
    return get(connection, organization_id, customer.id)


def mark_deleted(connection: Connection, organization_id: str, customer_id: str, now: datetime) -> bool:
    """The customer listed nowhere from now on (their personal data erased first: orders.erase)."""
    done = connection.execute(
        update(CUSTOMERS)
        .where(CUSTOMERS.c.organization_id == organization_id, CUSTOMERS.c.id == customer_id, _LIVE)
        .values(deleted_at=now, updated_at=now)
    )
    return done.rowcount == 1


def merge(
    connection: Connection,
    organization_id: str,
    source_id: str,
    target_id: str,
    *,
    now: datetime,
    recorded: list[str],
) -> CustomerRecord | None:
    """Two customers who are one person become `target`: the source's tickets, orders and identities (how channels
    name them) move to it, its address and phone fill the target's where it has none, and the source is listed nowhere
    after. Records `customer.updated` for the target. None when the source is not a live customer of the organization;
    MergeRefused when the target is not another one."""
    source, target = get(connection, organization_id, source_id), get(connection, organization_id, target_id)
    if source is None:
        return None
    if target is None or source.id == target.id:
        raise MergeRefused("into_id names no other customer of this organization")
    connection.execute(update(TICKETS).where(TICKETS.c.customer_id == source.id).values(customer_id=target.id))
    connection.execute(update(ORDERS).where(ORDERS.c.customer_id == source.id).values(customer_id=target.id))
    connection.execute(
        update(IDENTITIES)
        .where(IDENTITIES.c.organization_id == organization_id, IDENTITIES.c.customer_id == source.id)
        .values(customer_id=target.id)
    )
    connection.execute(
        update(CUSTOMERS).where(CUSTOMERS.c.id == source.id).values(email=None, deleted_at=now, updated_at=now)
    )
    filled = {
        name: value
        for name, value in (("email", source.email), ("phone", source.phone))
        if value is not None and getattr(target, name) is None
    }
    if source.email is not None and "email" not in filled:  # mail from it still finds the person
        values = {"organization_id": organization_id, "kind": "email", "value": source.email}
        connection.execute(_ADD_IDENTITY[connection.dialect.name], values | {"customer_id": target.id})
    connection.execute(update(CUSTOMERS).where(CUSTOMERS.c.id == target.id).values(**filled, updated_at=now))
    merged = get(connection, organization_id, target.id)
    assert merged is not None
    recorded += record_events(
        connection, WEBHOOKS, organization_id, [("customer.updated", webhook_data(merged))], now=now
    )
    return merged
