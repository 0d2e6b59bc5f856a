"""The activity log over REST (`/api/v1/events`, scope `events:read`): an entity's events and one event, newest first;
another organization's entity is as absent as an unknown one (404)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.rest.paging import Cursor, Limit
from gateway.helpdesk.schemas import Event, EventList
from operations.helpdesk import events
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.events import AggregateType, ListEvents
from operations.helpdesk.fields import UUID_PATTERN


class EventsController(Controller):
    path = "/api/v1/events"
    tags = ["events"]

    @get("/", guards=[requires("events:read")], **docs.LIST_EVENTS)
    async def list_events(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        aggregate_type: Annotated[AggregateType, Parameter(description="The kind of entity")],
        aggregate_id: Annotated[str, Parameter(pattern=UUID_PATTERN, description="The entity's id")],
        limit: Limit = 50,
        cursor: Cursor = None,
    ) -> EventList:
        given = ListEvents(aggregate_type=aggregate_type, aggregate_id=aggregate_id, limit=limit, cursor=cursor)
        page = await events.of_aggregate(desk, actor_of(request), given)
        return EventList(data=[Event.of(e) for e in page.items], has_more=page.has_more, next_cursor=page.next_cursor)

    @get("/{event_id:str}", guards=[requires("events:read")], **docs.GET_EVENT)
    async def get_event(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], event_id: FromPath[str]
    ) -> Event:
        return Event.of(await events.get(desk, actor_of(request), event_id))
