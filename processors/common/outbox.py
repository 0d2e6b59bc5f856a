"""The outbox sweeper every service runs: rows left `pending` past a deadline are published again, so a lost message
or a dead processor delays work but never loses it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import structlog
from sqlalchemy import Column, Table

from processors.common.metrics import OUTBOX_PENDING
from storage.common import outbox
from storage.common.db import Database

log = structlog.get_logger("signalyard.processors")

Publish = Callable[[msgspec.Struct, str, bytes], Awaitable[None]]
"""publish(message, topic, partition key), bounded in time by the platform."""


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
            published = await self._publish_all(rows)
            sent += published
            if published < len(rows) or len(rows) < self.batch:
                break
        if sent:
            log.info("sweeper_republished", service=self.box.service, count=sent)
        return sent

    async def _publish_all(self, rows: list[Any]) -> int:
        """Publish concurrently; on the first failure stop starting new ones and return how many went out."""
        slots = asyncio.Semaphore(self.in_flight)
        failed = asyncio.Event()
        sent = 0

        async def publish(row: Any) -> None:
            nonlocal sent
            async with slots:
                if failed.is_set():
                    return
                try:
                    async with asyncio.timeout(self.timeout_s):
                        await self.publish(*self.box.message(row))
                except Exception:
                    if not failed.is_set():
                        log.warning("sweep_publish_failed", service=self.box.service, exc_info=True)
                    failed.set()
                    return
                sent += 1

        await asyncio.gather(*(publish(row) for row in rows))
        return sent


async def sweep_forever(sweeper: Sweeper, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        try:
            await sweeper.sweep()
        except Exception:  # a sweep that fails is retried at the next tick
            log.exception("sweep_failed", service=sweeper.box.service)
