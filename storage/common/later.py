"""What a transaction writes at its end, and what it reads once. A round of units (BatchedWrites, `defer`) whose units
each append a few rows to the same tables (the helpdesk's activity log, outgoing webhook events, conversations and their
outbound messages), touch their ticket and settle their inbound event makes those writes as one statement per table when
the round ends (a long round: every few units, `flush`), rather than one per unit: on SQLite the statements, more than
the rows, are what a unit costs while it holds the database's one write lock (bench/helpdesk_inbound.py). What every
unit asks alike (which webhook events the owner's endpoints subscribe to, the channel a reply goes through) is read once
per round. And a counter kept in a row (an organization's last ticket number) is taken once per round and counted on in
memory, its last value written with the deferred rows.

Only tables that nothing in the transaction reads back are written late. A function that does read such a table within a
transaction that may defer (the reopen limit reads the activity log, erasure scrubs it, threading reads conversations,
automatic mail and providers' reports read outbound messages) calls `flush` first, or `flush_table` for the one table it
reads, so that a read every unit of a round makes leaves the other tables' rows batched; a statement that reads or
changes a table with rows still waiting raises `UnflushedRead` instead of missing them, so a forgotten `flush` fails the
first test that runs it. What is read once must not change within the transaction: units that change webhook endpoints
or channels do not run in a deferring round. Outside a deferring transaction everything runs at once, so the same
storage functions serve both."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import Insert, Table, Update, event
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.util import find_tables

T = TypeVar("T")
_KEY = "signalyard.later"


class UnflushedRead(RuntimeError):
    """A statement touched a table whose rows this transaction deferred and has not written yet: call `flush` first."""


_TABLES: weakref.WeakKeyDictionary[ClauseElement, frozenset[str]] = weakref.WeakKeyDictionary()
"""The tables each statement names, worked out once per statement (most are built once, at import)."""


def _tables(statement: ClauseElement) -> frozenset[str]:
    named = _TABLES.get(statement)
    if named is None:
        named = frozenset(table.name for table in find_tables(statement, include_crud=True) if isinstance(table, Table))
        _TABLES[statement] = named
    return named


class _Later:
    def __init__(self) -> None:
        self.rows: dict[Insert, list[dict[str, Any]]] = {}
        """statement -> its rows, in the order they were added (dicts keep the order of first use)."""
        self.updates: dict[Update, list[tuple[dict[str, Any], Callable[[], Exception]]]] = {}
        self.touches: dict[Update, list[dict[str, Any]]] = {}
        """Updates no statement of the transaction waits for (`touch`): they do not count as waiting rows."""
        self.read: dict[Hashable, Any] = {}
        self.counters: dict[Hashable, int] = {}
        """key -> the counter's value, once taken in this transaction."""
        self.unwritten: dict[Hashable, Callable[[int], object]] = {}
        """key -> how to write the counter's value, for those counted on in memory since the last flush."""
        self.flushing = False

    def check(self, statement: Any) -> None:
        """Refuses a statement that would miss rows still waiting (before_execute)."""
        if self.flushing or not isinstance(statement, ClauseElement) or not (self.rows or self.updates):
            return
        missed = _tables(statement) & self.waiting
        if missed:
            raise UnflushedRead(f"{', '.join(sorted(missed))}: rows of this transaction wait: call later.flush first")

    @property
    def waiting(self) -> set[str]:
        """The tables with rows this transaction has not written yet."""
        return {str(getattr(statement.table, "name", "")) for statement in [*self.rows, *self.updates]}

    def flush(self, connection: Connection, table: Table | None = None) -> None:
        """Every deferred write, or `table`'s rows alone."""
        self.flushing = True
        try:
            if table is None:
                self._flush(connection)
            else:
                for statement in [statement for statement in self.rows if statement.table is table]:
                    connection.execute(statement, self.rows.pop(statement))
        finally:
            self.flushing = False

    def _flush(self, connection: Connection) -> None:
        rows, self.rows = self.rows, {}
        for insert_, values in rows.items():
            connection.execute(insert_, values)
        updates, self.updates = self.updates, {}
        for update_, each in updates.items():
            _update(connection, update_, each)
        touches, self.touches = self.touches, {}
        for update_, params in touches.items():
            connection.execute(update_, params)
        unwritten, self.unwritten = self.unwritten, {}
        for key, write in unwritten.items():
            write(self.counters[key])


def _update(
    connection: Connection, statement: Update, each: list[tuple[dict[str, Any], Callable[[], Exception]]]
) -> None:
    if len(each) > 1 and connection.dialect.supports_sane_multi_rowcount:
        if connection.execute(statement, [params for params, _ in each]).rowcount == len(each):
            return
        raise each[0][1]()  # one of them missed: the round is undone and run again unit by unit, which finds it
    for params, missed in each:
        if not connection.execute(statement, params).rowcount:
            raise missed()


def insert(connection: Connection, statement: Insert, rows: Sequence[dict[str, Any]]) -> None:
    """`statement` with `rows`: at the end of the transaction when it defers, else now."""
    if not rows:
        return
    later: _Later | None = connection.info.get(_KEY)
    if later is None:
        connection.execute(statement, list(rows))
    else:
        later.rows.setdefault(statement, []).extend(rows)


def update_one(
    connection: Connection, statement: Update, params: dict[str, Any], missed: Callable[[], Exception]
) -> None:
    """`statement` with `params`, which must change one row, else `missed()` is raised (undoing the transaction): at
    the end of the transaction when it defers, else now."""
    later: _Later | None = connection.info.get(_KEY)
    if later is None:
        _update(connection, statement, [(params, missed)])
    else:
        later.updates.setdefault(statement, []).append((params, missed))


def touch(connection: Connection, statement: Update, params: dict[str, Any]) -> None:
    """`statement` with `params`, an update that only moves a time forward (the statement keeps the later of the
    row's value and the new one, so the order of touches does not matter): at the end of the transaction when it
    defers, with the others of its kind as one statement, else now. Unlike `update_one`, reading its table does not
    wait for it (a unit of the round that reads the row sees the time from before the touch), and a row it misses,
    deleted meanwhile, is no error."""
    later: _Later | None = connection.info.get(_KEY)
    if later is None:
        connection.execute(statement, params)
    else:
        later.touches.setdefault(statement, []).append(params)


def once(connection: Connection, key: Hashable, read: Callable[[], T]) -> T:
    """`read()`, made once per deferring transaction for each `key` (every time outside one)."""
    later: _Later | None = connection.info.get(_KEY)
    if later is None:
        return read()
    if key not in later.read:
        later.read[key] = read()
    return later.read[key]  # type: ignore[no-any-return]


def count(connection: Connection, key: Hashable, take: Callable[[], int], write: Callable[[int], object]) -> int:
    """A counter's next value. `take()` adds one to the counter in its row and returns the new value, locking the row
    until the transaction ends; in a deferring transaction it is called the first time only, then the value goes up
    by one in memory each time (nobody else can take it meanwhile), and `write(value)` stores the last value at the
    end."""
    later: _Later | None = connection.info.get(_KEY)
    if later is None:
        return take()
    if key not in later.counters:
        later.counters[key] = take()
    else:
        later.counters[key] += 1
        later.unwritten[key] = write
    return later.counters[key]


def flush(connection: Connection) -> None:
    """Write what the transaction deferred so far: before reading a table it defers rows of."""
    later: _Later | None = connection.info.get(_KEY)
    if later is not None:
        later.flush(connection)


def flush_table(connection: Connection, table: Table) -> None:
    """Write the rows the transaction deferred into `table` alone, before reading it: the other tables' rows keep
    waiting, so a read that every unit of a round makes (threading's look-up of conversations) does not cost the round
    the batching of its log rows."""
    later: _Later | None = connection.info.get(_KEY)
    if later is not None:
        later.flush(connection, table)


@contextlib.contextmanager
def deferring(connection: Connection) -> Iterator[None]:
    """Within the block, `insert`s and `update_one`s on `connection` wait for its end, and are made then; a block
    that raises makes none of them (its transaction is rolled back)."""
    later = _Later()
    connection.info[_KEY] = later

    def check(_connection: Connection, statement: Any, *_: Any) -> None:
        later.check(statement)

    event.listen(connection, "before_execute", check)
    try:
        yield
        later.flush(connection)
    finally:
        event.remove(connection, "before_execute", check)
        del connection.info[_KEY]
