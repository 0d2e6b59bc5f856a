"""The activity log: its procedures (section 4.3) `events.list`, `events.get` and `events.listForTicket`, newest first,
`nextCursor` the id of the last event returned, for a signed-in user of the organization (FORBIDDEN for another's
entity); and its REST routes (`/api/v1/events`, scope `events:read`), where another organization's entity is 404."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.errors import HelpdeskError
from gateway.helpdesk.members import Members
from gateway.helpdesk.schemas import Event, EventList
from gateway.helpdesk.signin import Identity
from gateway.helpdesk.trpc import Call, Procedure, ProcedureError
from storage.common.db import Database
from storage.common.paging import CursorNotFound
from storage.helpdesk import events, identity
from wire.timestamps import iso

UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
Id = Annotated[str, msgspec.Meta(pattern=UUID)]
Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]
_UUID = re.compile(UUID)
AggregateType = Literal["ticket", "conversation", "user", "organization"]


def is_uuid(text: str) -> bool:
    return _UUID.match(text) is not None


class ListEvents(msgspec.Struct, forbid_unknown_fields=True):
    aggregateType: AggregateType  # the contract's names
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


def event_object(event: events.EventRecord) -> Event:
    """An Event as the REST API shows it (ISO timestamps)."""
    return Event(
        id=event.id,
        aggregate_type=event.aggregate_type,  # type: ignore[arg-type]
        aggregate_id=event.aggregate_id,
        event_type=event.event_type,
        event_data=event.event_data,
        actor_id=event.actor_id,
        created_at=iso(event.created_at, "milliseconds"),
        actor=event.actor,
    )


async def owners(db: Database, aggregate_type: str, aggregate_id: str) -> set[str | None]:
    """The organizations an entity belongs to, as far as it can be told (empty: no trace of it anywhere)."""
    if aggregate_type == "organization":
        return {aggregate_id}
    if aggregate_type == "user":
        user = await db.read(identity.user_by_id, aggregate_id)
        return {user.organization_id} if user is not None else set()
    return set(await db.read(events.organizations_of, aggregate_type, aggregate_id))


def procedures(deps: Identity) -> Mapping[str, Procedure]:
    db = deps.db

    members = Members(deps)

    async def organization(call: Call) -> str:
        return (await members.member(call)).organization_id

    async def paged(read: Any, *args: Any, limit: int, cursor: str | None) -> dict[str, Any]:
        try:
            return page_view(await db.read(read, *args, limit=limit, cursor=cursor))
        except CursorNotFound:
            raise ProcedureError("BAD_REQUEST", "The cursor is not an event of this list") from None

    async def list_events(call: Call, given: ListEvents) -> dict[str, Any]:
        mine = await organization(call)
        found = await owners(db, given.aggregateType, given.aggregateId)
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
        found = await owners(db, "ticket", given.ticketId)
        if found and mine not in found:
            raise ProcedureError("FORBIDDEN", "This ticket belongs to another organization")
        return await paged(events.of_ticket, mine, given.ticketId, limit=given.limit, cursor=given.cursor)

    return {
        "events.list": Procedure("query", ListEvents, list_events),
        "events.get": Procedure("query", GetEvent, get_event),
        "events.listForTicket": Procedure("query", ListForTicket, list_for_ticket),
    }


class EventsController(Controller):
    path = "/api/v1/events"
    tags = ["events"]

    @get("/", guards=[requires("events:read")], **docs.LIST_EVENTS)
    async def list_events(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        aggregate_type: Annotated[AggregateType, Parameter(description="The kind of entity")],
        aggregate_id: Annotated[str, Parameter(pattern=UUID, description="The entity's id")],
        limit: Annotated[int, Parameter(ge=1, le=100, description="Page size, 1 to 100")] = 50,
        cursor: Annotated[
            str | None, Parameter(pattern=UUID, description="The `next_cursor` of the previous page")
        ] = None,
    ) -> EventList:
        mine = request.user.owner_id
        if mine not in await owners(helpdesk.db, aggregate_type, aggregate_id):  # another's, or nobody's
            raise HelpdeskError(404, f"No {aggregate_type} with that id in this organization")
        try:
            page = await helpdesk.db.read(
                events.of_aggregate, mine, aggregate_type, aggregate_id, limit=limit, cursor=cursor
            )
        except CursorNotFound:
            raise HelpdeskError(404, "cursor names no event of this listing") from None
        data = [event_object(event) for event in page.events]
        after = data[-1].id if page.has_more and data else None
        return EventList(data=data, has_more=page.has_more, next_cursor=after)

    @get("/{event_id:str}", guards=[requires("events:read")], **docs.GET_EVENT)
    async def get_event(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        event_id: FromPath[str],
    ) -> Event:
        event = await helpdesk.db.read(events.get, event_id) if is_uuid(event_id) else None
        if event is None or event.organization_id != request.user.owner_id:
            raise HelpdeskError(404, "No event with that id in this organization")
        return event_object(event)
