"""Engine and session setup for SQLite (WAL, the embedded default) and PostgreSQL, and schema migrations."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

MIGRATIONS = Path(__file__).with_name("migrations")


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

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        if self._write_lock is None:
            async with self.sessions() as session, session.begin():
                yield session
            return
        async with self._write_lock, self.sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A Core transaction on one connection: the hot paths' unit of work, without the ORM's cost."""
        if self._write_lock is None:
            async with self.engine.begin() as connection:
                yield connection
            return
        async with self._write_lock, self.engine.begin() as connection:
            yield connection

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as connection:
            yield connection

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as session:
            yield session

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()


def migrate(url: str) -> None:
    """Bring the schema at `url` to the newest migration (blocking; run it before serving)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "head")
