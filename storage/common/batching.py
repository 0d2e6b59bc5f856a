"""Group commit: many concurrent callers' small writes or reads done as one statement, or one transaction, per round."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast

from sqlalchemy.engine import Connection

from storage.common import later
from storage.common.db import Database

Item = TypeVar("Item")
Result = TypeVar("Result")
T = TypeVar("T")
P = ParamSpec("P")
GATHER_STEP_S = 0.002
"""How long a gathering round waits for the next item before it goes with what it has."""


class GroupCommit(Generic[Item, Result]):
    """`await submit(item)` queues the item; `flush` runs over everything queued while the previous round ran.

    Under load each round carries many items (one transaction, one round trip), at most `most` of them when given;
    alone, an item goes at once. A group that gathers (`gather_s`) makes fewer, larger rounds while items keep
    coming: a round that finds at least two items queued, and fewer than `enough`, waits for more a step
    (`GATHER_STEP_S`) at a time, for as long as each step brings one, up to `gather_s`; a lone caller never waits, nor
    one whose round has `enough`. `flush` returns one result per item, in order; if it raises, every caller of that
    round gets the error.
    """

    def __init__(
        self,
        flush: Callable[[list[Item]], Awaitable[Sequence[Result]]],
        *,
        most: int | None = None,
        gather_s: float = 0.0,
        enough: int = 1,
    ) -> None:
        self._flush = flush
        self._most = most
        self._gather_s = gather_s
        self._enough = enough
        self._gathered: asyncio.Event | None = None
        """Set once `enough` items are queued, while a round gathers."""
        self._queue: list[tuple[Item, asyncio.Future[Result]]] = []
        self._drain_task: asyncio.Task[None] | None = None
        """Held so the running drain is not garbage-collected (the event loop keeps only a weak reference)."""

    async def submit(self, item: Item) -> Result:
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._gathered is not None and len(self._queue) >= self._enough:
            self._gathered.set()
        if self._drain_task is None:
            self._drain_task = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                if 1 < len(self._queue) < self._enough and self._gather_s > 0:
                    await self._gather()
                most = self._most or len(self._queue)
                round_, self._queue = self._queue[:most], self._queue[most:]
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

    async def _gather(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._gather_s
        while len(self._queue) < self._enough:
            queued, step = len(self._queue), min(GATHER_STEP_S, deadline - loop.time())
            if step <= 0:
                return
            self._gathered = asyncio.Event()
            try:
                async with asyncio.timeout(step):
                    await self._gathered.wait()
            except TimeoutError:
                pass
            finally:
                self._gathered = None
            if len(self._queue) == queued:
                return  # nothing came for a step: the burst is over


@dataclass(frozen=True, slots=True)
class _Raised:
    error: Exception


class BatchedWrites:
    """Units of work of concurrent callers run together: each round's units in one transaction, one after the other,
    so that under load a round pays one BEGIN and COMMIT (and on SQLite one turn at the write lock) for many callers.

    A round that raises is undone whole and run again unit by unit, each in a transaction of its own: one caller's
    error stays that caller's, and the others' writes stand. So a unit may run twice, and must be a plain function of
    its arguments (it is: see `Database`).

    `most` bounds a round's units: on SQLite a round holds the database's one write lock from its first write to its
    commit. A round also ends early, after the unit under way, when another writer queues for the lock
    (`Database.writer_waits`); its other units go in the next transaction. With `defer`, a round writes its units'
    log rows (storage/common/later.py) together, `defer` units' rows at a time: what a queued writer waits for at the
    end of a round is at most that many units' rows, however long the round. (A round that wrote all its units' rows
    at its end cost the gateway's inbound stores more than its fewer commits saved: bench/helpdesk_inbound.py,
    docs/operations.md "SQLite writers take turns".)"""

    def __init__(self, db: Database, *, most: int | None = None, defer: int = 0) -> None:
        self.db = db
        self.defer = defer
        """How many units' log rows a round writes together; 0: each unit writes its own as it goes."""
        self._rounds: GroupCommit[Callable[[Connection], Any], Any] = GroupCommit(self._flush, most=most)

    async def write(self, work: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(connection, *args, **kwargs)` in this round's transaction."""
        outcome = await self._rounds.submit(lambda connection: work(connection, *args, **kwargs))
        if isinstance(outcome, _Raised):
            raise outcome.error
        return cast(T, outcome)

    async def _flush(self, units: list[Callable[[Connection], Any]]) -> list[Any]:
        outcomes: list[Any] = []
        with contextlib.suppress(Exception):
            while len(units) - len(outcomes) > 1:
                outcomes += await self.db.write(self._until_a_writer_waits, units[len(outcomes) :])
        for unit in units[len(outcomes) :]:
            try:
                outcomes += await self.db.write(self._until_a_writer_waits, [unit])
            except Exception as error:
                outcomes.append(_Raised(error))
        return outcomes

    def _until_a_writer_waits(self, connection: Connection, units: list[Callable[[Connection], Any]]) -> list[Any]:
        outcomes = []
        with later.deferring(connection) if self.defer else contextlib.nullcontext():
            for unit in units:
                outcomes.append(unit(connection))
                if self.db.writer_waits():
                    break
                if self.defer and len(outcomes) % self.defer == 0:
                    later.flush(connection)
        return outcomes
