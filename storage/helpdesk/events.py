"""The helpdesk's activity log (sections 2.3, 4.3, 6.2): `record_rows` in the transaction of the change it describes,
and the reads of `events.*`, newest first, paged by a keyset on (created_at, id) so that events inserted meanwhile
are neither skipped nor repeated."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import ColumnElement, Table, and_, insert, select
from sqlalchemy.engine import Connection

from storage.common import later
from storage.common.paging import newest_first
from storage.helpdesk.accounts import USERS
from storage.helpdesk.models import Event
from wire.ids import new_uuid

EVENTS = cast(Table, Event.__table__)
AggregateType = Literal["ticket", "conversation", "user", "organization"]


@dataclass(frozen=True, slots=True)
class EventRecord:
    id: str
    organization_id: str
    aggregate_type: str
    aggregate_id: str
    event_type: str
    event_data: dict[str, Any]
    actor_id: str | None
    actor: dict[str, Any] | None
    """The acting user's name, email and avatar_url, when there is one."""
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Page:
    events: list[EventRecord]
    has_more: bool


_INSERT = insert(EVENTS)
"""Statements on a change's path are built once (building one per call was most of a ticket create's storage time)."""


def row(
    organization_id: str,
    aggregate: tuple[AggregateType, str],
    event_type: str,
    data: dict[str, Any],
    *,
    actor_id: str | None,
    now: datetime,
    ticket_id: str | None = None,
) -> dict[str, Any]:
    """One event of `aggregate` (type, id), as `record_rows` writes it."""
    aggregate_type, aggregate_id = aggregate
    return {
        "id": new_uuid(),
        "organization_id": organization_id,
        "aggregate_type": aggregate_type,
        "aggregate_id": aggregate_id,
        "ticket_id": ticket_id if ticket_id is not None else (aggregate_id if aggregate_type == "ticket" else None),
        "event_type": event_type,
        "event_data": data,
        "actor_id": actor_id,
        "created_at": now,
        "state": "pending",
        "published_at": now,
    }


def record_rows(connection: Connection, rows: list[dict[str, Any]]) -> None:
    """Write a change's events (`row`s), in the change's transaction, in one statement (written late in a deferring
    transaction: storage/common/later.py)."""
    later.insert(connection, _INSERT, rows)


OUTBOX_COLUMNS = (
    EVENTS.c.id,
    EVENTS.c.organization_id,
    EVENTS.c.aggregate_type,
    EVENTS.c.aggregate_id,
    EVENTS.c.event_type,
    EVENTS.c.event_data,
    EVENTS.c.actor_id,
    EVENTS.c.created_at,
)
"""What the relay publishes of an event (topics.helpdesk.ActivityRecorded)."""


def _selected() -> Any:
    return select(EVENTS, USERS.c.name, USERS.c.email, USERS.c.avatar_url).outerjoin(
        USERS, USERS.c.id == EVENTS.c.actor_id
    )


def _event(row: Any) -> EventRecord:
    actor = None
    if row.actor_id is not None and row.email is not None:
        actor = {"name": row.name, "email": row.email} | ({"avatar_url": row.avatar_url} if row.avatar_url else {})
    return EventRecord(
        row.id,
        row.organization_id,
        row.aggregate_type,
        row.aggregate_id,
        row.event_type,
        row.event_data,
        row.actor_id,
        actor,
        row.created_at,
    )


def get(connection: Connection, event_id: str) -> EventRecord | None:
    row = connection.execute(_selected().where(EVENTS.c.id == event_id)).first()
    return _event(row) if row else None


def organizations_of(connection: Connection, aggregate_type: str, aggregate_id: str) -> set[str]:
    """The organizations whose events name this aggregate (one, or none when it has no events)."""
    rows = connection.execute(
        select(EVENTS.c.organization_id)
        .where(EVENTS.c.aggregate_type == aggregate_type, EVENTS.c.aggregate_id == aggregate_id)
        .distinct()
    )
    return {row.organization_id for row in rows}


def of_aggregate(
    connection: Connection,
    organization_id: str,
    aggregate_type: str,
    aggregate_id: str,
    *,
    limit: int,
    cursor: str | None,
) -> Page:
    """An aggregate's events in one organization, newest first, after the event `cursor` when given."""
    where = and_(
        EVENTS.c.organization_id == organization_id,
        EVENTS.c.aggregate_type == aggregate_type,
        EVENTS.c.aggregate_id == aggregate_id,
    )
    return _page(connection, where, limit, cursor)


def of_ticket(connection: Connection, organization_id: str, ticket_id: str, *, limit: int, cursor: str | None) -> Page:
    """A ticket's events and its conversations', newest first."""
    where = and_(EVENTS.c.organization_id == organization_id, EVENTS.c.ticket_id == ticket_id)
    return _page(connection, where, limit, cursor)


def _page(connection: Connection, where: ColumnElement[bool], limit: int, cursor: str | None) -> Page:
    rows, has_more = newest_first(connection, EVENTS, _selected(), where, limit=limit, cursor=cursor)
    return Page([_event(row) for row in rows], has_more=has_more)
