"""Customers (contacts): one per address within an organization. A new one fires `customer.created`, a change
`customer.updated`."""

from __future__ import annotations

from datetime import datetime

import msgspec
from sqlalchemy.engine import Connection

from operations.common.actors import Actor
from operations.common.errors import Conflict, NotFound, StaleCursor
from operations.common.inputs import given_fields
from operations.common.pages import Page
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Cursor, Email, Limit, PersonName, Phone, Uuid, is_uuid
from storage.common.paging import CursorNotFound
from storage.helpdesk import customers, orders
from storage.helpdesk.customers import CustomerRecord

NOT_FOUND = "No customer with that id in this organization"


class CreateCustomer(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    email: Email
    name: PersonName
    phone: Phone | None = None


class UpdateCustomer(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Absent fields stay as they are; `phone: null` removes the phone number."""

    email: Email | msgspec.UnsetType = msgspec.UNSET
    name: PersonName | msgspec.UnsetType = msgspec.UNSET
    phone: Phone | msgspec.UnsetType | None = msgspec.UNSET


class ListCustomers(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    email: Email | None = None
    limit: Limit = 20
    cursor: Cursor | None = None


def _taken(email: str) -> Conflict:
    return Conflict(f"Another customer of this organization has the address {email.lower()}")


async def own(desk: Helpdesk, actor: Actor, customer_id: str) -> CustomerRecord:
    found = await desk.db.read(customers.get, actor.organization_id, customer_id) if is_uuid(customer_id) else None
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


async def create(desk: Helpdesk, actor: Actor, given: CreateCustomer) -> CustomerRecord:
    try:
        return await desk.changes.run(
            actor.organization_id,
            customers.create,
            actor.organization_id,
            email=given.email,
            name=given.name,
            phone=given.phone,
        )
    except customers.EmailTaken:
        raise _taken(given.email) from None


async def listing(desk: Helpdesk, actor: Actor, given: ListCustomers) -> Page[CustomerRecord]:
    try:
        found, has_more = await desk.db.read(
            customers.listing, actor.organization_id, email=given.email, limit=given.limit, cursor=given.cursor
        )
    except CursorNotFound:
        raise StaleCursor("cursor names no customer of this listing") from None
    return Page(found, has_more)


async def get(desk: Helpdesk, actor: Actor, customer_id: str) -> CustomerRecord:
    return await own(desk, actor, customer_id)


async def orders_of(desk: Helpdesk, actor: Actor, customer_id: str) -> list[orders.OrderRecord]:
    """The orders a commerce store or a marketplace told of for this customer (their facts: docs/helpdesk.md,
    "Commerce" and "Marketplace"), oldest first."""
    await own(desk, actor, customer_id)
    return await desk.db.read(orders.of_customer, actor.organization_id, customer_id)


async def change(desk: Helpdesk, actor: Actor, customer_id: str, given: UpdateCustomer) -> CustomerRecord:
    await own(desk, actor, customer_id)
    fields = given_fields(given, UpdateCustomer)
    try:
        updated = await desk.changes.run(
            actor.organization_id, customers.update_customer, actor.organization_id, customer_id, fields
        )
    except customers.EmailTaken:
        raise _taken(str(fields.get("email", ""))) from None
    if updated is None:
        raise NotFound(NOT_FOUND)
    return updated


class MergeCustomerInto(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    into_id: Uuid
    """The customer who is the same person and keeps everything."""


async def merge(desk: Helpdesk, actor: Actor, customer_id: str, given: MergeCustomerInto) -> CustomerRecord:
    """The target, now with the source's tickets, orders and ways of being reached; the source is listed nowhere
    after. Fires `customer.updated` for the target."""
    await own(desk, actor, customer_id)
    try:
        merged = await desk.changes.run(
            actor.organization_id, customers.merge, actor.organization_id, customer_id, given.into_id
        )
    except customers.MergeRefused as refused:
        raise Conflict(str(refused)) from None
    if merged is None:
        raise NotFound(NOT_FOUND)
    return merged


async def delete(desk: Helpdesk, actor: Actor, customer_id: str) -> None:
    """An admin's: the customer's personal data is erased (their name, addresses, their tickets' subjects and
    messages, their orders, the stored provider calls that name them, their search entries), as a shop's redaction
    request does, and the customer is listed nowhere after. Fires `customer.updated` (with the redacted customer)."""
    actor.require_admin("delete customers")
    await own(desk, actor, customer_id)
    if desk.blobs is not None:  # the files go first: an erasure that fails after is asked for again
        for key in await desk.db.read(orders.erasure_blobs, actor.organization_id, [customer_id]):
            await desk.blobs.delete(key)
    if not await desk.changes.run(actor.organization_id, _erase, actor.organization_id, customer_id):
        raise NotFound(NOT_FOUND)


def _erase(
    connection: Connection, organization_id: str, customer_id: str, *, now: datetime, recorded: list[str]
) -> bool:
    orders.erase(connection, organization_id, customer_ids=[customer_id], now=now, recorded=recorded)
    return customers.mark_deleted(connection, organization_id, customer_id, now)
