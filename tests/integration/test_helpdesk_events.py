"""The helpdesk's activity log in storage, on SQLite and PostgreSQL: newest first, a ticket's listing with its
conversations', and keyset paging that neither skips nor repeats an event while others are being written; in a round
of batched units that defers its log rows to its end (storage/common/later.py), what a later unit of the round reads
or scrubs sees them, and one unit's refusal leaves the others' changes whole."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from storage.common import later
from storage.common.batching import BatchedWrites
from storage.common.db import Database
from storage.common.paging import CursorNotFound
from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from storage.helpdesk import events, inbound, orders, tickets
from storage.helpdesk.workspaces import ORGANIZATIONS


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


async def organization_of_its_own(db: Database) -> str:
    organization = str(uuid.uuid4())
    row = {"id": organization, "name": "Acme", "slug": f"acme-{organization[:8]}", "plan": "free"}
    await db.write(
        lambda connection: connection.execute(insert(ORGANIZATIONS).values(created_at=datetime.now(UTC), **row))
    )
    return organization


def logged(connection: Connection, organization: str) -> list[str]:
    """Everything the organization's activity log and outgoing webhook events say, as text."""
    activity = connection.execute(
        select(events.EVENTS.c.event_data).where(events.EVENTS.c.organization_id == organization)
    )
    hooks = connection.execute(select(WEBHOOK_EVENTS.c.body).where(WEBHOOK_EVENTS.c.owner_id == organization))
    return [str(data) for data in activity.scalars()] + [bytes(body).decode() for body in hooks.scalars()]


async def test_an_erasure_later_in_a_deferring_round_scrubs_the_log_rows_its_earlier_units_wrote(db: Database) -> None:
    """A round's units write their activity and webhook events at the round's end; an erasure in the same round
    (a commerce redaction after that customer's mail) still finds and scrubs what the earlier unit logged."""
    organization = await organization_of_its_own(db)
    writes = BatchedWrites(db, defer=16)
    email = f"ana.{uuid.uuid4().hex[:8]}@customers.example"
    now = datetime.now(UTC)

    def mail(connection: Connection) -> str:
        ticket = tickets.create(
            connection,
            organization,
            subject=f"Order for {email}",
            customer_email=email,
            actor_id=None,
            now=now,
            recorded=[],
        )
        with pytest.raises(later.UnflushedRead, match="helpdesk_events"):  # the log rows wait for the end
            logged(connection, organization)
        return ticket.customer_id

    def redaction(connection: Connection) -> orders.Erased:
        (customer_id,) = connection.execute(
            select(tickets.TICKETS.c.customer_id).where(tickets.TICKETS.c.organization_id == organization)
        ).scalars()
        return orders.erase(connection, organization, customer_ids=[customer_id], now=now, recorded=[])

    _, erased = await asyncio.gather(writes.write(mail), writes.write(redaction))
    assert (erased.customers, erased.tickets) == (1, 1)
    texts = await db.read(logged, organization)
    assert len(texts) >= 4, texts  # the ticket's and its message's activity, their webhook events, customer.updated
    assert not [text for text in texts if email in text], "the erased address is still in the log"


async def test_a_read_of_a_table_whose_rows_a_deferring_round_holds_fails_loudly_until_flushed(db: Database) -> None:
    """A storage function that reads a log table in a deferring round without `later.flush` would miss the round's
    own rows: it raises instead, and after a flush it finds them."""
    organization = await organization_of_its_own(db)
    writes = BatchedWrites(db, defer=16)
    now = datetime.now(UTC)

    def unit(connection: Connection) -> int:
        ticket = tickets.create(
            connection,
            organization,
            subject="Kept",
            customer_email="kept@example.com",
            actor_id=None,
            now=now,
            recorded=[],
        )
        read = select(events.EVENTS.c.id).where(events.EVENTS.c.ticket_id == ticket.id)
        with pytest.raises(later.UnflushedRead):
            connection.execute(read)
        later.flush(connection)
        return len(connection.execute(read).all())

    assert await writes.write(unit) == 1


async def test_conversations_in_one_deferring_round_move_their_ticket_s_updated_at_forward_only(db: Database) -> None:
    """A conversation touches its ticket's `updated_at` at the round's end (later.touch): a unit that reads the ticket
    meanwhile is not refused (it sees the time from before the round), and of two touches out of order the later
    time stays."""
    organization = await organization_of_its_own(db)
    made = await db.write(
        tickets.create,
        organization,
        subject="Parcel",
        customer_email="parcel@example.com",
        actor_id=None,
        now=datetime.now(UTC),
        recorded=[],
    )
    writes = BatchedWrites(db, defer=16)

    def reply(connection: Connection, at: datetime) -> datetime:
        ticket = tickets.get(connection, organization, made.id)
        assert ticket is not None
        tickets.add_conversation(
            connection, ticket, author_type="agent", author_id=None, body="Sent", internal=False, now=at, recorded=[]
        )
        again = tickets.get(connection, organization, made.id)
        assert again is not None
        return again.updated_at

    second, first = made.updated_at + timedelta(minutes=2), made.updated_at + timedelta(minutes=1)
    seen = await asyncio.gather(writes.write(reply, second), writes.write(reply, first))
    assert seen == [made.updated_at, made.updated_at], "within the round the touches wait for its end"
    stored = await db.read(tickets.get, organization, made.id)
    assert stored is not None
    assert stored.updated_at == second, "the later touch stays, whichever came last"


async def test_one_unit_of_a_deferring_round_that_finds_its_event_processed_is_refused_alone(db: Database) -> None:
    """Units settle their inbound event at the round's end, in one statement; when one of them finds its event
    processed already (another member took it), the round is undone and run again unit by unit: that unit alone is
    refused (ProcessedAlready), and the others' tickets stand with their log rows."""
    organization = await organization_of_its_own(db)
    now = datetime.now(UTC)
    stored = [
        inbound.Received(
            id=str(uuid.uuid4()),
            organization_id=organization,
            channel_id=str(uuid.uuid4()),
            provider="email_d",
            dedup_key=f"m{n}@customers.example",
            content_type="message/rfc822",
            body=b"",
            partition_key=f"p{n}",
            created_at=now,
            details={},
        )
        for n in range(3)
    ]
    await db.write(inbound.store, stored)
    await db.write(inbound.settle, stored[1].id, inbound.Outcome("new ticket"), now)  # taken by another member
    writes = BatchedWrites(db, defer=16)

    def mail(connection: Connection, event: inbound.Received) -> str:
        ticket = tickets.create(
            connection,
            organization,
            subject=event.dedup_key,
            customer_email=f"{event.partition_key}@customers.example",
            actor_id=None,
            now=now,
            recorded=[],
        )
        inbound.settle(connection, event.id, inbound.Outcome("new ticket", ticket_id=ticket.id), now)
        return ticket.subject

    outcomes = await asyncio.gather(*(writes.write(mail, event) for event in stored), return_exceptions=True)
    assert (outcomes[0], outcomes[2]) == ("m0@customers.example", "m2@customers.example")
    assert isinstance(outcomes[1], inbound.ProcessedAlready)
    subjects = await db.read(
        lambda connection: sorted(
            connection.execute(
                select(tickets.TICKETS.c.subject).where(tickets.TICKETS.c.organization_id == organization)
            ).scalars()
        )
    )
    assert subjects == ["m0@customers.example", "m2@customers.example"]
    texts = await db.read(logged, organization)
    assert sum("m0@customers.example" in text for text in texts) >= 2
    assert not [text for text in texts if "m1@customers.example" in text]


async def test_a_round_longer_than_its_deferred_units_numbers_and_logs_every_ticket(db: Database) -> None:
    """A round takes the organization's ticket number once and counts on in memory, and writes its log rows a few
    units at a time: each ticket of a round of five, written two units' rows at a time, has its own number, its
    `created` activity row and its `ticket.created` event; the next create, outside any round, numbers on from the
    stored counter."""
    organization = await organization_of_its_own(db)
    writes = BatchedWrites(db, defer=2)
    now = datetime.now(UTC)

    def create(connection: Connection, n: int) -> int:
        ticket = tickets.create(
            connection,
            organization,
            subject=f"Order {n}",
            customer_email=f"c{n}@customers.example",
            actor_id=None,
            now=now,
            recorded=[],
        )
        return ticket.number

    numbers = await asyncio.gather(*(writes.write(create, n) for n in range(5)))
    after = await db.write(create, 5)

    def stored(connection: Connection) -> tuple[list[int], int, int, int]:
        numbers = connection.execute(
            select(tickets.TICKETS.c.number).where(tickets.TICKETS.c.organization_id == organization)
        ).scalars()
        last = connection.execute(
            select(ORGANIZATIONS.c.last_ticket_number).where(ORGANIZATIONS.c.id == organization)
        ).scalar_one()
        created = connection.execute(
            select(events.EVENTS.c.id).where(
                events.EVENTS.c.organization_id == organization,
                events.EVENTS.c.aggregate_type == "ticket",
                events.EVENTS.c.event_type == "created",
            )
        ).all()
        hooks = connection.execute(
            select(WEBHOOK_EVENTS.c.id).where(
                WEBHOOK_EVENTS.c.owner_id == organization, WEBHOOK_EVENTS.c.type == "ticket.created"
            )
        ).all()
        return sorted(numbers), last, len(created), len(hooks)

    assert sorted(numbers) == [1, 2, 3, 4, 5]
    assert after == 6
    assert await db.read(stored) == ([1, 2, 3, 4, 5, 6], 6, 6, 6)
