"""Engine and session setup for SQLite (WAL, the embedded default) and PostgreSQL, and schema migrations."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import sqlalchemy
from sqlalchemy import event, inspect, make_url, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import InvalidatePoolError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

MIGRATIONS = Path(__file__).parent.parent / "migrations"
VERSION_TABLE = "alembic_version"
"""Where alembic keeps the schema's revision (its default)."""
CHECKPOINT_EVERY_S = 0.25
"""How often, at most, a process that writes copies the WAL back into the database file (`_Checkpoints`)."""
WAL_RESTART_FRAMES = 4096
"""Past this many pages in the WAL the checkpoint starts it over (`_Checkpoints`): one segment of the WAL's index,
whose every further segment each page look-up may search. The WAL file is cut back to twice that (pages of 4 KiB,
SQLite's default) when it starts over."""
T = TypeVar("T")
P = ParamSpec("P")


def per_dialect(build: Callable[[Any], Any]) -> dict[str, Any]:
    """A statement built once per backend from its dialect's INSERT (for ON CONFLICT): pick by dialect name."""
    return {"sqlite": build(sqlite.insert), "postgresql": build(postgresql.insert)}


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


POOL_SIZE = 32
"""PostgreSQL connections a process keeps, and the most it opens: a gateway's requests each hold one for their read,
and a pool smaller than its concurrency makes and closes connections under load, each new one paying its connect and
its statements prepared again (measured: bench/helpdesk_replies.py on PostgreSQL)."""


PING_AFTER_IDLE_S = 1.0
"""A pooled PostgreSQL connection left idle longer than this is pinged before it is used again, and replaced (with
every other connection of the pool made before it) when the server has closed it: a restart, a failover, an idle
timeout. One used within the last second is not: pinging every connection at every checkout (SQLAlchemy's
`pool_pre_ping`) cost each transaction three more round trips (asyncpg's ping is a transaction of its own), while a
busy pool's connections are back in use within milliseconds. A server that goes away under load fails the
transactions that were using its connections, pinged or not, and the pool is then made anew."""


def create_engine(url: str, *, pool_size: int = POOL_SIZE, ping_after_idle_s: float = PING_AFTER_IDLE_S) -> AsyncEngine:
    """An engine tuned for our access pattern: many short transactions from one process."""
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", functools.partial(_sqlite_pragmas, busy_timeout_ms=30_000))
        return engine
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)
    _ping_after_idle(engine.sync_engine, ping_after_idle_s)
    return engine


def _ping_after_idle(engine: Engine, idle_s: float) -> None:
    """PING_AFTER_IDLE_S, by the pool's events: a checkout of a connection idle longer than `idle_s` pings it (the
    dialect's own ping), and a ping that finds it disconnected invalidates the pool, whose checkout then connects
    anew."""
    dialect = engine.dialect

    def checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    def checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since <= idle_s:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if dialect.is_disconnect(error, dbapi_connection, None):
                raise InvalidatePoolError(f"the server closed the connection while it was idle: {error}") from error
            raise

    event.listen(engine.pool, "checkin", checked_in)
    event.listen(engine.pool, "checkout", checked_out)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, busy_timeout_ms: int) -> None:
    # WAL lets readers run beside the single writer; NORMAL sync is durable across process crashes in WAL mode.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms:d}")
    cursor.execute("PRAGMA foreign_keys=ON")
    # No checkpoint in a writer's commit, holding the write lock: `Database` checkpoints beside the writers.
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute(f"PRAGMA journal_size_limit={2 * WAL_RESTART_FRAMES * 4096:d}")
    cursor.close()


def _sync_sqlite_engine(url: str, *, busy_timeout_ms: int) -> Engine:
    engine = sqlalchemy.create_engine(
        url.replace("+aiosqlite", "+pysqlite"),
        connect_args={"timeout": busy_timeout_ms / 1000, "check_same_thread": False},
    )
    event.listen(engine, "connect", functools.partial(_sqlite_pragmas, busy_timeout_ms=busy_timeout_ms))
    return engine


def _is_busy(error: OperationalError) -> bool:
    code = getattr(error.orig, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY


class Database:
    """One engine; `read(work, ...)` and `write(work, ...)` run a unit of work, the one way our code reaches storage.

    A unit of work is a plain function `work(connection, *args, **kwargs)` that runs in one transaction, committed
    when it returns and rolled back when it raises. Units of work are synchronous Core code: on SQLite they run on
    the event loop itself (a hot-path transaction takes a fraction of a millisecond, less than handing it to a
    thread), and they are testable with no event loop at all."""

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE, ping_after_idle_s: float = PING_AFTER_IDLE_S) -> None:
        self.url = url
        self.engine = create_engine(url, pool_size=pool_size, ping_after_idle_s=ping_after_idle_s)
        self._statements = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        """The engine's pool, its connections without transactions while they are out (PostgreSQL's reads)."""
        # SQLite has one writer at a time; queueing writers here is far cheaper than its busy-wait back-off.
        self._write_lock = asyncio.Lock()
        self._sqlite: Engine | None = None
        self._writers: _Turns | None = None
        if url.startswith("sqlite"):
            # Units of work run on the event loop itself, on connections that never wait for a lock (measured:
            # bench/). When another connection or process holds the lock, the unit runs again on a thread that may
            # wait.
            self._sqlite_inline = _sync_sqlite_engine(url, busy_timeout_ms=0)
            self._sqlite = _sync_sqlite_engine(url, busy_timeout_ms=30_000)
            self._sqlite_threads = ThreadPoolExecutor(2, thread_name_prefix="sqlite")
            database = make_url(url).database
            on_disk = database if database and database != ":memory:" else None
            self._checkpoints = _Checkpoints(self._sqlite, on_disk)
            if on_disk is not None:
                # Processes take turns at SQLite's one write lock (docs/operations.md, "SQLite writers take turns").
                self._writers = _Turns(on_disk)

    async def read(self, work: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(connection, *args, **kwargs)`, which only reads: on SQLite in a transaction (one snapshot for all its
        statements); on PostgreSQL each statement on its own (autocommit), which sees what a transaction at its READ
        COMMITTED level would (each statement there takes its own snapshot) without the BEGIN and COMMIT, two of a
        one-statement read's three round trips."""
        return await self._run(lambda connection: work(connection, *args, **kwargs), write=False)

    async def write(self, work: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(connection, *args, **kwargs)` in a transaction that writes (one writer at a time on SQLite)."""
        return await self._run(lambda connection: work(connection, *args, **kwargs), write=True)

    async def _run(self, work: Callable[[Connection], T], *, write: bool) -> T:
        if self._sqlite is None:
            async with self.engine.begin() if write else self._statements.connect() as connection:
                return await connection.run_sync(work)
        if not write:
            return await self._run_sqlite(work, write=False)
        async with self._write_lock:
            return await self._run_sqlite(work, write=True)

    async def _run_sqlite(self, work: Callable[[Connection], T], *, write: bool) -> T:
        writers = self._writers if write else None
        if writers is not None and not writers.take_if_free():
            outcome = await self._after_turn(writers, work)
        else:
            outcome = self._inline(work, writers)
        if not isinstance(outcome, _Busy):
            return outcome
        return await asyncio.get_running_loop().run_in_executor(self._sqlite_threads, self._waiting, work, writers)

    def _inline(self, work: Callable[[Connection], T], writers: _Turns | None) -> T | _Busy:
        """The unit on the event loop, on a connection that never waits for SQLite's lock (the writers' lock held,
        when it writes, and given back here); _Busy when a process not taking turns held SQLite's lock."""
        try:
            return _transaction(self._sqlite_inline, work)
        except OperationalError as error:
            if not _is_busy(error):
                raise
            return _Busy()
        finally:
            if writers is not None:
                writers.give_back()
                self._checkpoints.after_a_write()

    def _after_turn(self, writers: _Turns, work: Callable[[Connection], T]) -> asyncio.Future[T | _Busy]:
        """The unit, once the writers' lock is ours after those that queued before: a thread waits for the lock and
        then hands the loop a callback that runs the unit at once. Going back through the thread's future, a shield
        and the waiting task took the busy gateway's loop about four rounds of its ready callbacks, while it held the
        lock idle: 5-7 ms a turn, 50 turns a second at 1,200 mails a second (bench/helpdesk_inbound.py). On a thread
        the unit itself would hold the lock the longer, taking turns with the loop for the GIL. A caller cancelled
        meanwhile gives the turn back when it comes."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T | _Busy] = loop.create_future()

        def run() -> None:  # on the loop, the lock ours
            if done.cancelled():
                writers.give_back()
                return
            try:
                done.set_result(self._inline(work, writers))
            except Exception as error:
                done.set_exception(error)

        def wait() -> None:  # on a thread
            writers.wait_for_turn()
            try:
                loop.call_soon_threadsafe(run)
            except RuntimeError:  # the loop is closed: nobody will run it
                writers.give_back()

        self._sqlite_threads.submit(wait)
        return done

    def _waiting(self, work: Callable[[Connection], T], writers: _Turns | None) -> T:
        """On a thread: the unit, once the writers' lock (when it writes) and SQLite's lock are free."""
        assert self._sqlite is not None
        if writers is None:
            return _transaction(self._sqlite, work)
        writers.wait_for_turn()
        try:
            return _transaction(self._sqlite, work)
        finally:
            writers.give_back()

    def writer_waits(self) -> bool:
        """Whether a writer (of this process or another) queues for SQLite's write lock now; on PostgreSQL, False.
        A unit of work that does many independent things may end its transaction early for it."""
        return self._writers is not None and self._writers.queued()

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self._sqlite is not None:
            self._checkpoints.close()
            self._sqlite_threads.shutdown()
            self._sqlite.dispose()
            self._sqlite_inline.dispose()
        if self._writers is not None:
            self._writers.close()
            self._writers = None


class _Checkpoints:
    """The WAL copied back into the database file by a thread of its own, at most every CHECKPOINT_EVERY_S after a
    write, never inside a writer's transaction: SQLite's own automatic checkpoint runs in the commit that crosses its
    threshold, with fsyncs, while every other writer waits for the lock (measured: bench/helpdesk_inbound.py). A
    PASSIVE checkpoint waits for nobody: it copies what no reader still needs. But only a writer that finds all of
    the WAL copied starts it over, and under steady writes some commit always comes between: the WAL grew without
    end (2.3 GB after 36,000 inbound mails), and every page read and commit slowed with it (0.50 -> 0.79 ms of CPU a
    ticket). So once the WAL holds more than WAL_RESTART_FRAMES pages, the checkpoint takes the writers' turn, as
    another process's writer would, and RESTARTs: it copies the little the PASSIVE pass left, and the next writer
    starts the WAL over (`journal_size_limit` then cuts the file back)."""

    def __init__(self, engine: Engine, database: str | None) -> None:
        self.engine = engine
        self.turns = _Turns(database) if database else None
        """Descriptors of its own: the lock excludes this process's writers too."""
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="sqlite-checkpoint")
        self.running: Future[None] | None = None
        self.last = 0.0

    def after_a_write(self) -> None:
        if (self.running is None or self.running.done()) and time.monotonic() - self.last >= CHECKPOINT_EVERY_S:
            self.last = time.monotonic()
            self.running = self.thread.submit(self._checkpoint)

    def _checkpoint(self) -> None:
        with contextlib.suppress(OperationalError), self.engine.connect() as connection:  # another one runs
            _busy, frames, _copied = connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()
            if self.turns is None or frames <= WAL_RESTART_FRAMES:
                return
            self.turns.wait_for_turn()
            try:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(RESTART)")
            finally:
                self.turns.give_back()

    def close(self) -> None:
        self.thread.shutdown()
        if self.turns is not None:
            self.turns.close()


class _Turns:
    """Processes writing one SQLite file take turns at its one write lock through two `flock`s on files beside it:
    `<database>.write-lock`, held by the writer for its transaction, and `<database>.write-queue`, held by the
    writer that waits next. A writer takes the write lock at once only while nobody waits (`take_if_free`); else it
    queues (`wait_for_turn`, on a thread): it holds the queue until the write lock is its own. So a writer that
    gives the lock back and wants it again at once (a busy processors' process, round after round) queues behind
    the one that waited, and a waiting writer's turn comes within one transaction. SQLite's own busy wait sleeps
    ever longer between tries (up to 100 ms) and loses to a writer that takes the lock back at once."""

    def __init__(self, database: str) -> None:
        self.lock = os.open(f"{database}.write-lock", os.O_RDWR | os.O_CREAT, 0o600)
        self.queue = os.open(f"{database}.write-queue", os.O_RDWR | os.O_CREAT, 0o600)

    def take_if_free(self) -> bool:
        """The write lock, if it is free and no writer waits for it; False at once otherwise."""
        if not _try_flock(self.queue, fcntl.LOCK_SH):
            return False
        try:
            return _try_flock(self.lock, fcntl.LOCK_EX)
        finally:
            fcntl.flock(self.queue, fcntl.LOCK_UN)

    def wait_for_turn(self) -> None:
        """The write lock, after the writers that queued before (blocks: on a thread)."""
        fcntl.flock(self.queue, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX)
        finally:
            fcntl.flock(self.queue, fcntl.LOCK_UN)

    def queued(self) -> bool:
        """Whether a writer holds the queue: it waits for the write lock."""
        if not _try_flock(self.queue, fcntl.LOCK_SH):
            return True
        fcntl.flock(self.queue, fcntl.LOCK_UN)
        return False

    def give_back(self) -> None:
        fcntl.flock(self.lock, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self.lock)
        os.close(self.queue)


class _Busy:
    """SQLite's lock was held by a process that does not take turns: the unit goes again on a thread, which waits."""


def _try_flock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _transaction(engine: Engine, work: Callable[[Connection], T]) -> T:
    with engine.begin() as connection:
        return work(connection)


def migrate(url: str) -> None:
    """Bring the schema at `url` to the newest migration (blocking). Processes migrating at once take turns, so the
    later finds the schema current: PostgreSQL holds an advisory lock (storage/migrations/env.py), SQLite a lock on a
    file beside the database."""
    # alembic only here, where it runs: its import alone is 0.3 s of CPU, which every operator command and every
    # service process would otherwise pay to check the schema
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    database = make_url(url).database
    if not url.startswith("sqlite") or not database:
        command.upgrade(config, "head")
        return
    with open(f"{database}.migrate-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        command.upgrade(config, "head")


class SchemaOutOfDate(RuntimeError):
    """The database is not at the schema this code needs; only `signalyard migrate` (or `up`) upgrades it."""


def newest_revision() -> str:
    """The newest migration's revision: each migration's revision is the number its file's name begins with, and
    each revises the one numbered before it (tests/unit/test_migrations.py holds alembic to it)."""
    return max(path.name[:4] for path in (MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def check_schema(url: str) -> None:
    """Raise SchemaOutOfDate unless the schema at `url` is the newest migration (blocking)."""
    head = newest_revision()

    def revision(connection: Connection) -> str | None:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        found: str | None = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        return found

    async def current() -> str | None:
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(revision)
        finally:
            await engine.dispose()

    found = asyncio.run(current())
    if found != head:
        where = f"revision {found}" if found else "no schema"
        raise SchemaOutOfDate(
            f"the database has {where}, this version needs revision {head}: run `signalyard migrate` first"
        )
