"""Alembic environment: runs migrations over the async engine of the configured URL."""

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from storage.db import create_engine
from storage.models import Base


def run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
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
