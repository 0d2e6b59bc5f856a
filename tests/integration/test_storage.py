"""The storage layer on every database under test: migrations, the constraints that carry the no-loss and
no-double-charge rules, the ledger arithmetic, the sweeper's claims, datetimes, keys and prices.

Every test works on tenants of its own (fresh uuids), so the tests are independent of each other and of a stack
that may share the database. Pending rows are published "in the future" so that such a stack's sweeper, which
only looks at rows published before its own clock, never takes them.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from storage.common import db as db_module
from storage.common import keys, leases, outbox
from storage.common.batching import BatchedWrites
from storage.common.db import MIGRATIONS, Database, create_engine, migrate, sqlite_url
from storage.common.keys import hash_key
from storage.helpdesk.models import SEARCH_TABLES
from storage.phone import requests, tenants
from storage.phone.models import LedgerEntry, MonthlySpend, PhoneRequest
from storage.tables import METADATA, modelled
from tests.conftest import PG_URL, fresh_postgres_database

TABLES = {
    "api_keys",
    "mail_links",
    "kept_mails",
    "leases",
    "phone_tenants",
    "phone_prices",
    "phone_requests",
    "phone_ledger",
    "phone_monthly_spend",
    "webhook_endpoints",
    "webhook_events",
    "webhook_deliveries",
    "webhook_attempts",
    "photo_customers",
    "photo_monthly_usage",
    "photo_verifications",
    "photo_sessions",
    "photo_inspections",
    "helpdesk_organizations",
    "helpdesk_users",
    "helpdesk_sessions",
    "helpdesk_refresh_tokens",
    "helpdesk_events",
    "helpdesk_customers",
    "helpdesk_tickets",
    "helpdesk_conversations",
    "helpdesk_customer_identities",
    "helpdesk_channels",
    "helpdesk_channel_addresses",
    "helpdesk_commerce_installs",
    "helpdesk_inbound_events",
    "helpdesk_calls",
    "helpdesk_orders",
    "helpdesk_invitations",
    "helpdesk_uploads",
    "helpdesk_outbound",
}
FUTURE = timedelta(days=1)
"""Pending rows are published this far ahead of the clock: no sweeper of a stack on this database takes them."""
_numbers = itertools.count()


def new_tenant_id() -> str:
    return str(uuid.uuid4())


def new_number() -> str:
    """A valid US number outside the sandbox's 555 block; unique within this module."""
    index = next(_numbers)
    return f"+1212{200 + index // 10000:03d}{index % 10000:04d}"


def pending_row(
    tenant_id: str,
    *,
    environment: str = "test",
    phone: str | None = None,
    idempotency_key: str | None = None,
    state: str = "pending",
    created_at: datetime | None = None,
    published_at: datetime | None = None,
) -> PhoneRequest:
    now = datetime.now(UTC)
    return PhoneRequest(
        id=str(uuid.uuid4()),
        tenant_id=tenant_id,
        environment=environment,
        idempotency_key=idempotency_key or str(uuid.uuid4()),
        body_hash="0" * 64,
        phone_e164=phone or new_number(),
        subject_type="person",
        supplied_name="John Smith",
        reference_id=None,
        state=state,
        created_at=created_at or now,
        published_at=published_at or now + FUTURE,
    )


def completed(
    at: datetime, *, billable: bool = True, price: int = 15000, cache_hit: bool = False, sku: str = "core_phone"
) -> requests.Outcome:
    return requests.Outcome(
        state="completed",
        completed_at=at,
        billing_disposition="billable" if billable else "not_billable",
        result=b"{}",
        lookup=None if cache_hit else b"{}",
        billable=billable,
        sku=sku,
        unit_price_microdollars=price,
        cache_hit=cache_hit,
    )


def insert(table: Any, row: Any) -> Callable[[Connection], Any]:
    """A unit of work inserting a model instance's columns as a row of `table`."""
    return lambda connection: connection.execute(table.insert().values({c.key: getattr(row, c.key) for c in table.c}))


async def add(db: Database, row: PhoneRequest) -> PhoneRequest:
    """Store a request row exactly as the gateway accepts one."""
    await db.write(insert(requests.REQUESTS, row))
    return row


async def finished(
    db: Database, tenant_id: str, outcome: requests.Outcome, *, environment: str = "test", phone: str | None = None
) -> PhoneRequest:
    """A request added and finished with `outcome` in one go."""
    row = await add(db, pending_row(tenant_id, environment=environment, phone=phone))
    assert await db.write(requests.finish, row, outcome)
    return row


async def ledger_of(db: Database, tenant_id: str) -> list[Any]:
    return await rows(db, select(LedgerEntry).where(LedgerEntry.tenant_id == tenant_id))


async def rows(db: Database, statement: Any) -> list[Any]:
    return await db.read(lambda connection: list(connection.execute(statement)))


async def state_of(db: Database, request_id: str) -> str:
    row = await db.read(requests.get_request, request_id)
    assert row is not None
    return row.state


async def spend(db: Database, tenant_id: str, environment: str, at: datetime) -> int:
    return await db.read(requests.month_spend, tenant_id, environment, at)


@asynccontextmanager
async def empty_database(like_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """A brand-new, empty database of the same backend as `like_url`."""
    if like_url.startswith("sqlite"):
        yield sqlite_url(tmp_path / "empty.db")
        return
    async with fresh_postgres_database(PG_URL or "") as url:
        yield url


# --------------------------------------------------------------------------------------------------- migrations


async def test_migrations_apply_on_an_empty_database_and_are_idempotent(database_url: str, tmp_path: Path) -> None:
    async with empty_database(database_url, tmp_path) as url:
        await asyncio.to_thread(migrate, url)
        await asyncio.to_thread(migrate, url)  # a second run is a no-op, not an error

        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                tables = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
                versions = list((await connection.execute(text("SELECT version_num FROM alembic_version"))).scalars())
                indexes = await connection.run_sync(
                    lambda sync: {index["name"]: index for index in inspect(sync).get_indexes("phone_requests")}
                )
                drift = await connection.run_sync(
                    lambda sync: compare_metadata(
                        MigrationContext.configure(sync, opts={"include_name": modelled}), METADATA
                    )
                )
        finally:
            await engine.dispose()

    assert tables == TABLES | {"alembic_version"} | (SEARCH_TABLES if url.startswith("sqlite") else set())
    assert versions == ["0022"]
    assert indexes["uq_phone_requests_idempotency"]["unique"]
    assert indexes["uq_phone_requests_open_number"]["unique"]
    assert drift == [], "the migrated schema differs from the models (storage.tables)"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    return config


async def test_optional_webhook_secrets_migrate_with_the_deliveries_and_attempts_in_place(
    database_url: str, tmp_path: Path
) -> None:
    """0006 makes an endpoint's secret nullable. SQLite rebuilds the endpoints table for it, while deliveries and
    their attempts point at it: they are all still there, still joined, afterwards; going back to 0005 keeps the
    signed endpoints and drops those without a secret (and what hung off them)."""
    async with empty_database(database_url, tmp_path) as url:
        config = alembic_config(url)
        await asyncio.to_thread(command.upgrade, config, "0005")
        engine = create_engine(url)
        at = datetime(2026, 11, 24, tzinfo=UTC)

        async def execute(*statements: str) -> list[Any]:
            async with engine.begin() as connection:
                results = [await connection.execute(text(statement), {"at": at}) for statement in statements]
            return [result.all() if result.returns_rows else None for result in results]

        if not url.startswith("sqlite"):
            at = at.replace(tzinfo=None)  # timestamps are stored in UTC without a zone there
        endpoint = "INSERT INTO webhook_endpoints (id, service, owner_id, url, events, status, {}created_at) VALUES"
        await execute(
            endpoint.format("secret_encrypted, secret_sha256, ")
            + " ('whk_signed', 'photo', 'cus_1', 'https://a.example', '[\"e\"]', 'active', 'token', 'sha', :at)",
            "INSERT INTO webhook_events (id, service, owner_id, type, created_at, body, state, published_at)"
            " VALUES ('evt_1', 'photo', 'cus_1', 'e', :at, '{}', 'fanned_out', :at)",
            "INSERT INTO webhook_deliveries (id, service, event_id, endpoint_id, state, attempts, created_at)"
            " VALUES (7, 'photo', 'evt_1', 'whk_signed', 'pending', 1, :at)",
            "INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, duration_ms) VALUES (7, 1, :at, 5)",
        )
        try:
            await asyncio.to_thread(command.upgrade, config, "0006")
            await execute(
                endpoint.format("")
                + " ('hook_unsigned', 'helpdesk', 'cus_1', 'http://b.example', '[\"e\"]', 'active', :at)",
                "INSERT INTO webhook_deliveries (id, service, event_id, endpoint_id, state, attempts, created_at)"
                " VALUES (8, 'helpdesk', 'evt_1', 'hook_unsigned', 'pending', 0, :at)",
            )
            joined = "SELECT a.attempt, d.id, e.id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id ="
            joined += " a.delivery_id JOIN webhook_endpoints e ON e.id = d.endpoint_id"
            [upgraded] = await execute(joined)
            await asyncio.to_thread(command.downgrade, config, "0005")
            [endpoints, deliveries, back] = await execute(
                "SELECT id FROM webhook_endpoints", "SELECT id FROM webhook_deliveries ORDER BY id", joined
            )
        finally:
            await engine.dispose()

    assert upgraded == [(1, 7, "whk_signed")]
    assert (endpoints, deliveries, back) == ([("whk_signed",)], [(7,)], [(1, 7, "whk_signed")])


async def test_the_helpdesk_links_and_kept_mail_move_to_the_shared_tables_and_back(
    database_url: str, tmp_path: Path
) -> None:
    """0018 moves the helpdesk's links and kept mail into the tables every service shares, each row the helpdesk's:
    an unused link still signs in afterwards, and going back to 0017 returns them."""
    async with empty_database(database_url, tmp_path) as url:
        config = alembic_config(url)
        await asyncio.to_thread(command.upgrade, config, "0017")
        engine = create_engine(url)
        at = datetime(2026, 11, 24, tzinfo=UTC)
        if not url.startswith("sqlite"):
            at = at.replace(tzinfo=None)

        async def execute(*statements: str) -> list[Any]:
            async with engine.begin() as connection:
                results = [await connection.execute(text(statement), {"at": at}) for statement in statements]
            return [result.all() if result.returns_rows else None for result in results]

        try:
            await execute(
                "INSERT INTO helpdesk_links (token_hash, purpose, email, redirect_to, created_at, expires_at)"
                " VALUES ('h1', 'sign_in', 'ada@example.com', '/tickets', :at, :at)",
                "INSERT INTO helpdesk_mails (id, recipient, subject, body, created_at)"
                " VALUES ('m1', 'ada@example.com', 'Your sign-in link', 'Open it', :at)",
            )
            await asyncio.to_thread(command.upgrade, config, "0018")
            [links, mails] = await execute(
                "SELECT token_hash, service, purpose, email, redirect_to FROM mail_links",
                "SELECT id, service, recipient, subject FROM kept_mails",
            )
            await asyncio.to_thread(command.downgrade, config, "0017")
            [links_back, mails_back] = await execute(
                "SELECT token_hash, email FROM helpdesk_links", "SELECT id, subject FROM helpdesk_mails"
            )
        finally:
            await engine.dispose()

    assert links == [("h1", "helpdesk", "sign_in", "ada@example.com", "/tickets")]
    assert mails == [("m1", "helpdesk", "ada@example.com", "Your sign-in link")]
    assert (links_back, mails_back) == ([("h1", "ada@example.com")], [("m1", "Your sign-in link")])


async def test_verifications_judged_before_the_dashboard_take_their_place_in_its_review_queue(
    database_url: str, tmp_path: Path
) -> None:
    """0019 fills in each judged verification's verdict and confidence beside its JSON (the review queue's order);
    one still pending keeps none."""
    async with empty_database(database_url, tmp_path) as url:
        config = alembic_config(url)
        await asyncio.to_thread(command.upgrade, config, "0018")
        engine = create_engine(url)
        at = datetime(2026, 11, 24, tzinfo=UTC)
        if not url.startswith("sqlite"):
            at = at.replace(tzinfo=None)
        verdict = json.dumps({"is_compliant": False, "confidence": 0.42, "category": "pose"}).encode()
        insert = (
            "INSERT INTO photo_verifications (id, customer_id, environment, key_id, body_hash, policy, image_type,"
            " state, charged, created_at, published_at, verdict) VALUES (:id, 'cus_1', 'test', 'key_1', 'h', 'icao',"
            " 'image/jpeg', :state, false, :at, :at, :verdict)"
        )
        try:
            async with engine.begin() as connection:
                await connection.execute(
                    text(insert), {"id": "ver_judged", "state": "completed", "at": at, "verdict": verdict}
                )
                await connection.execute(
                    text(insert), {"id": "ver_pending", "state": "pending", "at": at, "verdict": None}
                )
            await asyncio.to_thread(command.upgrade, config, "0019")
            async with engine.connect() as connection:
                rows = (
                    await connection.execute(
                        text("SELECT id, is_compliant, confidence FROM photo_verifications ORDER BY id")
                    )
                ).all()
        finally:
            await engine.dispose()
    assert [tuple(row) for row in rows] == [("ver_judged", False, 0.42), ("ver_pending", None, None)]


async def test_migrating_the_shared_database_again_is_harmless(database_url: str, db: Database) -> None:
    await asyncio.to_thread(migrate, database_url)
    tenant_id = new_tenant_id()
    row = await finished(db, tenant_id, completed(datetime.now(UTC)))
    await asyncio.to_thread(migrate, database_url)
    assert await state_of(db, row.id) == "completed"


# ------------------------------------------------------------------------------------------ finish and the ledger


async def test_finish_is_conditional_and_a_second_finish_writes_no_second_ledger_row(db: Database) -> None:
    tenant_id = new_tenant_id()
    now = datetime.now(UTC)
    row = await add(db, pending_row(tenant_id))

    assert await db.write(requests.finish, row, completed(now)) is True
    assert await db.write(requests.finish, row, completed(now + timedelta(seconds=1), price=9000)) is False

    assert await state_of(db, row.id) == "completed"
    ledger = await ledger_of(db, tenant_id)
    assert [(entry.request_id, entry.disposition, entry.unit_price_microdollars) for entry in ledger] == [
        (row.id, "billable", 15000)
    ]
    assert await spend(db, tenant_id, "test", now) == 15000


async def test_finishers_racing_on_a_batch_move_each_request_once_and_bill_it_once(db: Database) -> None:
    """Two workers finishing overlapping batches at the same moment (a redelivery during a rebalance)."""
    tenant_id = new_tenant_id()
    now = datetime.now(UTC)
    rows = [await add(db, pending_row(tenant_id)) for _ in range(6)]

    def finish(batch: list[PhoneRequest], price: int) -> Any:
        return db.write(requests.finish_many, [(row, completed(now, price=price)) for row in batch], {tenant_id: None})

    first, second = await asyncio.gather(finish(rows[:4], 1000), finish(rows[2:], 2000))
    assert first | second == {row.id for row in rows}
    assert not first & second
    ledger = await ledger_of(db, tenant_id)
    assert sorted(entry.request_id for entry in ledger) == sorted(row.id for row in rows)
    assert await spend(db, tenant_id, "test", now) == 1000 * len(first) + 2000 * len(second)


async def test_finish_from_another_state_only_moves_rows_in_that_state(db: Database) -> None:
    tenant_id = new_tenant_id()
    row = await add(db, pending_row(tenant_id, state="pending_reconciliation"))
    now = datetime.now(UTC)
    assert await db.write(requests.finish, row, completed(now)) is False  # from_state defaults to pending
    assert await db.write(requests.finish, row, completed(now), from_state="pending_reconciliation") is True
    assert await state_of(db, row.id) == "completed"
    assert len(await ledger_of(db, tenant_id)) == 1


async def test_a_refusal_writes_a_not_billable_ledger_row_and_no_spend(db: Database) -> None:
    tenant_id = new_tenant_id()
    now = datetime.now(UTC)
    row = await add(db, pending_row(tenant_id))
    refusal = requests.Outcome(
        state="rejected",
        completed_at=now,
        billing_disposition="not_billable",
        error_code="tenant_suspended",
        error_message="suspended",
    )
    assert await db.write(requests.finish, row, refusal)
    ledger = await ledger_of(db, tenant_id)
    assert [(entry.disposition, entry.unit_price_microdollars) for entry in ledger] == [("not_billable", 0)]
    assert await spend(db, tenant_id, "test", now) == 0
    stored = await db.read(requests.get_request, row.id)
    assert stored is not None
    assert stored.billable_at is None
    assert requests.failure_of(stored).error.code == "tenant_suspended"


async def test_pending_reconciliation_writes_no_ledger_row(db: Database) -> None:
    tenant_id = new_tenant_id()
    row = await add(db, pending_row(tenant_id))
    hold = requests.Outcome(
        state="pending_reconciliation",
        completed_at=datetime.now(UTC),
        billing_disposition="pending_reconciliation",
        error_code="ledger_unavailable",
        error_message="held",
    )
    assert await db.write(requests.finish, row, hold)
    assert await ledger_of(db, tenant_id) == []
    assert await state_of(db, row.id) == "pending_reconciliation"


async def test_the_ledger_primary_key_refuses_a_second_row_for_one_request(db: Database) -> None:
    tenant_id = new_tenant_id()
    row = await finished(db, tenant_id, completed(datetime.now(UTC)))

    second = LedgerEntry(
        request_id=row.id,
        tenant_id=tenant_id,
        environment="test",
        sku="core_phone",
        disposition="billable",
        unit_price_microdollars=15000,
        cache_hit=False,
        created_at=datetime.now(UTC),
    )
    with pytest.raises(IntegrityError):
        await db.write(insert(requests.LEDGER, second))
    assert len(await ledger_of(db, tenant_id)) == 1


# ------------------------------------------------------------------------------------------------ unique indexes


async def test_one_open_check_per_number_tenant_and_environment(db: Database) -> None:
    tenant_id = new_tenant_id()
    number = new_number()
    first = await add(db, pending_row(tenant_id, phone=number))

    with pytest.raises(IntegrityError):
        await add(db, pending_row(tenant_id, phone=number))

    other_environment = await add(db, pending_row(tenant_id, environment="live", phone=number))
    other_tenant = await add(db, pending_row(new_tenant_id(), phone=number))
    assert await db.read(requests.find_open_check, tenant_id, "test", number) == first.id
    assert await db.read(requests.find_open_check, tenant_id, "live", number) == other_environment.id

    assert await db.write(requests.finish, first, completed(datetime.now(UTC)))
    second = await add(db, pending_row(tenant_id, phone=number))  # the first is terminal: a new check may start
    assert await db.read(requests.find_open_check, tenant_id, "test", number) == second.id
    assert other_tenant.id != second.id


async def test_a_request_awaiting_reconciliation_also_holds_its_number(db: Database) -> None:
    tenant_id = new_tenant_id()
    number = new_number()
    await add(db, pending_row(tenant_id, phone=number, state="pending_reconciliation"))
    with pytest.raises(IntegrityError):
        await add(db, pending_row(tenant_id, phone=number))
    for terminal in ("completed", "failed", "rejected"):
        await add(db, pending_row(tenant_id, phone=number, state=terminal))  # terminal rows are not limited


async def test_an_idempotency_key_is_unique_per_tenant_and_environment(db: Database) -> None:
    tenant_id = new_tenant_id()
    first = await add(db, pending_row(tenant_id, idempotency_key="order-42"))

    with pytest.raises(IntegrityError):
        await add(db, pending_row(tenant_id, idempotency_key="order-42"))

    live = await add(db, pending_row(tenant_id, environment="live", idempotency_key="order-42"))
    other = await add(db, pending_row(new_tenant_id(), idempotency_key="order-42"))
    found = await db.read(requests.find_by_idempotency_key, tenant_id, "test", "order-42")
    found_live = await db.read(requests.find_by_idempotency_key, tenant_id, "live", "order-42")
    missing = await db.read(requests.find_by_idempotency_key, tenant_id, "test", "order-43")
    assert found is not None
    assert found.id == first.id
    assert found_live is not None
    assert found_live.id == live.id
    assert missing is None
    assert other.id not in (first.id, live.id)


# ------------------------------------------------------------------------------------------- spend and spend cap


async def test_monthly_spend_adds_up_per_environment_and_month(db: Database) -> None:
    tenant_id = new_tenant_id()
    november = datetime(2026, 11, 10, 12, tzinfo=UTC)
    december = datetime(2026, 12, 1, 0, 0, 1, tzinfo=UTC)
    await finished(db, tenant_id, completed(november, price=15000))
    await finished(db, tenant_id, completed(november + timedelta(days=5), price=9000))
    await finished(db, tenant_id, completed(november, billable=False, cache_hit=True))
    await finished(db, tenant_id, completed(november, price=4000), environment="live")
    await finished(db, tenant_id, completed(december, price=1000))

    assert await spend(db, tenant_id, "test", november) == 24000
    assert await spend(db, tenant_id, "live", november) == 4000
    assert await spend(db, tenant_id, "test", december) == 1000
    assert await spend(db, tenant_id, "test", datetime(2026, 10, 31, 23, 59, tzinfo=UTC)) == 0
    months = await rows(db, select(MonthlySpend).where(MonthlySpend.tenant_id == tenant_id))
    assert sorted((m.environment, m.month, m.amount_microdollars) for m in months) == [
        ("live", "2026-11", 4000),
        ("test", "2026-11", 24000),
        ("test", "2026-12", 1000),
    ]


async def test_a_sqlite_write_waits_for_a_lock_held_by_another_process_without_stalling_the_service(
    tmp_path: Path,
) -> None:
    """SQLite runs units of work on the event loop; one that meets the file lock held elsewhere (an operator's CLI,
    say) waits on a worker thread, and finishes once the lock is released, while the loop keeps serving.
    SQLite only, on a file of its own: PostgreSQL has no file lock."""
    path = tmp_path / "locked.db"
    await asyncio.to_thread(migrate, sqlite_url(path))
    db = Database(sqlite_url(path))
    tenant_id = new_tenant_id()
    row = await add(db, pending_row(tenant_id))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        write = asyncio.create_task(
            db.write(requests.finish_many, [(row, completed(datetime.now(UTC)))], {tenant_id: None})
        )
        for _ in range(10):
            await asyncio.sleep(0.01)  # the loop turns while the write waits
        assert not write.done()
        assert await state_of(db, row.id) == "pending"  # and reads still go through
    finally:
        holder.execute("COMMIT")
        holder.close()
    try:
        assert await write == {row.id}
        assert await state_of(db, row.id) == "completed"
        assert [entry.request_id for entry in await ledger_of(db, tenant_id)] == [row.id]
    finally:
        await db.dispose()


async def test_a_sqlite_write_waits_its_turn_at_the_writers_lock_another_process_holds(tmp_path: Path) -> None:
    """Processes writing one SQLite file take turns through a lock on a file beside it: a write that finds it held
    waits on a worker thread (the loop keeps serving reads), and goes as soon as it is released."""
    path = tmp_path / "turns.db"
    await asyncio.to_thread(migrate, sqlite_url(path))
    db = Database(sqlite_url(path))
    tenant_id = new_tenant_id()
    row = await add(db, pending_row(tenant_id))
    with open(f"{path}.write-lock", "a") as other_writer:  # what another process's writer holds while it writes
        fcntl.flock(other_writer, fcntl.LOCK_EX)
        try:
            write = asyncio.create_task(
                db.write(requests.finish_many, [(row, completed(datetime.now(UTC)))], {tenant_id: None})
            )
            for _ in range(10):
                await asyncio.sleep(0.01)
            assert not write.done()
            assert await state_of(db, row.id) == "pending"
        finally:
            fcntl.flock(other_writer, fcntl.LOCK_UN)
    try:
        assert await write == {row.id}
        assert await state_of(db, row.id) == "completed"
    finally:
        await db.dispose()


async def test_a_sqlite_writer_that_waits_goes_before_one_that_gives_the_lock_back_and_wants_it_again(
    tmp_path: Path,
) -> None:
    """A writer waiting for the writers' lock queues (`<db>.write-queue`): when the holder gives the lock back, a
    writer that wants it at once (a busy processors' process, round after round) goes after the one that waited."""
    path = tmp_path / "queue.db"
    await asyncio.to_thread(migrate, sqlite_url(path))
    waiting, greedy = Database(sqlite_url(path)), Database(sqlite_url(path))
    order: list[str] = []
    with open(f"{path}.write-lock", "a") as holder, open(f"{path}.write-queue", "a") as queue:
        fcntl.flock(holder, fcntl.LOCK_EX)  # a writer's transaction
        first = asyncio.create_task(waiting.write(lambda _connection: order.append("waited")))

        def queued() -> bool:
            try:
                fcntl.flock(queue, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True  # the waiting writer holds the queue
            fcntl.flock(queue, fcntl.LOCK_UN)
            return False

        for _ in range(500):
            if queued():
                break
            await asyncio.sleep(0.01)
        assert queued(), "the write did not queue for the writers' lock"
        fcntl.flock(holder, fcntl.LOCK_UN)  # the transaction ends; at once, another writer wants the lock
        second = asyncio.create_task(greedy.write(lambda _connection: order.append("wanted it again")))
        await asyncio.gather(first, second)
    try:
        assert order == ["waited", "wanted it again"]
    finally:
        await waiting.dispose()
        await greedy.dispose()


async def test_a_sqlite_write_cancelled_while_it_waits_its_turn_gives_the_turn_back_when_it_comes(
    tmp_path: Path,
) -> None:
    """A write whose caller gives up while it waits for the writers' lock (a request cancelled) writes nothing; the
    turn it queued for comes all the same, and is given back at once: the writers after it are not stuck."""
    path = tmp_path / "cancelled.db"
    await asyncio.to_thread(migrate, sqlite_url(path))
    db, after = Database(sqlite_url(path)), Database(sqlite_url(path))  # `after`: as another process's writer
    written: list[str] = []
    try:
        with open(f"{path}.write-lock", "a") as other_writer:
            fcntl.flock(other_writer, fcntl.LOCK_EX)
            cancelled = asyncio.create_task(db.write(lambda _connection: written.append("cancelled")))
            await asyncio.sleep(0.05)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            fcntl.flock(other_writer, fcntl.LOCK_UN)
        await asyncio.wait_for(after.write(lambda _connection: written.append("next")), timeout=5)
        assert written == ["next"]
    finally:
        await db.dispose()
        await after.dispose()


async def test_a_sqlite_database_copies_its_wal_back_into_the_database_file_while_it_writes(tmp_path: Path) -> None:
    """No commit checkpoints (it would hold the write lock through its fsyncs): the writing process copies the WAL
    back on a thread of its own, so the database file itself (read ignoring the WAL) soon holds what was written."""
    path = tmp_path / "checkpoints.db"
    await asyncio.to_thread(migrate, sqlite_url(path))
    db = Database(sqlite_url(path))
    tenant_id = new_tenant_id()
    try:
        await add(db, pending_row(tenant_id))
        file_only = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            for _ in range(100):
                found = file_only.execute("SELECT count(*) FROM phone_requests WHERE tenant_id = ?", (tenant_id,))
                if found.fetchone() == (1,):
                    break
                await asyncio.sleep(0.05)
                file_only.close()
                file_only = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
            else:
                raise AssertionError("the WAL was not copied back within 5 s")
        finally:
            file_only.close()
    finally:
        await db.dispose()


async def test_under_steady_writes_the_wal_is_started_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes that never pause leave no moment when a PASSIVE checkpoint has copied all of the WAL, which only then
    starts over: it grew without end (2.3 GB in a benchmark; here, unchanged, to 10 MiB). Past WAL_RESTART_FRAMES
    pages the checkpoint takes the writers' turn and starts it over, and the file is cut back to its size limit."""
    monkeypatch.setattr(db_module, "WAL_RESTART_FRAMES", 64)
    monkeypatch.setattr(db_module, "CHECKPOINT_EVERY_S", 0.01)
    path = tmp_path / "restarts.db"
    db = Database(sqlite_url(path))
    wal = Path(f"{path}-wal")
    sizes = []
    try:
        await db.write(lambda connection: connection.exec_driver_sql("CREATE TABLE filler (data BLOB)"))
        for _ in range(600):  # about 4 pages a write, back to back
            await db.write(
                lambda connection: connection.exec_driver_sql("INSERT INTO filler VALUES (randomblob(9000))")
            )
            sizes.append(wal.stat().st_size)
        cut_back = [after for before, after in itertools.pairwise(sizes) if after < before]
        assert cut_back, f"the WAL only grew, to {sizes[-1]} bytes"
        assert min(cut_back) <= 2 * 64 * 4096
        count = await db.read(lambda connection: connection.exec_driver_sql("SELECT count(*) FROM filler").scalar())
        assert count == 600
    finally:
        await db.dispose()


async def test_a_round_of_batched_writes_gives_way_to_a_writer_that_queues_after_the_unit_under_way(
    tmp_path: Path,
) -> None:
    """A round of many units holds SQLite's write lock for one transaction; when another process's writer queues for
    the lock, the round commits after the unit under way, the writer goes, and the rest follows."""
    path = tmp_path / "slice.db"
    await asyncio.to_thread(migrate, sqlite_url(path))
    db = Database(sqlite_url(path))
    writes = BatchedWrites(db)
    order: list[str] = []
    other_queued = threading.Event()

    def other_writer() -> None:  # another process's writer: its own Database, its own event loop
        def note(_connection: Connection) -> None:
            order.append("other")

        async def write() -> None:
            other = Database(sqlite_url(path))
            try:
                await other.write(note)
            finally:
                await other.dispose()

        asyncio.run(write())

    def unit(connection: Connection, index: int) -> None:
        if index == 0:
            threading.Thread(target=other_writer, daemon=True).start()
            with open(f"{path}.write-queue", "a") as queue:
                while not other_queued.is_set():  # the other writer holds the queue once it waits for the lock
                    try:
                        fcntl.flock(queue, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        fcntl.flock(queue, fcntl.LOCK_UN)
                        time.sleep(0.001)
                    except BlockingIOError:
                        other_queued.set()
        time.sleep(0.004)
        order.append(f"unit {index}")

    try:
        await asyncio.gather(*(writes.write(unit, index) for index in range(10)))
        for _ in range(500):
            if "other" in order:
                break
            await asyncio.sleep(0.01)
        assert order == ["unit 0", "other", *(f"unit {index}" for index in range(1, 10))]
    finally:
        await db.dispose()


async def test_concurrent_billing_adds_up_exactly(db: Database) -> None:
    tenant_id = new_tenant_id()
    now = datetime.now(UTC)
    rows = [await add(db, pending_row(tenant_id)) for _ in range(10)]

    async def bill(row: PhoneRequest) -> bool:
        return await db.write(requests.finish, row, completed(now, price=1500))

    assert await asyncio.gather(*(bill(row) for row in rows)) == [True] * 10
    assert await spend(db, tenant_id, "test", now) == 15000


async def test_passing_the_spend_cap_raises_and_the_rollback_leaves_nothing_written(db: Database) -> None:
    tenant_id = new_tenant_id()
    now = datetime.now(UTC)
    await finished(db, tenant_id, completed(now, price=15000))
    row = await add(db, pending_row(tenant_id))

    with pytest.raises(requests.SpendCapReached):
        await db.write(requests.finish, row, completed(now, price=15000), spend_cap=29999)

    assert await state_of(db, row.id) == "pending"
    assert row.id not in {entry.request_id for entry in await ledger_of(db, tenant_id)}
    assert len(await ledger_of(db, tenant_id)) == 1
    assert await spend(db, tenant_id, "test", now) == 15000

    assert await db.write(
        requests.finish, row, completed(now, price=15000), spend_cap=30000
    )  # reaching the cap exactly is allowed
    assert await spend(db, tenant_id, "test", now) == 30000
    assert len(await ledger_of(db, tenant_id)) == 2


async def test_the_spend_cap_does_not_apply_to_free_outcomes(db: Database) -> None:
    tenant_id = new_tenant_id()
    now = datetime.now(UTC)
    row = await add(db, pending_row(tenant_id))
    assert await db.write(requests.finish, row, completed(now, billable=False, cache_hit=True), spend_cap=0)
    assert await spend(db, tenant_id, "test", now) == 0


# ----------------------------------------------------------------------------------------------------- usage


async def test_usage_sums_billable_rows_cache_hits_and_amounts_per_sku_within_the_period(db: Database) -> None:
    tenant_id = new_tenant_id()
    start = datetime(2026, 11, 1, tzinfo=UTC)
    end = datetime(2026, 12, 1, tzinfo=UTC)
    inside = datetime(2026, 11, 15, 8, tzinfo=UTC)

    await finished(db, tenant_id, completed(start, price=15000))  # the start is inside
    await finished(db, tenant_id, completed(inside, price=9000))
    await finished(db, tenant_id, completed(inside, billable=False, cache_hit=True))
    await finished(db, tenant_id, completed(inside, billable=False, cache_hit=True))
    await finished(db, tenant_id, completed(inside, price=500, sku="extra_sku"))
    refused = await add(db, pending_row(tenant_id))
    rejected = requests.Outcome(state="rejected", completed_at=inside, billing_disposition="not_billable")
    await db.write(requests.finish, refused, rejected)
    await finished(db, tenant_id, completed(end, price=777))  # the end is outside
    await finished(db, tenant_id, completed(start - timedelta(microseconds=1), price=888))
    await finished(db, tenant_id, completed(inside, price=999), environment="live")
    await finished(db, new_tenant_id(), completed(inside, price=111))

    usage = await db.read(requests.usage, tenant_id, "test", start, end)
    live = await db.read(requests.usage, tenant_id, "live", start, end)
    empty = await db.read(requests.usage, tenant_id, "test", end + timedelta(days=1), end + timedelta(days=2))

    assert usage == [
        requests.SkuUsage("core_phone", billable_requests=2, cache_hits=2, amount_microdollars=24000),
        requests.SkuUsage("extra_sku", billable_requests=1, cache_hits=0, amount_microdollars=500),
    ]
    assert live == [requests.SkuUsage("core_phone", 1, 0, 999)]
    assert empty == []


# ------------------------------------------------------------------------------------------ free re-check window


async def test_last_billable_checks_respect_the_24_hour_window(db: Database) -> None:
    tenant_id = new_tenant_id()
    number = new_number()
    now = datetime.now(UTC)
    window = now - timedelta(hours=24)

    async def last_check(since: datetime, tenant: str = tenant_id, environment: str = "test") -> Any:
        wanted = (tenant, environment, number)
        found = await db.read(requests.last_billable_checks, [wanted], since)
        return found.get(wanted)

    old = await finished(db, tenant_id, completed(now - timedelta(hours=25)), phone=number)
    assert await last_check(window) is None
    older_window = await last_check(now - timedelta(hours=26))
    assert older_window is not None
    assert older_window.id == old.id

    recent = await finished(db, tenant_id, completed(now - timedelta(hours=23)), phone=number)
    await finished(db, tenant_id, completed(now - timedelta(hours=1), billable=False, cache_hit=True), phone=number)
    await finished(db, tenant_id, completed(now - timedelta(hours=2)), phone=number, environment="live")
    await finished(db, tenant_id, completed(now - timedelta(hours=2)), phone=new_number())

    found = await last_check(window)
    other_tenant = await last_check(window, tenant=new_tenant_id())
    assert found is not None
    assert found.id == recent.id  # the free re-check (billable_at NULL) is not an anchor
    assert found.billable_at == found.completed_at
    assert other_tenant is None


# ------------------------------------------------------------------------------------------------- the sweeper


def claim_stale(connection: Connection, cutoff: datetime, clock: datetime) -> set[str]:
    claimed = outbox.claim_stale(
        connection, requests.REQUESTS, [requests.REQUESTS.c.id], published_before=cutoff, now=clock, limit=100_000
    )
    return {row.id for row in claimed}


async def test_claim_stale_takes_old_pending_rows_and_only_one_of_two_claims_wins(db: Database) -> None:
    tenant_id = new_tenant_id()
    clock = datetime.now(UTC) + timedelta(days=30)  # a clock of our own, ahead of any real sweeper's
    stale = await add(db, pending_row(tenant_id, published_at=clock - timedelta(minutes=5)))
    fresh = await add(db, pending_row(tenant_id, published_at=clock))
    done = await finished(db, tenant_id, completed(clock))
    cutoff = clock - timedelta(seconds=30)

    first, second = await asyncio.gather(db.write(claim_stale, cutoff, clock), db.write(claim_stale, cutoff, clock))
    assert [stale.id in first, stale.id in second].count(True) == 1
    assert fresh.id not in first | second
    assert done.id not in first | second
    # claimed: stamped with the new publish time, so no sweeper takes it again before it is stale again
    assert stale.id not in await db.write(claim_stale, cutoff, clock + timedelta(seconds=1))
    reclaimed = await db.read(requests.get_request, stale.id)
    assert reclaimed is not None
    assert reclaimed.published_at == clock
    assert reclaimed.state == "pending"


async def test_a_finished_row_cannot_be_claimed(db: Database) -> None:
    tenant_id = new_tenant_id()
    row = await add(db, pending_row(tenant_id, published_at=datetime.now(UTC) - timedelta(hours=1)))
    assert await db.write(requests.finish, row, completed(datetime.now(UTC)))
    assert row.id not in await db.write(claim_stale, datetime.now(UTC), datetime.now(UTC) + FUTURE * 2)


# ------------------------------------------------------------------------------------------------------ leases


async def test_a_lease_goes_to_one_of_two_asking_at_once_and_to_another_only_once_its_time_ran_out(
    db: Database,
) -> None:
    name = f"test {uuid.uuid4()}"
    now = datetime.now(UTC)
    until = now + timedelta(seconds=30)

    first, second = await asyncio.gather(
        db.write(leases.take, name, "first", now=now, until=until),
        db.write(leases.take, name, "second", now=now, until=until),
    )
    assert [first, second].count(True) == 1
    holder, other = ("first", "second") if first else ("second", "first")
    assert await db.write(leases.take, name, holder, now=now, until=until + timedelta(seconds=1)), "renewed"
    assert not await db.write(leases.take, name, other, now=until, until=until + timedelta(seconds=30))
    later = until + timedelta(seconds=1)
    assert await db.write(leases.take, name, other, now=later, until=later + timedelta(seconds=30)), "ran out"
    assert not await db.write(leases.take, name, holder, now=later, until=later + timedelta(seconds=30))

    await db.write(leases.release, name, holder, now=later)  # not the holder's any more: no change
    assert not await db.write(leases.take, name, holder, now=later, until=later + timedelta(seconds=30))
    await db.write(leases.release, name, other, now=later)
    assert await db.write(leases.take, name, holder, now=later, until=later + timedelta(seconds=30)), "given up"


# --------------------------------------------------------------------------------------------------- datetimes


async def test_datetimes_come_back_timezone_aware_utc(db: Database) -> None:
    new_york = timezone(timedelta(hours=-5))
    created = datetime(2026, 3, 8, 10, 30, 15, 123456, tzinfo=new_york)
    tenant_id = new_tenant_id()
    row = await add(db, pending_row(tenant_id, created_at=created, published_at=created + timedelta(days=3650)))
    await db.write(requests.finish, row, completed(created + timedelta(minutes=1)))
    real_tenant = await db.write(tenants.create_tenant, "aware")
    key_id, _ = await db.write(tenants.create_key, real_tenant, "test")
    await db.write(tenants.revoke_key, key_id)

    stored = await db.read(requests.get_request, row.id)
    [raw_created] = await rows(db, text("SELECT created_at FROM phone_requests WHERE id = :id").bindparams(id=row.id))
    (entry,) = await rows(db, select(LedgerEntry).where(LedgerEntry.request_id == row.id))
    tenant = next(tenant for tenant in await db.read(tenants.list_tenants) if tenant.id == real_tenant)
    key = await db.read(keys.owner_key, "phone", real_tenant, key_id)
    assert stored is not None
    assert tenant is not None
    assert key is not None
    values = [
        stored.created_at,
        stored.published_at,
        stored.completed_at,
        stored.billable_at,
        entry.created_at,
        tenant.created_at,
        key.created_at,
        key.revoked_at,
    ]
    for value in values:
        assert isinstance(value, datetime)
        assert value.tzinfo is not None
        assert value.utcoffset() == timedelta(0)
    assert stored.created_at == created
    assert (stored.created_at.hour, stored.created_at.microsecond) == (15, 123456)
    assert stored.completed_at == created + timedelta(minutes=1)
    assert entry.created_at == stored.completed_at
    assert str(raw_created[0]).startswith("2026-03-08 15:30:15.123456")  # stored as UTC wall time


# ---------------------------------------------------------------------------------------------- keys and prices


async def test_find_key_owner_and_revoke_key(db: Database) -> None:
    tenant_id = await db.write(tenants.create_tenant, "keys", spend_cap_microdollars=50000)
    key_id, key = await db.write(tenants.create_key, tenant_id, "test", ["verify"])
    second_id, second = await db.write(tenants.create_key, tenant_id, "live")

    assert key.startswith("sy_test_")
    assert second.startswith("sy_live_")
    owner = await db.read(tenants.find_key_owner, key)
    live_owner = await db.read(tenants.find_key_owner, second)
    stored = await db.read(keys.owner_key, "phone", tenant_id, key_id)
    assert owner == tenants.KeyOwner(
        key_id=key_id,
        tenant_id=tenant_id,
        environment="test",
        scopes=frozenset({"verify"}),
        tenant_status="active",
        allowed_skus=frozenset({"core_phone"}),
        spend_cap_microdollars=50000,
    )
    assert live_owner is not None
    assert live_owner.environment == "live"
    assert live_owner.scopes == frozenset(tenants.ALL_SCOPES)
    assert stored is not None
    assert stored.key_hash == hash_key(key)
    assert key not in (stored.key_hash, stored.id)  # only the hash is kept

    assert await db.write(tenants.revoke_key, key) is True
    assert await db.write(tenants.revoke_key, key) is False  # already revoked
    assert await db.write(tenants.revoke_key, second_id) is True  # by key id
    assert await db.write(tenants.revoke_key, "sy_test_" + "0" * 40) is False
    assert await db.read(tenants.find_key_owner, key) is None
    assert await db.read(tenants.find_key_owner, second) is None
    assert await db.read(tenants.find_key_owner, "sy_test_" + "0" * 40) is None


async def test_key_owner_reflects_the_tenant_status(db: Database) -> None:
    tenant_id = await db.write(tenants.create_tenant, "status")
    _, key = await db.write(tenants.create_key, tenant_id, "test")
    assert await db.write(tenants.update_tenant, tenant_id, status="suspended")
    assert not await db.write(tenants.update_tenant, new_tenant_id(), status="suspended")
    owner = await db.read(tenants.find_key_owner, key)
    assert owner is not None
    assert owner.tenant_status == "suspended"


async def test_create_key_refuses_an_unknown_tenant_or_environment(db: Database) -> None:
    with pytest.raises(LookupError):
        await db.write(tenants.create_key, new_tenant_id(), "test")
    tenant_id = await db.write(tenants.create_tenant, "env")
    with pytest.raises(ValueError, match="environment"):
        await db.write(tenants.create_key, tenant_id, "prod")


async def test_set_price_and_unit_price_with_its_default(db: Database) -> None:
    tenant_id = await db.write(tenants.create_tenant, "prices")
    assert await db.read(tenants.unit_price, tenant_id, "core_phone") == 15000
    await db.write(tenants.set_price, tenant_id, "core_phone", 9000)
    assert await db.read(tenants.unit_price, tenant_id, "core_phone") == 9000
    await db.write(tenants.set_price, tenant_id, "core_phone", 12000)  # a second price replaces the first
    assert await db.read(tenants.unit_price, tenant_id, "core_phone") == 12000
    assert await db.read(tenants.unit_price, new_tenant_id(), "core_phone") == 15000
    with pytest.raises(LookupError):
        await db.write(tenants.set_price, new_tenant_id(), "core_phone", 1)
