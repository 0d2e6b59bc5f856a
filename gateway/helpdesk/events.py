"""The activity log's procedures (section 4.3): `events.list`, `events.get` and `events.listForTicket`, newest first,
`nextCursor` the id of the last event returned. A signed-in user reads the events of their own organization only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from gateway.helpdesk.auth import Identity, signed_in
from gateway.helpdesk.trpc import Call, Procedure, ProcedureError
from storage.common.paging import CursorNotFound
from storage.helpdesk import events, identity

UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
Id = Annotated[str, msgspec.Meta(pattern=UUID)]
Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]


class ListEvents(msgspec.Struct, forbid_unknown_fields=True):
    aggregateType: Literal["ticket", "conversation", "user", "organization"]  # the contract's names
    aggregateId: Id
    limit: Limit = 50
    cursor: str | None = None


class GetEvent(msgspec.Struct, forbid_unknown_fields=True):
    id: Id


class ListForTicket(msgspec.Struct, forbid_unknown_fields=True):
    ticketId: Id  # the contract's name
    limit: Limit = 50
    cursor: str | None = None


def event_view(event: events.EventRecord) -> dict[str, Any]:
    """An Event as section 2.3 has it."""
    view: dict[str, Any] = {
        "id": event.id,
        "aggregate_type": event.aggregate_type,
        "aggregate_id": event.aggregate_id,
        "event_type": event.event_type,
        "event_data": event.event_data,
        "actor_id": event.actor_id,
        "created_at": event.created_at,
    }
    return view | ({"actor": event.actor} if event.actor is not None else {})


def page_view(page: events.Page) -> dict[str, Any]:
    return {
        "events": [event_view(event) for event in page.events],
        "nextCursor": page.events[-1].id if page.events else None,
        "hasMore": page.has_more,
    }


def procedures(deps: Identity) -> Mapping[str, Procedure]:
    db = deps.db

    async def organization(call: Call) -> str:
        who = await signed_in(call, deps.sessions)
        user = await db.read(identity.user_by_id, who.user_id)
        if user is None or user.organization_id is None:
            raise ProcedureError("FORBIDDEN", "Complete signup first: you belong to no organization yet")
        return user.organization_id

    async def paged(read: Any, *args: Any, limit: int, cursor: str | None) -> dict[str, Any]:
        try:
            return page_view(await db.read(read, *args, limit=limit, cursor=cursor))
        except CursorNotFound:
            raise ProcedureError("BAD_REQUEST", "The cursor is not an event of this list") from None

    async def owners(aggregate_type: str, aggregate_id: str) -> set[str | None]:
        """The organizations an entity belongs to, as far as it can be told (empty: no trace of it anywhere)."""
        if aggregate_type == "organization":
            return {aggregate_id}
        if aggregate_type == "user":
            user = await db.read(identity.user_by_id, aggregate_id)
            return {user.organization_id} if user is not None else set()
        return set(await db.read(events.organizations_of, aggregate_type, aggregate_id))

    async def list_events(call: Call, given: ListEvents) -> dict[str, Any]:
        mine = await organization(call)
        found = await owners(given.aggregateType, given.aggregateId)
        if found and mine not in found:
            raise ProcedureError("FORBIDDEN", f"This {given.aggregateType} belongs to another organization")
        return await paged(
            events.of_aggregate, mine, given.aggregateType, given.aggregateId, limit=given.limit, cursor=given.cursor
        )

    async def get_event(call: Call, given: GetEvent) -> dict[str, Any]:
        mine = await organization(call)
        event = await db.read(events.get, given.id)
        if event is None:
            raise ProcedureError("NOT_FOUND", f"No event {given.id}")
        if event.organization_id != mine:
            raise ProcedureError("FORBIDDEN", "This event belongs to another organization")
        return event_view(event)

    async def list_for_ticket(call: Call, given: ListForTicket) -> dict[str, Any]:
        mine = await organization(call)
        found = await owners("ticket", given.ticketId)
        if found and mine not in found:
            raise ProcedureError("FORBIDDEN", "This ticket belongs to another organization")
        return await paged(events.of_ticket, mine, given.ticketId, limit=given.limit, cursor=given.cursor)

    return {
        "events.list": Procedure("query", ListEvents, list_events),
        "events.get": Procedure("query", GetEvent, get_event),
        "events.listForTicket": Procedure("query", ListForTicket, list_for_ticket),
    }
