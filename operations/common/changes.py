"""Running a change: a unit of work that records webhook events (their rows are the outbox), then, once it has
committed, the one place that announces them to the fan-out. A lost announcement only delays a delivery: the events
sweeper announces what is left pending."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog
from sqlalchemy.engine import Connection

from storage.common.batching import BatchedWrites
from storage.common.db import Database

log = structlog.get_logger("signalyard.operations")

PublishEvent = Callable[[str, str], Awaitable[None]]
"""publish(owner id, webhook event id): the event's message on its service's events topic."""
T = TypeVar("T")


async def announce(publish: PublishEvent, owner_id: str, event_ids: Sequence[str]) -> None:
    """Announce webhook events a committed change recorded; one whose message fails is left to the events sweeper."""
    if not event_ids:
        return
    outcomes = await asyncio.gather(*(publish(owner_id, event_id) for event_id in event_ids), return_exceptions=True)
    failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    if failed:  # committed: the rows stay pending and the sweeper announces them
        log.warning("webhook_announce_failed", count=len(failed), error=type(failed[0]).__name__)


class Changes:
    """Changes of one service: each a unit of work given `recorded` (the list it adds the ids of the webhook events it
    records to) and `now`, committed with concurrent callers' changes (one transaction per round), then announced."""

    def __init__(
        self,
        db: Database,
        publish: PublishEvent,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.db = db
        self.publish = publish
        self.clock = clock
        self.writes = BatchedWrites(db, defer=16)

    async def run(self, owner_id: str, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`work(connection, *args, **kwargs, recorded=..., now=...)` in one transaction, then its events announced."""
        now = self.clock()

        def unit(connection: Connection) -> tuple[T, list[str]]:
            recorded: list[str] = []  # anew at every attempt: a unit run again must not announce twice
            kwargs_: dict[str, Any] = dict(kwargs, recorded=recorded, now=now)
            return work(connection, *args, **kwargs_), recorded

        result, recorded = await self.writes.write(unit)
        await announce(self.publish, owner_id, recorded)
        return result
