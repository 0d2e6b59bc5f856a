"""Group commit: many concurrent callers' small writes or reads done as one statement per round."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class GroupCommit(Generic[Item, Result]):
    """`await submit(item)` queues the item; `flush` runs over everything queued while the previous round ran.

    Under load each round carries many items (one transaction, one round trip); alone, an item goes at once.
    `flush` returns one result per item, in order; if it raises, every caller of that round gets the error.
    """

    def __init__(self, flush: Callable[[list[Item]], Awaitable[Sequence[Result]]]) -> None:
        self._flush = flush
        self._queue: list[tuple[Item, asyncio.Future[Result]]] = []
        self._drain_task: asyncio.Task[None] | None = None
        """Held so the running drain is not garbage-collected (the event loop keeps only a weak reference)."""

    async def submit(self, item: Item) -> Result:
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._drain_task is None:
            self._drain_task = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                round_, self._queue = self._queue, []
                try:
                    results = await self._flush([item for item, _ in round_])
                except Exception as error:  # every caller of this round sees the failure
                    for _, future in round_:
                        if not future.done():
                            future.set_exception(error)
                    continue
                for (_, future), result in zip(round_, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            self._drain_task = None
