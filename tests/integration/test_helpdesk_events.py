"""The helpdesk's activity log in storage, on SQLite and PostgreSQL: newest first, a ticket's listing with its
conversations', and keyset paging that neither skips nor repeats an event while others are being written."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from storage.common.db import Database
from storage.common.paging import CursorNotFound
from storage.helpdesk import events


async def write(
    db: Database,
    organization: str,
    aggregate: tuple[events.AggregateType, str],
    at: datetime,
    ticket_id: str | None = None,
) -> str:
    event = events.row(
        organization, aggregate, "updated", {"at": at.isoformat()}, actor_id=None, now=at, ticket_id=ticket_id
    )
    await db.write(events.record_rows, [event])
    return str(event["id"])


async def test_a_ticket_lists_its_own_events_and_its_conversations_newest_first(db: Database) -> None:
    organization, ticket, conversation = (str(uuid.uuid4()) for _ in range(3))
    start = datetime.now(UTC)
    created = await write(db, organization, ("ticket", ticket), start)
    replied = await write(
        db, organization, ("conversation", conversation), start + timedelta(seconds=1), ticket_id=ticket
    )
    assigned = await write(db, organization, ("ticket", ticket), start + timedelta(seconds=2))
    await write(db, str(uuid.uuid4()), ("ticket", ticket), start + timedelta(seconds=3))  # another organization's
    page = await db.read(events.of_ticket, organization, ticket, limit=10, cursor=None)
    assert [event.id for event in page.events] == [assigned, replied, created]
    assert not page.has_more
    only = await db.read(events.of_aggregate, organization, "ticket", ticket, limit=10, cursor=None)
    assert [event.id for event in only.events] == [assigned, created]


async def test_paging_is_stable_while_events_are_written(db: Database) -> None:
    organization, ticket = str(uuid.uuid4()), str(uuid.uuid4())
    start = datetime.now(UTC)
    # ten events share each instant: the id breaks the tie
    written = [await write(db, organization, ("ticket", ticket), start + timedelta(seconds=i // 10)) for i in range(30)]
    baseline = set(written)
    seen: list[str] = []
    cursor = None
    for round_ in range(10):
        # others keep writing newer events between pages
        await asyncio.gather(
            *(write(db, organization, ("ticket", ticket), start + timedelta(minutes=5 + round_)) for _ in range(3))
        )
        page = await db.read(events.of_aggregate, organization, "ticket", ticket, limit=7, cursor=cursor)
        seen += [event.id for event in page.events]
        if not page.has_more:
            break
        cursor = page.events[-1].id
    older = [event_id for event_id in seen if event_id in baseline]
    assert len(seen) == len(set(seen))  # nothing repeated
    assert set(older) == baseline  # nothing skipped


async def test_a_cursor_from_another_listing_is_refused(db: Database) -> None:
    organization = str(uuid.uuid4())
    other = await write(db, organization, ("ticket", str(uuid.uuid4())), datetime.now(UTC))
    with pytest.raises(CursorNotFound):
        await db.read(events.of_aggregate, organization, "ticket", str(uuid.uuid4()), limit=5, cursor=other)
