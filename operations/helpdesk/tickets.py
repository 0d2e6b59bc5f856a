"""Tickets: open one, list them (filtered, paged), read one, change it. Every change writes its activity events and
webhook events in its own unit of work (storage/helpdesk/tickets.py says which); a person's change carries them as its
actor."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec
from sqlalchemy.engine import Connection

from operations.common.actors import Actor
from operations.common.errors import Conflict, Invalid, NotFound, StaleCursor
from operations.common.inputs import given_fields
from operations.common.pages import Page
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import (
    Body,
    Channel,
    Cursor,
    Email,
    Limit,
    PersonName,
    Priority,
    Status,
    Subject,
    Tag,
    Tags,
    Uuid,
    is_uuid,
)
from storage.common.paging import CursorNotFound
from storage.common.secrets import Cipher
from storage.helpdesk import customers, outbound, tickets
from storage.helpdesk.tickets import TicketRecord

NOT_FOUND = "No ticket with that id in this organization"
UNKNOWN_ASSIGNEE = "assignee_id names no active member of this organization"


class CreateTicket(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The customer by `customer_id`, or by `customer_email` (made when new, named `customer_name`)."""

    one_of_required: ClassVar = (("customer_id",), ("customer_email",))
    dependent_required: ClassVar = {"customer_name": ("customer_email",)}

    subject: Subject
    customer_id: Uuid | msgspec.UnsetType = msgspec.UNSET
    customer_email: Email | msgspec.UnsetType = msgspec.UNSET
    customer_name: PersonName | msgspec.UnsetType = msgspec.UNSET
    message: Body | None = None
    """The customer's first message, stored as the ticket's first reply."""
    priority: Priority = "normal"
    status: Status = "open"
    channel: Channel = "api"
    assignee_id: Uuid | None = None
    tags: Tags = msgspec.field(default_factory=list)


class UpdateTicket(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Absent fields stay as they are; `assignee_id: null` unassigns; `tags` replaces the tags."""

    subject: Subject | msgspec.UnsetType = msgspec.UNSET
    status: Status | msgspec.UnsetType = msgspec.UNSET
    priority: Priority | msgspec.UnsetType = msgspec.UNSET
    assignee_id: Uuid | msgspec.UnsetType | None = msgspec.UNSET
    tags: Tags | msgspec.UnsetType = msgspec.UNSET


class ListTickets(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Filters combine; `cursor` is the `next_cursor` of the previous page."""

    status: Status | None = None
    priority: Priority | None = None
    assignee_id: Uuid | None = None
    customer_id: Uuid | None = None
    tag: Tag | None = None
    limit: Limit = 20
    cursor: Cursor | None = None


class TicketId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Uuid


class MergeTicketInto(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    into_id: Uuid
    """The ticket that takes the merged one's conversations and stays."""


async def own(desk: Helpdesk, actor: Actor, ticket_id: str) -> TicketRecord:
    """The organization's ticket (NotFound for another's, a deleted one, or an id that names none)."""
    ticket = await desk.db.read(tickets.get, actor.organization_id, ticket_id) if is_uuid(ticket_id) else None
    if ticket is None:
        raise NotFound(NOT_FOUND)
    return ticket


async def open_ticket(desk: Helpdesk, actor: Actor, given: CreateTicket) -> TicketRecord:
    """A ticket numbered next in the organization, for a customer by id or by address (made when new)."""
    by_id, by_email = given.customer_id is not msgspec.UNSET, given.customer_email is not msgspec.UNSET
    if by_id == by_email:
        raise Invalid("Give the customer as customer_id or as customer_email (one of them)")
    if by_id and given.customer_name is not msgspec.UNSET:
        raise Invalid("customer_name names a new customer: give it with customer_email")
    for attempt in range(2):  # made again once when a racing create made its new customer first (the second finds it)
        try:
            return await desk.changes.run(
                actor.organization_id,
                tickets.create,
                actor.organization_id,
                subject=given.subject,
                customer_id=_given(given.customer_id),
                customer_email=_given(given.customer_email),
                customer_name=_given(given.customer_name),
                priority=given.priority,
                status=given.status,
                channel=given.channel,
                assignee_id=given.assignee_id,
                tags=given.tags,
                message=given.message,
                actor_id=actor.user_id,
            )
        except customers.EmailTaken:
            if attempt:
                raise
        except tickets.UnknownCustomer:
            raise NotFound("customer_id names no customer of this organization") from None
        except tickets.UnknownAssignee:
            raise NotFound(UNKNOWN_ASSIGNEE) from None
    raise AssertionError("unreachable")


async def listing(desk: Helpdesk, actor: Actor, given: ListTickets) -> Page[TicketRecord]:
    try:
        found, has_more = await desk.db.read(
            tickets.listing,
            actor.organization_id,
            status=given.status,
            priority=given.priority,
            assignee_id=given.assignee_id,
            customer_id=given.customer_id,
            tag=given.tag,
            limit=given.limit,
            cursor=given.cursor,
        )
    except CursorNotFound:
        raise StaleCursor("cursor names no ticket of this listing") from None
    return Page(found, has_more)


async def inbox(
    desk: Helpdesk, actor: Actor, view: tickets.InboxView, *, limit: int = 25, cursor: str | None = None
) -> Page[TicketRecord]:
    """A member's inbox view (storage/helpdesk/tickets.py, INBOX_VIEWS), newest first."""
    try:
        found, has_more = await desk.db.read(
            tickets.inbox, actor.organization_id, actor.user_id, view, limit=limit, cursor=cursor
        )
    except CursorNotFound:
        raise StaleCursor("cursor names no ticket of this view") from None
    return Page(found, has_more)


async def inbox_counts(desk: Helpdesk, actor: Actor) -> dict[tickets.InboxView, int]:
    """How many tickets each of the member's inbox views holds."""
    return await desk.db.read(tickets.inbox_counts, actor.organization_id, actor.user_id)


async def get(desk: Helpdesk, actor: Actor, ticket_id: str) -> TicketRecord:
    return await own(desk, actor, ticket_id)


async def change(desk: Helpdesk, actor: Actor, ticket_id: str, given: UpdateTicket) -> TicketRecord:
    """Apply the given fields; a change that changes nothing writes nothing."""
    await own(desk, actor, ticket_id)
    fields = given_fields(given, UpdateTicket)
    if "assignee_id" in fields and fields["assignee_id"] is None:
        fields["assignee_id"] = ""  # storage's "remove the assignee"
    try:
        ticket = await desk.changes.run(
            actor.organization_id,
            _change,
            desk.cipher,
            actor.organization_id,
            ticket_id,
            tickets.Changes(**fields),
            actor_id=actor.user_id,
        )
    except tickets.UnknownAssignee:
        raise NotFound(UNKNOWN_ASSIGNEE) from None
    if ticket is None:
        raise NotFound(NOT_FOUND)
    return ticket


def _change(
    connection: Connection,
    cipher: Cipher,
    organization_id: str,
    ticket_id: str,
    changes: tickets.Changes,
    **context: Any,
) -> TicketRecord | None:
    """The change, and when it resolves the ticket, the resolved notice of the email channel its reply would go
    through (outbound.automatic: if that channel sends one, and the customer may get it), in one unit of work."""
    if changes.status != "resolved":
        return tickets.change(connection, organization_id, ticket_id, changes, **context)
    before = tickets.get(connection, organization_id, ticket_id)
    ticket = tickets.change(connection, organization_id, ticket_id, changes, **context)
    if ticket is None or before is None or before.status == "resolved":
        return ticket
    try:
        way = outbound.route(connection, cipher, ticket, context["now"])
    except outbound.NoRoute:
        return ticket
    if way.medium == "email":
        outbound.automatic(
            connection,
            ticket,
            "resolved_notice",
            channel_id=way.channel_id,
            recorded=context["recorded"],
            now=context["now"],
        )
    return ticket


def _given(value: str | msgspec.UnsetType) -> str | None:
    return None if value is msgspec.UNSET else value


async def merge(desk: Helpdesk, actor: Actor, ticket_id: str, given: MergeTicketInto) -> TicketRecord:
    """The source closed and merged into the target (its conversations are the target's from now on, and what would
    thread to it threads to the target); returns the target."""
    await own(desk, actor, ticket_id)
    try:
        merged = await desk.changes.run(
            actor.organization_id,
            tickets.merge,
            actor.organization_id,
            ticket_id,
            given.into_id,
            actor_id=actor.user_id,
        )
    except tickets.MergeRefused as refused:
        raise Conflict(str(refused)) from None
    if merged is None:
        raise NotFound(NOT_FOUND)
    return merged[1]


async def delete(desk: Helpdesk, actor: Actor, ticket_id: str) -> None:
    """An admin's: the ticket is listed nowhere and absent from then on; its events stay readable to admins."""
    actor.require_admin("delete tickets")
    deleted = is_uuid(ticket_id) and await desk.db.write(
        tickets.delete, actor.organization_id, ticket_id, actor_id=actor.user_id, now=desk.clock()
    )
    if not deleted:
        raise NotFound(NOT_FOUND)
