"""The outbox sweeper every service runs: rows left `pending` past a deadline are published again, so a lost message
or a dead processor delays work but never loses it; and the relay, publisher of an outbox none of ours consumes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import structlog
from sqlalchemy import Column, Table

from processors.common.metrics import OUTBOX_PENDING
from storage.common import leases, outbox
from storage.common.db import Database
from wire.ids import new_uuid

log = structlog.get_logger("signalyard.processors")

Publish = Callable[[msgspec.Struct, str, bytes], Awaitable[None]]
"""publish(message, topic, partition key), bounded in time by the platform."""
PublishTogether = Callable[[Sequence[tuple[msgspec.Struct, str, bytes]]], Awaitable[None]]
"""publish_together([(message, topic, partition key), ...]): all acknowledged, or it raises; bounded in time by the
platform."""


@dataclass(frozen=True, slots=True)
class Outbox:
    """A service's outbox: its request table, the columns its messages are built from, and how."""

    service: str
    table: Table
    columns: Sequence[Column[Any]]
    message: Callable[[Any], tuple[msgspec.Struct, str, bytes]]
    """row -> (message, topic, partition key)."""


class Sweeper:
    """One pass claims stale rows in batches and publishes each batch concurrently, at most `in_flight` at a time.
    The first publish that fails ends the pass (the broker is likely down): a broker outage costs one publish timeout
    per pass, not one per row; the rows it claimed are tried again once they are stale again."""

    def __init__(
        self,
        db: Database,
        box: Outbox,
        publish: Publish,
        *,
        after: timedelta,
        ensure_topics: Callable[[], Awaitable[None]] | None = None,
        timeout_s: float = 5,
        batch: int = 500,
        in_flight: int = 64,
    ) -> None:
        self.db = db
        self.box = box
        self.publish = publish
        self.after = after
        self.ensure_topics = ensure_topics
        """Called before the first re-publish of a pass: stale rows may mean the broker lost its topics."""
        self.timeout_s = timeout_s
        self.batch = batch
        self.in_flight = in_flight

    async def sweep(self) -> int:
        """One pass; returns how many messages were published again."""
        now = datetime.now(UTC)
        table = self.box.table
        pending = await self.db.read(outbox.count_pending, table)
        OUTBOX_PENDING.labels(self.box.service).set(pending)
        sent = 0
        while pending:
            rows = await self.db.write(
                outbox.claim_stale,
                self.box.table,
                self.box.columns,
                published_before=now - self.after,
                now=now,
                limit=self.batch,
            )
            if not rows:
                break
            if sent == 0 and self.ensure_topics is not None:
                async with asyncio.timeout(self.timeout_s):
                    await self.ensure_topics()
            published = len(await publish_rows(self.box, self.publish, rows, self.in_flight, self.timeout_s))
            sent += published
            if published < len(rows) or len(rows) < self.batch:
                break
        if sent:
            log.info("sweeper_republished", service=self.box.service, count=sent)
        return sent


async def publish_rows(box: Outbox, publish: Publish, rows: list[Any], in_flight: int, timeout_s: float) -> list[Any]:
    """Publish the rows' messages concurrently, at most `in_flight` at a time; on the first failure stop starting new
    ones. Returns the rows the broker acknowledged."""
    slots = asyncio.Semaphore(in_flight)
    failed = asyncio.Event()
    sent: list[Any] = []

    async def one(row: Any) -> None:
        async with slots:
            if failed.is_set():
                return
            try:
                async with asyncio.timeout(timeout_s):
                    await publish(*box.message(row))
            except Exception:
                if not failed.is_set():
                    log.warning("outbox_publish_failed", service=box.service, exc_info=True)
                failed.set()
                return
            sent.append(row)

    await asyncio.gather(*(one(row) for row in rows))
    return sent


class Relay:
    """The publisher of an outbox that no processor of ours consumes (the helpdesk's activity log, read by stream
    consumers only). One relay at a time publishes, under a lease named for the outbox that it renews at each batch:
    it reads the oldest pending rows, publishes them together, and marks them `published` once the broker has
    acknowledged them all. A relay whose publish fails leaves them pending for its next pass; one that dies leaves
    them, and its lease, to another relay once the lease ends. So a row is published at least once, and written once
    after its insert (a claim on each row, which let replicas publish side by side, wrote each twice: on PostgreSQL
    the most costly writes of a reply, bench/README.md)."""

    def __init__(
        self,
        db: Database,
        box: Outbox,
        publish: PublishTogether,
        *,
        lease: timedelta = timedelta(seconds=30),
        batch: int = 500,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.db = db
        self.box = box
        self.publish = publish
        self.clock = clock
        self.lease = lease
        self.batch = batch
        self.holder = new_uuid()

    async def relay(self) -> int:
        """One pass; returns how many rows were published. It asks whether a row is pending (a read) before it takes
        the lease (a write): an idle relay's passes write nothing."""
        sent = 0
        if not await self.db.read(outbox.any_stale, self.box.table, published_before=self.clock()):
            return sent
        while True:
            now = self.clock()
            rows = await self.db.write(
                outbox.leased_pending,
                self.box.table,
                self.box.columns,
                lease=self.box.service,
                holder=self.holder,
                now=now,
                until=now + self.lease,
                limit=self.batch,
            )
            if not rows:
                return sent
            try:
                await self.publish([self.box.message(row) for row in rows])
            except Exception:
                log.warning("outbox_publish_failed", service=self.box.service, count=len(rows), exc_info=True)
                return sent
            await self.db.write(outbox.mark_published, self.box.table, [row.id for row in rows])
            sent += len(rows)
            if len(rows) < self.batch:
                return sent

    async def release(self) -> None:
        """Give the lease up (a relay that stops), so that another takes it at once rather than when it ends."""
        await self.db.write(leases.release, self.box.service, self.holder, now=self.clock())


async def _passes(one_pass: Callable[[], Awaitable[int]], every_s: float, failed: str, service: str) -> None:
    """`one_pass()` at once, then every `every_s`; a pass that fails is logged as `failed` and tried at the next."""
    while True:
        try:
            await one_pass()
        except Exception:
            log.exception(failed, service=service)
        await asyncio.sleep(every_s)


async def relay_forever(relay: Relay, every_s: float) -> None:
    try:
        await _passes(relay.relay, every_s, "relay_failed", relay.box.service)
    finally:
        with contextlib.suppress(Exception):  # the database may be gone: then the lease runs out on its own
            async with asyncio.timeout(2):
                await relay.release()


async def sweep_forever(sweeper: Sweeper, every_s: float) -> None:
    """A pass at once (what a process that died left pending is counted, in `signalyard_outbox_pending`, and sent
    again as soon as it is stale), then one every `every_s`."""
    await _passes(sweeper.sweep, every_s, "sweep_failed", sweeper.box.service)
