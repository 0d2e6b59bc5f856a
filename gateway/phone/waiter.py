"""Waiting for one's own results: futures resolved from the completed topic, then confirmed from storage."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import msgspec
from faststream.kafka import KafkaRouter


class CompletedRef(msgspec.Struct):
    """The part of a VerificationCompleted message the gateway needs (the rest is read from storage)."""

    request_id: str


class ResultWaiter:
    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Future[None]]] = {}

    @contextmanager
    def expecting(self, request_id: str) -> Iterator[asyncio.Future[None]]:
        """A future resolved when the request's completion is announced; register it before publishing."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(request_id, set())
        waiting.add(future)
        try:
            yield future
        finally:
            waiting.discard(future)
            if not waiting and self._waiting.get(request_id) is waiting:
                del self._waiting[request_id]

    def resolve(self, request_id: str) -> None:
        for future in self._waiting.pop(request_id, ()):
            if not future.done():
                future.set_result(None)

    def router(self, completed_topic: str) -> KafkaRouter:
        """A subscriber without a consumer group: every gateway instance sees every completion."""
        router = KafkaRouter()

        @router.subscriber(
            completed_topic,
            batch=True,
            fetch_max_wait_ms=5,
            batch_timeout_ms=5,
            auto_offset_reset="latest",
            title="phone-gateway-results",
        )
        async def on_verification_completed(batch: list[CompletedRef]) -> None:
            for ref in batch:
                self.resolve(ref.request_id)

        return router


async def within(future: asyncio.Future[None], timeout_s: float) -> None:
    """Wait for `future` at most `timeout_s` seconds; running out of time is not an error."""
    with suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(future), timeout_s)
