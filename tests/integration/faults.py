"""Real failures for integration tests: a ledger the database refuses to write, the operator CLI as a process."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection

from tests.phone_stack import Stack


@asynccontextmanager
async def ledger_refused(stack: Stack, tenant_id: str) -> AsyncIterator[None]:
    """A real database failure for this tenant's ledger writes only (a trigger), as when the ledger is down, for the
    duration of the block. Each block installs a trigger of its own name and removes it whatever happens, so one
    test's fault never meets another's."""
    name = f"refuse_ledger_{uuid.uuid4().hex[:12]}"
    if stack.db.engine.dialect.name == "postgresql":
        installs = [
            f"CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN "
            f"IF NEW.tenant_id = '{tenant_id}' THEN RAISE EXCEPTION 'ledger offline'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql",
            f"CREATE TRIGGER {name} BEFORE INSERT ON phone_ledger FOR EACH ROW EXECUTE FUNCTION {name}()",
        ]
        drops = [f"DROP TRIGGER {name} ON phone_ledger", f"DROP FUNCTION {name}()"]
    else:
        installs = [
            f"CREATE TRIGGER {name} BEFORE INSERT ON phone_ledger "
            f"WHEN NEW.tenant_id = '{tenant_id}' BEGIN SELECT RAISE(ABORT, 'ledger offline'); END"
        ]
        drops = [f"DROP TRIGGER {name}"]
    await stack.db.write(_execute_all, installs)
    try:
        yield
    finally:
        await stack.db.write(_execute_all, drops)


def _execute_all(connection: Connection, statements: list[str]) -> None:
    for statement in statements:
        connection.execute(text(statement))


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
