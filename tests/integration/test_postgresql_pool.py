"""PostgreSQL's connection pool (storage/common/db.py, PING_AFTER_IDLE_S): a pooled connection the server closed
while it sat idle is replaced unnoticed, and one used within the idle window is not pinged. PostgreSQL's alone: this
module is collected where the suite runs on PostgreSQL (SIGNALYARD_TEST_DATABASE_URL; tests/conftest.py
`collect_ignore`), as every PostgreSQL variant of the other tests exists only there."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from sqlalchemy import make_url, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from storage.common.db import Database

ON_POSTGRESQL = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def backend_pid(connection: Connection) -> int:
    return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())


async def closed_by_the_server(database_url: str, pid: int) -> None:
    """The server ends the session `pid` (as a restart or an idle timeout would), and it is gone."""
    server = await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(False))
    try:
        assert await server.fetchval("SELECT pg_terminate_backend($1)", pid)
        for _ in range(200):
            if not await server.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the session {pid} is still there")
    finally:
        await server.close()


@ON_POSTGRESQL
async def test_a_pooled_connection_the_server_closed_while_it_was_idle_is_replaced_unnoticed(database_url: str) -> None:
    database = Database(database_url, ping_after_idle_s=0)  # every checkout after a checkin is "after idle"
    try:
        first = await database.read(backend_pid)
        await closed_by_the_server(database_url, first)
        second = await database.read(backend_pid)
        assert second != first
        assert await database.read(backend_pid) == second
    finally:
        await database.dispose()


@ON_POSTGRESQL
async def test_a_connection_used_within_the_idle_window_is_not_pinged_so_a_server_gone_meanwhile_fails_one_call(
    database_url: str,
) -> None:
    """Within the window no ping is made (the round trips it saves); a server gone in it fails the call that finds
    it, and the pool is made anew for the next."""
    database = Database(database_url, ping_after_idle_s=3600)
    try:
        first = await database.read(backend_pid)
        await closed_by_the_server(database_url, first)
        with pytest.raises(DBAPIError) as failed:
            await database.read(backend_pid)
        assert failed.value.connection_invalidated
        assert await database.read(backend_pid) != first
    finally:
        await database.dispose()
