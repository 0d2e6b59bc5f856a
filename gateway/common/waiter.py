"""Waiting for one's own results: futures resolved from the completed topic (fetched only while someone waits), each
confirmed from storage, and the publish -> wait -> answer-from-storage step every service's accepting route ends
with."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
import structlog
from faststream.kafka import KafkaRouter
from sqlalchemy.engine import Connection

from storage.common.db import Database
from topics.common.client import FETCH_MAX_WAIT_MS, batch_subscription
from topics.common.pacing import DemandPacer, pace

log = structlog.get_logger("signalyard.gateway")

LoadRows = Callable[[Connection, list[str]], Mapping[str, Any]]
"""load(connection, request ids) -> the stored row of each id found (a row has a `state`)."""


class ResultWaiter:
    """Maps request ids to the callers waiting for them; one storage read confirms a whole batch of completions."""

    def __init__(
        self,
        db: Database,
        load: LoadRows,
        open_states: Collection[str] = ("pending",),
        id_field: str = "request_id",
    ) -> None:
        self.db = db
        self.load = load
        self.open_states = open_states
        """States of a row that is not finished yet (an announcement that finds one is stale)."""
        self.id_field = id_field
        self.ref = msgspec.defstruct("CompletedRef", [(id_field, str)])
        """The part of a completion message the gateway needs: the id in its `id_field` (the rest is in storage)."""
        self._waiting: dict[str, set[asyncio.Future[Any]]] = {}
        self._pacers: list[DemandPacer] = []

    @contextmanager
    def expecting(self, request_id: str) -> Iterator[asyncio.Future[Any]]:
        """A future resolved with the request's stored row once it is finished; register before publishing."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        first = not self._waiting
        waiting = self._waiting.setdefault(request_id, set())
        waiting.add(future)
        if first:
            self._demand_changed()  # fetch again now, before the request is published
        try:
            yield future
        finally:
            waiting.discard(future)
            if not waiting and self._waiting.get(request_id) is waiting:
                del self._waiting[request_id]
            if not self._waiting:
                self._demand_changed()  # nobody waits: stop fetching

    def _demand_changed(self) -> None:
        for pacer in self._pacers:
            pacer.changed()

    async def outcome(
        self, request_id: str, wait_s: float, publish: Callable[[], Awaitable[None]] | None = None
    ) -> Any:
        """The request's stored row once it is finished, or as it stands after `wait_s`.

        With `publish` (a request just accepted, or one run again) its work order is published first; should that
        fail, the row, which is the outbox, is answered as it stands at once (the sweeper publishes it again later
        than anyone would wait). Without `publish` (a replay) the order is already out, and the request may have
        finished before this started listening."""
        with self.expecting(request_id) as finished:
            if publish is not None:
                try:
                    await publish()
                except Exception:
                    log.exception("publish_failed", request_id=request_id)
                    return await self.stored(request_id)
            else:
                row = await self.stored(request_id)
                if row.state not in self.open_states:
                    return row
            return await within(finished, wait_s) or await self.stored(request_id)

    async def stored(self, request_id: str) -> Any:
        """The request's row as it is stored now."""
        return (await self.db.read(self.load, [request_id]))[request_id]

    async def confirm(self, request_ids: list[str]) -> None:
        wanted = [request_id for request_id in request_ids if request_id in self._waiting]
        if not wanted:
            return
        rows = await self.db.read(self.load, wanted)
        for request_id, row in rows.items():
            if row.state in self.open_states:
                continue  # a stale announcement; the real one is still to come
            for future in self._waiting.pop(request_id, ()):
                if not future.done():
                    future.set_result(row)

    def router(self, completed_topic: str, title: str, *, wait_ms: int = FETCH_MAX_WAIT_MS) -> KafkaRouter:
        """A subscriber without a consumer group: every gateway instance sees every completion, `wait_ms` after it
        is published at most (see `batch_subscription`). It fetches only while a caller waits (`DemandPacer`): idle,
        it costs the broker nothing, and what was published meanwhile is read when fetching resumes."""
        router = KafkaRouter()
        pacer = DemandPacer(lambda: bool(self._waiting))
        self._pacers.append(pacer)
        subscriber = router.subscriber(
            completed_topic,
            **batch_subscription(self.ref, wait_ms=wait_ms),
            auto_offset_reset="latest",
            title=title,
        )
        pace(subscriber, pacer)

        @subscriber
        async def on_completed(batch: list[Any]) -> None:
            await self.confirm([getattr(ref, self.id_field) for ref in batch])

        return router


async def within(future: asyncio.Future[Any], timeout_s: float) -> Any:
    """The future's result if it comes within `timeout_s` seconds, else None."""
    try:
        async with asyncio.timeout(timeout_s):
            return await asyncio.shield(future)
    except TimeoutError:
        return None
