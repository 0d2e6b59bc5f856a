"""Engine and session setup for SQLite (WAL, the embedded default) and PostgreSQL, and schema migrations."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy
from alembic import command
from alembic.config import Config
from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

MIGRATIONS = Path(__file__).with_name("migrations")
T = TypeVar("T")


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """An engine tuned for our access pattern: many short transactions from one process."""
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the single writer; NORMAL sync is durable across process crashes in WAL mode.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Database:
    """One engine and its session factory; a `write()` block is the unit of work of one handler call."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        self.engine = create_engine(url, pool_size=pool_size)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        # SQLite has one writer at a time; queueing writers here is far cheaper than its busy-wait back-off.
        self._write_lock = asyncio.Lock() if url.startswith("sqlite") else None
        self._sqlite: Engine | None = None
        if url.startswith("sqlite"):
            self._sqlite = sqlalchemy.create_engine(
                url.replace("+aiosqlite", "+pysqlite"), connect_args={"timeout": 30, "check_same_thread": False}
            )
            event.listen(self._sqlite, "connect", _sqlite_pragmas)
            self._sqlite_threads = ThreadPoolExecutor(4, thread_name_prefix="sqlite")

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        if self._write_lock is None:
            async with self.sessions() as session, session.begin():
                yield session
            return
        async with self._write_lock, self.sessions() as session, session.begin():
            yield session

    async def run(self, work: Callable[[Connection], T], *, write: bool) -> T:
        """One unit of work: `work(connection)` in one transaction, committed when it returns (rolled back when it
        raises). PostgreSQL runs it on the async engine; SQLite runs it whole on a worker thread, one hand-off
        instead of one per driver call (which would cost several times the query itself)."""
        if self._sqlite is None:
            async with self.engine.begin() as connection:
                return await connection.run_sync(work)
        loop = asyncio.get_running_loop()
        if not write:
            return await loop.run_in_executor(self._sqlite_threads, self._run_sqlite, work)
        async with self._write_lock:  # type: ignore[union-attr]
            return await loop.run_in_executor(self._sqlite_threads, self._run_sqlite, work)

    def _run_sqlite(self, work: Callable[[Connection], T]) -> T:
        assert self._sqlite is not None
        with self._sqlite.begin() as connection:
            return work(connection)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as session:
            yield session

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self._sqlite is not None:
            self._sqlite_threads.shutdown()
            self._sqlite.dispose()


def migrate(url: str) -> None:
    """Bring the schema at `url` to the newest migration (blocking; run it before serving)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "head")
