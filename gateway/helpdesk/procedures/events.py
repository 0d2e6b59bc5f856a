"""The activity log's procedures (section 4.3): `events.list`, `events.get` and `events.listForTicket`, newest first,
`nextCursor` the id of the last event returned; another organization's entity is FORBIDDEN."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from gateway.helpdesk.procedures.wire import Call, Procedure
from operations.common.pages import Page
from operations.helpdesk import events
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.events import ListEvents, ListTicketEvents
from operations.helpdesk.fields import Uuid
from storage.helpdesk.events import EventRecord


class EventView(msgspec.Struct, omit_defaults=True):
    """An Event as section 2.3 has it; `actor` only where the event has one."""

    id: str
    aggregate_type: str
    aggregate_id: str
    event_type: str
    event_data: dict[str, Any]
    actor_id: str | None
    created_at: datetime
    actor: dict[str, Any] | None = None

    @classmethod
    def of(cls, event: EventRecord) -> EventView:
        return cls(
            event.id,
            event.aggregate_type,
            event.aggregate_id,
            event.event_type,
            event.event_data,
            event.actor_id,
            event.created_at,
            event.actor,
        )


class EventPage(msgspec.Struct):
    events: list[EventView]
    nextCursor: str | None  # the contract's names
    hasMore: bool

    @classmethod
    def of(cls, page: Page[EventRecord]) -> EventPage:
        return cls(
            [EventView.of(event) for event in page.items], page.items[-1].id if page.items else None, page.has_more
        )


class GetEvent(msgspec.Struct, forbid_unknown_fields=True):
    id: Uuid


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_events(call: Call, given: ListEvents) -> EventPage:
        return EventPage.of(await events.of_aggregate(desk, call.actor, given))

    async def get_event(call: Call, given: GetEvent) -> EventView:
        return EventView.of(await events.get(desk, call.actor, given.id))

    async def list_for_ticket(call: Call, given: ListTicketEvents) -> EventPage:
        return EventPage.of(await events.of_ticket(desk, call.actor, given))

    return {
        "events.list": Procedure("query", ListEvents, list_events),
        "events.get": Procedure("query", GetEvent, get_event),
        "events.listForTicket": Procedure("query", ListTicketEvents, list_for_ticket),
    }
