"""Alembic environment: runs migrations over the async engine of the configured URL."""

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from storage.common.db import create_engine
from storage.tables import METADATA, modelled

MIGRATION_LOCK_ID = 0x5179_0001
"""The PostgreSQL advisory lock held while migrating (any constant of ours)."""


def run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=METADATA, render_as_batch=True, include_name=modelled)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Processes migrating at once take turns; the later one finds the schema current and does nothing.
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        context.run_migrations()


async def main() -> None:
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    async with engine.connect() as connection:
        await connection.run_sync(run)
        await connection.commit()
    await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `signalyard migrate`")
asyncio.run(main())
