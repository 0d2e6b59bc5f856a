"""Inbound events (docs/helpdesk.md, "Inbound channels"): a provider's call as it came, stored with its
de-duplication key before the gateway acknowledges it, then published to `helpdesk.inbound.received` (the rows are
the outbox: `state` pending until processed), and once processed the record of what it became (its classification,
its ticket or conversation, an outcome for people). A provider's retry of an event is the same (channel, key): it is
acknowledged, and stores nothing new."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, and_, bindparam, select, text, update
from sqlalchemy.engine import Connection

from storage.common import later
from storage.common.db import per_dialect
from storage.common.paging import newest_first
from storage.helpdesk.models import SMS_ONLY, InboundEvent
from topics.helpdesk.inbound import Provider

EVENTS = cast(Table, InboundEvent.__table__)
PENDING, PROCESSED = "pending", "processed"
OUTBOX_COLUMNS = (EVENTS.c.id, EVENTS.c.organization_id, EVENTS.c.channel_id, EVENTS.c.provider, EVENTS.c.partition_key)
"""What an event's message (topics.helpdesk.InboundReceived) is made of."""


@dataclass(frozen=True, slots=True)
class Received:
    """An event to store: the gateway made it of a provider's call, after checking its signature."""

    id: str
    organization_id: str
    channel_id: str
    provider: Provider
    dedup_key: str
    content_type: str
    body: bytes
    partition_key: str
    created_at: datetime
    details: dict[str, Any]

    def row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "organization_id": self.organization_id,
            "channel_id": self.channel_id,
            "provider": self.provider,
            "dedup_key": self.dedup_key[:255],
            "content_type": self.content_type[:255],
            "body": self.body,
            "details": self.details,
            "partition_key": self.partition_key[:255],
            "created_at": self.created_at,
            "state": PENDING,
            "published_at": self.created_at,
        }


_INSERT = per_dialect(lambda insert_: insert_(EVENTS).on_conflict_do_nothing().returning(EVENTS.c.id))


def store(connection: Connection, received: Sequence[Received]) -> set[str]:
    """Insert the events (one statement for a batch); returns the ids that went in. An event whose (channel, key) is
    stored already is skipped: a provider's retry."""
    if not received:
        return set()
    return set(connection.execute(_INSERT[connection.dialect.name], [event.row() for event in received]).scalars())


_LOAD = select(EVENTS).where(EVENTS.c.id.in_(bindparam("ids", expanding=True)))


def load(connection: Connection, ids: Sequence[str]) -> dict[str, Any]:
    """The stored events by id (rows with every column, the raw body included)."""
    return {row.id: row for row in connection.execute(_LOAD, {"ids": list(ids)})}


def key_of_detail(
    connection: Connection,
    organization_id: str,
    channel_id: str,
    provider: Provider,
    detail: tuple[str, str],
    *,
    since: datetime,
) -> str | None:
    """The de-duplication key of the channel's event of `provider`, stored since `since`, whose `details` hold
    `detail` (name, value): a provider's one-time token seen before. None when no such event is stored."""
    name, value = detail
    found = connection.execute(
        select(EVENTS.c.dedup_key)
        .where(
            EVENTS.c.organization_id == organization_id,
            EVENTS.c.created_at >= since,
            EVENTS.c.channel_id == channel_id,
            EVENTS.c.provider == provider,
            EVENTS.c.details[name].as_string() == value,
        )
        .limit(1)
    ).first()
    return str(found.dedup_key) if found else None


_STORED = select(EVENTS.c.partition_key, EVENTS.c.created_at).where(
    EVENTS.c.channel_id == bindparam("channel_id"), EVENTS.c.dedup_key == bindparam("dedup_key")
)
_SENT_BETWEEN = select(EVENTS.c.id).where(
    text(SMS_ONLY),
    EVENTS.c.channel_id == bindparam("channel_id"),
    EVENTS.c.partition_key == bindparam("partition_key"),
    EVENTS.c.created_at >= bindparam("since"),
    EVENTS.c.created_at < bindparam("until"),
)


def after_quiet(connection: Connection, channel_id: str, dedup_key: str, quiet: timedelta) -> bool:
    """Whether the channel's stored SMS `dedup_key` is its sender's first (its partition key's) for `quiet`: no earlier
    SMS of that sender came within `quiet` before it. The same answer for a retry of the SMS."""
    stored = connection.execute(_STORED, {"channel_id": channel_id, "dedup_key": dedup_key[:255]}).first()
    if stored is None:
        return True
    params = {
        "channel_id": channel_id,
        "partition_key": stored.partition_key,
        "since": stored.created_at - quiet,
        "until": stored.created_at,
    }
    return connection.execute(_SENT_BETWEEN.limit(1), params).first() is None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What processing made of an event."""

    outcome: str
    classification: str | None = None
    ticket_id: str | None = None
    conversation_id: str | None = None


_SETTLE = (
    update(EVENTS)
    .where(EVENTS.c.id == bindparam("event_id"), EVENTS.c.state == PENDING)
    .values(
        state=PROCESSED,
        processed_at=bindparam("now"),
        outcome=bindparam("outcome"),
        classification=bindparam("classification"),
        ticket_id=bindparam("ticket_id"),
        conversation_id=bindparam("conversation_id"),
    )
)
"""Statements on the processors' path are built once (building one per call costs more than running it)."""


class ProcessedAlready(Exception):
    """The event was processed by another member, or by an earlier delivery of its message: the transaction that
    applied it again must be rolled back."""


def settle(connection: Connection, event_id: str, outcome: Outcome, now: datetime) -> None:
    """Mark the event processed, with what it became, in the transaction that applied it; ProcessedAlready when it
    was no longer pending. One statement at the end rather than a claim first (in a deferring round, one for the
    round's events: storage/common/later.py): a redelivery is rare, and a transaction that meets one is undone (on
    SQLite nobody else writes within it; on PostgreSQL the update waits for the other member's row lock and then
    finds the event processed)."""
    params = {
        "event_id": event_id,
        "now": now,
        "outcome": outcome.outcome,
        "classification": outcome.classification,
        "ticket_id": outcome.ticket_id,
        "conversation_id": outcome.conversation_id,
    }
    later.update_one(connection, _SETTLE, params, lambda: ProcessedAlready(event_id))


@dataclass(frozen=True, slots=True)
class EventRecord:
    """An inbound event as `GET /api/v1/inbound-messages` lists it (without its raw body)."""

    id: str
    channel_id: str
    provider: Provider
    dedup_key: str
    state: str
    classification: str | None
    ticket_id: str | None
    conversation_id: str | None
    outcome: str | None
    created_at: datetime
    processed_at: datetime | None


_LISTED = select(*(EVENTS.c[name] for name in EventRecord.__slots__))  # type: ignore[attr-defined]


def listing(
    connection: Connection,
    organization_id: str,
    *,
    channel_id: str | None,
    classification: str | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[EventRecord], bool]:
    """The organization's inbound events, newest first; `cursor` is the last id of the previous page."""
    scope = EVENTS.c.organization_id == organization_id
    if channel_id is not None:
        scope = and_(scope, EVENTS.c.channel_id == channel_id)
    if classification is not None:
        scope = and_(scope, EVENTS.c.classification == classification)
    rows, more = newest_first(connection, EVENTS, _LISTED, scope, limit=limit, cursor=cursor)
    fields = EventRecord.__slots__  # type: ignore[attr-defined]
    return [EventRecord(**{name: getattr(row, name) for name in fields}) for row in rows], more
