"""What a reply costs the gateway, step by step, beside a note and a ticket create: CPU per call in one process.

    python bench/helpdesk_reply_cost.py [--calls 2000] [--rounds 2] [--concurrency 1] [--database-url URL]

Migrates a new SQLite database in a temp dir (or uses `--database-url`, which must be a fresh database: the channel's
secrets are sealed with this run's key), makes an organization with an email channel and 64 tickets, then for
`--rounds` rounds times each operation `--calls` times, by `--concurrency` callers each making one call after another,
through the service layer the REST handlers call (operations/helpdesk), and prints the CPU time (`time.process_time`)
per call of the last round:

- the ticket read alone (`tickets.get`), and with the way back to its customer (what a reply reads in its unit of
  work before it writes: `outbound.replying`);
- a reply (`conversations.add`: that read, then the conversation, its outbound message and its log rows written),
  a note (the same without the route and the outbound message), a ticket create (`tickets.open_ticket`);
- the reply sender's work for each of those replies (processors/helpdesk/outbound.py `ReplySender`, in rounds of
  SENDS_AT_ONCE as under load: claimed, read, composed, recorded), its mails written out as for an SMTP server
  that offers 8BITMIME, and not sent.

On PostgreSQL on the same machine, the database server's CPU per call (its processes' from /proc) is printed too.

No HTTP, no processors: the cost of the operations themselves, which bench/helpdesk_replies.py measures through the
stack. With `--concurrency 1` each write is a round of its own; with more callers their writes share rounds, as
under load (one transaction, and the log rows, the conversations and their outbound messages written together). Not
a test: it exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.generator import BytesGenerator
from email.message import EmailMessage
from pathlib import Path

from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import insert
from sqlalchemy.engine import Connection

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from breakdown import cpu_seconds

from operations.common.actors import Actor
from operations.helpdesk import conversations, tickets
from operations.helpdesk.conversations import AddConversation
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.tickets import CreateTicket
from processors.helpdesk.outbound import OUTGOING, ReplySender
from storage.common.db import Database, migrate, sqlite_url
from storage.helpdesk import channels, outbound
from storage.helpdesk import tickets as stored
from storage.helpdesk.workspaces import ORGANIZATIONS

TICKETS = 64
CIPHER = MultiFernet([Fernet(Fernet.generate_key())])


async def _nobody(_organization_id: str, _event_id: str) -> None:
    return None


class _Written:
    """Stands for the SMTP server: each mail written out as the SMTP client writes it (8-bit parts as they are), then
    dropped."""

    async def send(self, message: EmailMessage, sender: str, recipient: str, outbound_id: str) -> str | None:
        BytesGenerator(io.BytesIO(), policy=OUTGOING.clone(cte_type="8bit")).flatten(message)
        return None


def _server_cpu() -> float:
    """The CPU seconds of this machine's PostgreSQL processes so far (0 where none runs, or on SQLite)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        try:
            named = entry.name.isdigit() and (entry / "comm").read_text().startswith("postgres")
        except OSError:
            continue
        if named:
            total += cpu_seconds(int(entry.name)) or 0.0
    return total


async def measure(url: str, calls: int, rounds: int, concurrency: int) -> dict[str, tuple[float, float]]:
    db = Database(url)
    desk = Helpdesk(db, _nobody, CIPHER)
    organization = str(uuid.uuid4())
    now = datetime.now(UTC)
    row = {"id": organization, "name": "Acme", "slug": f"acme-{organization[:8]}", "plan": "free", "created_at": now}
    await db.write(lambda connection: connection.execute(insert(ORGANIZATIONS).values(**row)))
    await db.write(
        channels.open_channel,
        CIPHER,
        organization,
        kind="email",
        name="Support",
        addresses=["support@acme.example"],
        given={},
        settings={},
        now=now,
    )
    agent = Actor(organization, str(uuid.uuid4()), "admin")
    made = [
        await tickets.open_ticket(desk, agent, CreateTicket(subject=f"Order {n}", customer_email=f"c{n}@acme.example"))
        for n in range(TICKETS)
    ]

    def way_back(connection: Connection, ticket_id: str) -> outbound.Route:
        found = outbound.replying(connection, CIPHER, organization, ticket_id, datetime.now(UTC))
        assert found is not None
        assert isinstance(found[1], outbound.Route)
        return found[1]

    def reply(n: int) -> Awaitable[object]:
        given = AddConversation(body=f"Reply {n}: your order left our depot today.")
        return conversations.add(desk, agent, made[n % TICKETS].id, given)

    def note(n: int) -> Awaitable[object]:
        given = AddConversation(body=f"Note {n}: the order left our depot today.", internal=True)
        return conversations.add(desk, agent, made[n % TICKETS].id, given)

    def create(n: int) -> Awaitable[object]:
        given = CreateTicket(subject=f"Order {n} has not arrived", customer_email=f"d{n % 100}@acme.example")
        return tickets.open_ticket(desk, agent, given)

    steps: dict[str, Callable[[int], Awaitable[object]]] = {
        "ticket read": lambda n: db.read(stored.get, organization, made[n % TICKETS].id),
        "ticket read + route": lambda n: db.read(way_back, made[n % TICKETS].id),
        "reply": reply,
        "note": note,
        "ticket create": create,
    }
    sender = ReplySender(db, CIPHER, _Written(), None)

    async def mail_the_replies() -> None:
        mailed = 0
        while sent := await sender.send_due():
            mailed += sent
        assert mailed == calls, f"{mailed} of the {calls} replies mailed"

    costs: dict[str, tuple[float, float]] = {}
    try:
        for _ in range(rounds):
            for name, step in steps.items():
                await _analyze(db)
                began, server = time.process_time(), _server_cpu()
                await asyncio.gather(*(_loop(step, first, calls, concurrency) for first in range(concurrency)))
                costs[name] = _per_call(began, server, calls)
                if name == "reply":
                    await _analyze(db)
                    began, server = time.process_time(), _server_cpu()
                    await mail_the_replies()
                    costs["reply mailed"] = _per_call(began, server, calls)
    finally:
        await sender.close()
        await db.dispose()
    return costs


async def _analyze(db: Database) -> None:
    """On PostgreSQL, the tables' statistics brought up to date, as autovacuum keeps them (on a server where it is off,
    as on this machine's, the planner would plan for empty tables throughout)."""
    if db.url.startswith("postgresql"):
        await db.write(lambda connection: connection.exec_driver_sql("ANALYZE"))


def _per_call(began: float, server: float, calls: int) -> tuple[float, float]:
    """This process's and the database server's CPU ms a call since `began` and `server`."""
    return (time.process_time() - began) / calls * 1000, (_server_cpu() - server) / calls * 1000


async def _loop(step: Callable[[int], Awaitable[object]], first: int, calls: int, concurrency: int) -> None:
    """One of `concurrency` callers: calls first, first + concurrency, ... below `calls`, one after another."""
    for n in range(first, calls, concurrency):
        await step(n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="calls of each operation a round (default 2000)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; the last is printed (default 2)")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="callers at once: their writes share rounds (default 1)"
    )
    parser.add_argument("--database-url", help="a fresh database (default: SQLite in a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        url = args.database_url or sqlite_url(Path(workdir) / "signalyard.db")
        migrate(url)
        costs = asyncio.run(measure(url, args.calls, args.rounds, args.concurrency))
    print(
        f"\nCPU per call, {args.calls} calls by {args.concurrency} caller(s) after {args.rounds - 1} warm-up round(s) "
        f"({url.split(':')[0]}):"
    )
    create = costs["ticket create"][0]
    for name, (cost, server) in costs.items():
        database = f", the database server {server:6.3f} ms" if url.startswith("postgresql") else ""
        print(f"  {name:20} {cost:6.3f} ms  ({cost / create:.2f} of a create){database}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
