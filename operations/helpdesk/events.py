"""The activity log (sections 2.3, 4.3, 6.2) as a member or a key reads it: an entity's events, a ticket's with its
conversations', one event; newest first, the next page after the id of the last event returned. An entity of another
organization is refused as `elsewhere` (the procedures' FORBIDDEN, section 7; REST's 404)."""

from __future__ import annotations

from typing import Literal

import msgspec

from operations.common.actors import Actor
from operations.common.errors import NotFound, StaleCursor
from operations.common.pages import Page
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Cursor, Limit, Uuid, is_uuid
from storage.common.paging import CursorNotFound
from storage.helpdesk import accounts, events, tickets
from storage.helpdesk.events import EventRecord

AggregateType = Literal["ticket", "conversation", "user", "organization"]


class ListEvents(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    aggregate_type: AggregateType
    aggregate_id: Uuid
    limit: Limit = 50
    cursor: Cursor | None = None


class ListTicketEvents(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    ticket_id: Uuid
    limit: Limit = 50
    cursor: Cursor | None = None


async def _owners(desk: Helpdesk, aggregate_type: str, aggregate_id: str) -> set[str | None]:
    """The organizations an entity belongs to, as far as it can be told (empty: no trace of it anywhere)."""
    if aggregate_type == "organization":
        return {aggregate_id}
    if aggregate_type == "user":
        user = await desk.db.read(accounts.user_by_id, aggregate_id)
        return {user.organization_id} if user is not None else set()
    return set(await desk.db.read(events.organizations_of, aggregate_type, aggregate_id))


async def _readable(desk: Helpdesk, actor: Actor, aggregate_type: str, aggregate_id: str) -> None:
    """The entity is the organization's; a deleted ticket's (or its conversations') events are its admins' alone."""
    owners = await _owners(desk, aggregate_type, aggregate_id)
    missing = NotFound(f"No {aggregate_type} with that id in this organization", elsewhere=bool(owners))
    if actor.organization_id not in owners:
        raise missing
    deletable = aggregate_type in ("ticket", "conversation")
    if (
        deletable
        and not actor.is_admin
        and await desk.db.read(tickets.is_deleted, actor.organization_id, aggregate_type, aggregate_id)
    ):
        raise missing


async def of_aggregate(desk: Helpdesk, actor: Actor, given: ListEvents) -> Page[EventRecord]:
    await _readable(desk, actor, given.aggregate_type, given.aggregate_id)
    try:
        page = await desk.db.read(
            events.of_aggregate,
            actor.organization_id,
            given.aggregate_type,
            given.aggregate_id,
            limit=given.limit,
            cursor=given.cursor,
        )
    except CursorNotFound:
        raise StaleCursor("cursor names no event of this listing") from None
    return Page(page.events, page.has_more)


async def of_ticket(desk: Helpdesk, actor: Actor, given: ListTicketEvents) -> Page[EventRecord]:
    """The ticket's events and its conversations'."""
    await _readable(desk, actor, "ticket", given.ticket_id)
    try:
        page = await desk.db.read(
            events.of_ticket, actor.organization_id, given.ticket_id, limit=given.limit, cursor=given.cursor
        )
    except CursorNotFound:
        raise StaleCursor("cursor names no event of this ticket") from None
    return Page(page.events, page.has_more)


async def get(desk: Helpdesk, actor: Actor, event_id: str) -> EventRecord:
    event = await desk.db.read(events.get, event_id) if is_uuid(event_id) else None
    if event is None:
        raise NotFound("No event with that id in this organization")
    if event.organization_id != actor.organization_id:
        raise NotFound("No event with that id in this organization", elsewhere=True)
    if event.aggregate_type in ("ticket", "conversation"):
        await _readable(desk, actor, event.aggregate_type, event.aggregate_id)
    return event
