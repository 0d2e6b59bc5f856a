"""Real failures for integration tests: a ledger the database refuses to write, the operator CLI as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from tests.conftest import Stack


async def refuse_ledger_rows(stack: Stack, tenant_id: str) -> None:
    """A real database failure for this tenant's ledger writes only (a trigger), as when the ledger is down."""
    async with stack.db.write() as session:
        if session.get_bind().dialect.name == "postgresql":
            await session.execute(
                text(
                    "CREATE OR REPLACE FUNCTION refuse_ledger() RETURNS trigger AS $$ BEGIN "
                    f"IF NEW.tenant_id = '{tenant_id}' THEN RAISE EXCEPTION 'ledger offline'; END IF; "
                    "RETURN NEW; END $$ LANGUAGE plpgsql"
                )
            )
            await session.execute(
                text(
                    "CREATE TRIGGER refuse_ledger BEFORE INSERT ON ledger_entries "
                    "FOR EACH ROW EXECUTE FUNCTION refuse_ledger()"
                )
            )
        else:
            await session.execute(
                text(
                    "CREATE TRIGGER refuse_ledger BEFORE INSERT ON ledger_entries "
                    f"WHEN NEW.tenant_id = '{tenant_id}' BEGIN SELECT RAISE(ABORT, 'ledger offline'); END"
                )
            )


async def allow_ledger_rows(stack: Stack) -> None:
    async with stack.db.write() as session:
        postgres = session.get_bind().dialect.name == "postgresql"
        await session.execute(text("DROP TRIGGER IF EXISTS refuse_ledger" + (" ON ledger_entries" if postgres else "")))


def run_cli(database_url: str, data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`signalyard ARGS...` as an operator runs it, against `database_url`."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("SIGNALYARD_")}
    environment |= {"SIGNALYARD_DATABASE_URL": database_url, "SIGNALYARD_DATA_DIR": str(data_dir), **env}
    return subprocess.run(
        [sys.executable, "-m", "signalyard.cli", *args],
        check=False,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
