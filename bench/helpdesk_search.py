"""Helpdesk search benchmark: `storage.helpdesk.search.search` on a filled database, beside the ticket listing.

    python bench/helpdesk_search.py [--database-url postgresql+asyncpg://postgres@127.0.0.1:5432/test]
                                    [--tickets 100000] [--replies 300000] [--repetitions 300]

For SQLite (a file in a temp dir), then for PostgreSQL when `--database-url` is given (a database of its own is made
on that server and dropped afterwards): migrates a new database and fills one organization with `--customers`
customers, `--tickets` tickets and `--replies` replies, their words drawn from a Zipf-like vocabulary (executemany,
ten batches a transaction, so that the index's triggers and generated columns run as for any insert); then runs each
query of the set `--repetitions` times through `Database.read` (the path the gateway takes), one after the other, and
prints p50/p99 of each, its p50 as a ratio of the baseline's, the rows that match it, the index's size and what it
costs the writes (`--write-rows` replies, and a tenth as many tickets made with their first message, written into a
new database with the index and into one without).

The query set: a rare word, a common word (in almost every reply), a 3-letter prefix, each alone and with
`status="open"`. The baseline is the ticket listing (`tickets.listing`, the newest 20), alone and with that filter.
Target: p99 <= 50 ms for every search. Not a test: it exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import random
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from alembic import command
from alembic.config import Config
from sqlalchemy import Table, insert, make_url, text
from sqlalchemy.engine import Connection

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage.common.db import MIGRATIONS, Database, migrate, sqlite_url
from storage.helpdesk import search, tickets
from storage.helpdesk.customers import CUSTOMERS
from storage.helpdesk.models import SEARCH_INDEXES, SEARCH_TABLES, SEARCHED
from storage.helpdesk.workspaces import ORGANIZATIONS

P99_TARGET_MS = 50.0
VOCABULARY = 50_000
ZIPF_EXPONENT = 1.07
BATCH = 10_000
"""Rows per executemany; a transaction holds ten of them."""
HEAD_TEXT = (
    "the to i and a my you for is it of order in this on have not please we was with your be can that but me at "
    "refund thanks hello item just no help get would do received when are will been from any still hi so account "
    "package delivery an as there if what problem product shipping by payment back email could issue return they "
    "our one how up ticket now card know time days all did support thank or out us week here about need service "
    "team update wrong again tracking charged cancel subscription message phone number address password login app "
    "error broken damaged missing replacement price discount code invoice receipt bank transfer store size colour "
    "provide process promised progress proof profile programme protection provider prompt"
)
"""The vocabulary's most frequent words, most frequent first; made-up words (`_made_up`) follow, rarer and rarer."""
HEAD = HEAD_TEXT.split()
NAMES_TEXT = (
    "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil"
    " / Smith Jones Taylor Brown Williams Wilson Johnson Davies Robinson Wright Thompson Evans"
)
FIRST_NAMES, LAST_NAMES = (names.split() for names in NAMES_TEXT.split("/"))
RARE_RANK = 40_000
"""The rare word is the vocabulary's word of this rank: a few dozen rows hold it."""
COMMON = "the"
PREFIX = "pro"
SMALL = 10
"""Tickets (each with its first message) of a second organization, made after the first one's rows."""
STATUSES = {"open": 30, "pending": 20, "resolved": 30, "closed": 20}
"""Ticket statuses and their shares (%)."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(1, -(-len(ordered) * int(q) // 100)) - 1]


# ---------------------------------------------------------------------------------------------------- the text


def _made_up(rng: random.Random) -> Iterator[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["ar", "el", "in", "on", "us", "ex"]
    seen = set(HEAD)
    while True:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            yield word


class Words:
    """Sentences of words drawn by rank from a Zipf-like distribution (weight 1 / rank^ZIPF_EXPONENT)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = HEAD + list(itertools.islice(_made_up(self.rng), VOCABULARY - len(HEAD)))
        self.cumulative = list(itertools.accumulate(1 / rank**ZIPF_EXPONENT for rank in range(1, VOCABULARY + 1)))

    def sentence(self, low: int, high: int) -> str:
        drawn = self.rng.choices(self.vocabulary, cum_weights=self.cumulative, k=self.rng.randint(low, high))
        return " ".join(drawn).capitalize() + "."


# ---------------------------------------------------------------------------------------------------- the fill

Row = dict[str, Any]


@dataclass
class Fill:
    organization_id: str
    small_organization_id: str
    """Another organization, of SMALL tickets: where the organization's common word is not common."""
    rare: str
    seconds: dict[str, float]
    rows: dict[str, int]


def _batches(rows: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(itertools.islice(rows, size)):
        yield batch


def _insert_all(connection: Connection, table: Table, batches: list[list[Row]]) -> None:
    for batch in batches:
        connection.execute(insert(table), batch)


async def insert_rows(db: Database, table: Table, rows: Iterator[Row], *, what: str, total: int) -> float:
    """Seconds to insert `rows`, ten batches of BATCH a transaction."""
    began, done = time.perf_counter(), 0
    for transaction in _batches(_batches(rows, BATCH), 10):
        await db.write(_insert_all, table, transaction)
        done += sum(len(batch) for batch in transaction)
        log(f"  {what}: {done:,}/{total:,}")
    return time.perf_counter() - began


async def new_organization(db: Database) -> str:
    organization_id = str(uuid.uuid4())
    row = {"id": organization_id, "name": "Bench", "slug": f"bench-{organization_id[:8]}", "plan": "free"}
    await db.write(lambda c: c.execute(insert(ORGANIZATIONS).values(created_at=datetime.now(UTC), **row)))
    return organization_id


def reply_rows(
    words: Words, rng: random.Random, organization_id: str, ticket_ids: list[str], *, count: int, start: datetime
) -> Iterator[Row]:
    spread = timedelta(days=540)
    for index in range(count):
        # A reply goes to a ticket made before it, mostly a recent one.
        newest = max(1, len(ticket_ids) * index // count)
        yield {
            "id": str(uuid.uuid4()),
            "organization_id": organization_id,
            "ticket_id": ticket_ids[max(0, newest - 1 - int(rng.expovariate(1 / 50)))],
            "author_type": rng.choice(("agent", "customer")),
            "author_id": None,
            "body": words.sentence(15, 70),
            "internal": rng.random() < 0.1,
            "message_id": None,
            "attachments": [],
            "created_at": start + spread * index / count + timedelta(seconds=1),
        }


async def fill(db: Database, *, customers: int, tickets_: int, replies: int) -> Fill:
    """One organization's customers, tickets and replies, each in creation order (rowids and created_at agree)."""
    words, rng = Words(seed=29), random.Random(7)
    organization_id = await new_organization(db)
    start, spread = datetime(2025, 1, 1, tzinfo=UTC), timedelta(days=540)
    customer_ids = [str(uuid.uuid4()) for _ in range(customers)]
    ticket_ids = [str(uuid.uuid4()) for _ in range(tickets_)]

    def customer_rows() -> Iterator[Row]:
        for index, id_ in enumerate(customer_ids):
            first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
            at = start + spread * index / customers
            yield {
                "id": id_,
                "organization_id": organization_id,
                "email": f"{first}.{last}{index}@example.com".lower(),
                "name": f"{first} {last}",
                "phone": f"+1{rng.randint(2_000_000_000, 9_999_999_999)}",
                "bouncing": False,
                "created_at": at,
                "updated_at": at,
            }

    def ticket_rows() -> Iterator[Row]:
        for index, id_ in enumerate(ticket_ids):
            at = start + spread * index / tickets_
            yield {
                "id": id_,
                "organization_id": organization_id,
                "number": index + 1,
                "subject": words.sentence(3, 9),
                "status": rng.choices(list(STATUSES), list(STATUSES.values()))[0],
                "priority": rng.choice(tickets.PRIORITIES),
                "channel": "email",
                "customer_id": rng.choice(customer_ids),
                "assignee_id": None,
                "tags": [],
                "thread_key": None,
                "created_at": at,
                "updated_at": at,
            }

    seconds = {
        "customers": await insert_rows(db, CUSTOMERS, customer_rows(), what="customers", total=customers),
        "tickets": await insert_rows(db, tickets.TICKETS, ticket_rows(), what="tickets", total=tickets_),
        "replies": await insert_rows(
            db,
            tickets.CONVERSATIONS,
            reply_rows(words, rng, organization_id, ticket_ids, count=replies, start=start),
            what="replies",
            total=replies,
        ),
    }
    counts = {"customers": customers, "tickets": tickets_, "replies": replies}
    small = await new_organization(db)
    await db.write(_small_organization, small)
    return Fill(organization_id, small, words.vocabulary[RARE_RANK - 1], seconds, counts)


def _small_organization(connection: Connection, organization_id: str) -> None:
    for n in range(SMALL):
        tickets.create(
            connection,
            organization_id,
            subject=f"Where is the order {n}?",
            customer_email=f"small-{n}@bench.example",
            message=f"Hello, the order {n} has not arrived.",
            actor_id=None,
            now=datetime.now(UTC),
            recorded=[],
        )


async def settle(db: Database) -> None:
    """What happens after a bulk load before searches run: the planner's statistics gathered, and on PostgreSQL the
    GIN indexes' pending entries merged (autovacuum does both)."""
    if db.url.startswith("sqlite"):
        await db.write(lambda connection: connection.execute(text("ANALYZE")))
        return
    async with db.engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        for table in SEARCHED:
            await autocommit.execute(text(f"VACUUM ANALYZE {table}"))


# ------------------------------------------------------------------------------------------------- the queries


@dataclass
class Figures:
    query: str
    matches: str
    p50_ms: float
    p99_ms: float
    baseline: bool = False


def matches(connection: Connection, organization_id: str, query: str, status: str | None) -> str:
    """How many tickets and replies of the organization hold every word of `query` (with `status`: its tickets of that
    status, and their replies): what each kind's newest search.MAX_RESULTS are taken from."""
    dialect = connection.dialect.name
    counts = []
    for table in ("helpdesk_tickets", "helpdesk_conversations"):
        ticket = "t" if table == "helpdesk_tickets" else "ticket"
        join = "" if table == "helpdesk_tickets" else " JOIN helpdesk_tickets AS ticket ON ticket.id = t.ticket_id"
        where = f" AND {ticket}.status = :status" if status else ""
        if dialect == "sqlite":
            statement = (
                f"SELECT count(*) FROM {table}_search JOIN {table} AS t"
                f" ON t.rowid = {table}_search.rowid & {search.ROWS_PER_ORGANIZATION - 1}{join}"
                f" WHERE {table}_search MATCH :terms AND t.organization_id = :organization_id{where}"
            )
        else:
            statement = (
                f"SELECT count(*) FROM {table} AS t{join} WHERE t.search_vector @@ to_tsquery('simple', :terms)"
                f" AND t.organization_id = :organization_id{where}"
            )
        terms = search.terms(dialect, search.words(query))
        params = {"terms": terms, "organization_id": organization_id, "status": status}
        counts.append(connection.execute(text(statement), params).scalar_one())
    return " + ".join(f"{count:,}" for count in counts)


async def measure(db: Database, filled: Fill, repetitions: int) -> list[Figures]:
    figures = []
    for status in (None, "open"):
        where = f", status={status}" if status else ""
        listing = functools.partial(
            tickets.listing, organization_id=filled.organization_id, status=status, limit=20, cursor=None
        )
        # (name, organization, words or None for the baseline, the unit of work)
        runs: list[tuple[str, str, str | None, Callable[[Connection], Any]]] = [
            (f"baseline: ticket listing{where}", filled.organization_id, None, listing)
        ]
        queries = [
            (f"rare word '{filled.rare}'", filled.organization_id, filled.rare),
            (f"common word '{COMMON}'", filled.organization_id, COMMON),
            (f"3-letter prefix '{PREFIX}'", filled.organization_id, PREFIX),
        ]
        if status is None:
            # The common word searched in another organization, whose few tickets hold it too.
            small = f"common word '{COMMON}', in another organization of {SMALL} tickets"
            queries.append((small, filled.small_organization_id, COMMON))
        for label, organization_id, query in queries:
            hits = functools.partial(search.search, organization_id=organization_id, query=query, status=status)
            runs.append((f"{label}{where}", organization_id, query, hits))
        for name, organization_id, searched, work in runs:
            matching = "-" if searched is None else await db.read(matches, organization_id, searched, status)
            figures.append(await timed(db, name, matching, work, repetitions, baseline=searched is None))
    return figures


async def timed(
    db: Database, name: str, matching: str, work: Callable[[Connection], Any], repetitions: int, *, baseline: bool
) -> Figures:
    """`work` run `repetitions` times through `Database.read`, after 3 runs that warm the caches."""
    for _ in range(3):
        await db.read(work)
    timings = []
    for _ in range(repetitions):
        began = time.perf_counter()
        await db.read(work)
        timings.append((time.perf_counter() - began) * 1000)
    timings.sort()
    figures = Figures(name, matching, percentile(timings, 50), percentile(timings, 99), baseline)
    log(f"  {name}: p50 {figures.p50_ms:.2f} ms, p99 {figures.p99_ms:.2f} ms")
    return figures


# ------------------------------------------------------------------------------------------------- the costs


def index_size(connection: Connection) -> list[tuple[str, int]]:
    """Bytes of the index's parts: SQLite's FTS tables (dbstat); PostgreSQL's indexes and generated columns."""
    if connection.dialect.name == "sqlite":
        rows = connection.execute(text("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY name"))
        return [(name, int(size)) for name, size in rows if name in SEARCH_TABLES]
    sizes = []
    for name in sorted(SEARCH_INDEXES):
        size = connection.execute(text("SELECT pg_relation_size(CAST(:name AS regclass))"), {"name": name})
        sizes.append((name, int(size.scalar_one())))
    for table in SEARCHED:
        size = connection.execute(text(f"SELECT coalesce(sum(pg_column_size(search_vector)), 0) FROM {table}"))
        sizes.append((f"{table}.search_vector", int(size.scalar_one())))
    return sizes


def database_size(connection: Connection) -> int:
    if connection.dialect.name == "sqlite":
        statement = "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size"
    else:
        statement = "SELECT pg_database_size(current_database())"
    return int(connection.execute(text(statement)).scalar_one())


MAIL_BODY = "Hello,\n\nmy order {n} has not arrived yet. Could you look into it?\n\nThanks,\nCustomer {sender}"
"""The inbound benchmark's mail (bench/helpdesk_inbound.py): a ticket's first message."""
ROUND = 64
"""Tickets a transaction in the ticket part of the write cost: a round of the inbound processors."""


def _create_tickets(connection: Connection, organization_id: str, first: int) -> None:
    for n in range(first, first + ROUND):
        tickets.create(
            connection,
            organization_id,
            subject=f"Order {n} has not arrived ({uuid.uuid4().hex[:12]}.{n}@bench.example)",
            customer_email=f"customer-{n % 100}@bench.example",
            message=MAIL_BODY.format(n=n, sender=n % 100),
            actor_id=None,
            now=datetime.now(UTC),
            recorded=[],
        )


async def write_cost(new_database: Callable[[], Any], rows: int) -> dict[str, str]:
    """Without the index (revision 0013) and with it (the newest), each in a new database: replies inserted a second
    (as the fill inserts them), and the time a ticket takes to be made with its first message by the storage call
    the inbound processors make (`tickets.create`), 64 to a transaction, for a tenth as many tickets."""
    costs = {}
    for revision in ("0013", "head"):
        log(f"write cost: {rows:,} replies and {rows // 10:,} tickets at revision {revision}")
        async with new_database() as url:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.set_main_option("sqlalchemy.url", url)
            await asyncio.to_thread(command.upgrade, config, revision)
            db = Database(url)
            try:
                organization_id = await new_organization(db)
                ticket_ids = [str(uuid.uuid4()) for _ in range(max(1, rows // 3))]  # no ticket rows: replies alone
                start = datetime(2025, 1, 1, tzinfo=UTC)
                replies = reply_rows(
                    Words(seed=3), random.Random(3), organization_id, ticket_ids, count=rows, start=start
                )
                seconds = await insert_rows(db, tickets.CONVERSATIONS, replies, what="replies", total=rows)
                began, made = time.perf_counter(), 0
                while made < rows // 10:
                    await db.write(_create_tickets, organization_id, made)
                    made += ROUND
                per_ticket_ms = (time.perf_counter() - began) * 1000 / made
            finally:
                await db.dispose()
        index = "without the index" if revision == "0013" else "with the index"
        costs[f"replies {index}"] = f"{rows / seconds:,.0f}/s"
        costs[f"a ticket and its first message {index}"] = f"{per_ticket_ms:.3f} ms"
    return costs


# -------------------------------------------------------------------------------------------------- a run


@dataclass
class Run:
    name: str
    filled: Fill
    figures: list[Figures]
    sizes: list[tuple[str, int]]
    total: int
    writes: dict[str, str]


async def run(name: str, new_database: Callable[[], Any], arguments: argparse.Namespace) -> Run:
    # The write cost first, on a server not yet busy writing back the big fill.
    writes = await write_cost(new_database, arguments.write_rows) if arguments.write_rows else {}
    async with new_database() as url:
        log(f"{name}: migrating")
        await asyncio.to_thread(migrate, url)
        db = Database(url)
        try:
            log(f"{name}: filling")
            customers, tickets_, replies = arguments.customers, arguments.tickets, arguments.replies
            filled = await fill(db, customers=customers, tickets_=tickets_, replies=replies)
            await settle(db)
            log(f"{name}: measuring")
            figures = await measure(db, filled, arguments.repetitions)
            sizes = await db.read(index_size)
            total = await db.read(database_size)
        finally:
            await db.dispose()
    return Run(name, filled, figures, sizes, total, writes)


def report(run_: Run) -> None:
    print(f"\n## {run_.name}\n")
    rates = ", ".join(
        f"{run_.filled.rows[what]:,} {what} in {seconds:.1f} s ({run_.filled.rows[what] / seconds:,.0f}/s)"
        for what, seconds in run_.filled.seconds.items()
    )
    print(f"fill: {rates}\n")
    print(f"| query | matching tickets + replies | p50 ms | p99 ms | p50 / baseline's | p99 <= {P99_TARGET_MS:g} ms |")
    print("|---|---|---|---|---|---|")
    baseline = 0.0
    for figure in run_.figures:
        if figure.baseline:
            baseline, verdict = figure.p50_ms, "-"
        else:
            verdict = "yes" if figure.p99_ms <= P99_TARGET_MS else "NO"
        cells = [figure.query, figure.matches, f"{figure.p50_ms:.2f}", f"{figure.p99_ms:.2f}"]
        print("| " + " | ".join([*cells, f"{figure.p50_ms / baseline:.1f}", verdict]) + " |")
    index_bytes = sum(size for _, size in run_.sizes)
    print(f"\nindex: {index_bytes / 2**20:,.1f} MiB (the whole database: {run_.total / 2**20:,.1f} MiB)")
    for part, size in run_.sizes:
        print(f"  {part}: {size / 2**20:,.1f} MiB")
    if run_.writes:
        print("writes: " + ", ".join(f"{what} {cost}" for what, cost in run_.writes.items()))


@asynccontextmanager
async def sqlite_database() -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory(prefix="signalyard-bench-search-") as directory:
        yield sqlite_url(Path(directory) / "search.db")


@asynccontextmanager
async def postgresql_database(base_url: str) -> AsyncIterator[str]:
    """A database of its own on the server of `base_url`, dropped afterwards (as tests/conftest.py makes them)."""
    base = make_url(base_url)
    name = f"sy_bench_search_{uuid.uuid4().hex[:12]}"
    server = base.set(drivername="postgresql", database=base.database or "postgres").render_as_string(False)
    connection = await asyncpg.connect(server)
    await connection.execute(f'CREATE DATABASE "{name}"')
    await connection.close()
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        connection = await asyncpg.connect(server)
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await connection.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="a PostgreSQL server: measured there too, in a database of its own")
    parser.add_argument("--customers", type=int, default=20_000)
    parser.add_argument("--tickets", type=int, default=100_000)
    parser.add_argument("--replies", type=int, default=300_000)
    parser.add_argument("--repetitions", type=int, default=300, help="runs of each query")
    parser.add_argument(
        "--write-rows",
        type=int,
        default=30_000,
        help="replies of the write cost, and a tenth as many tickets (0: none)",
    )
    parser.add_argument("--skip-sqlite", action="store_true", help="measure PostgreSQL only")
    arguments = parser.parse_args()
    runs = []
    if not arguments.skip_sqlite:
        runs.append(await run("SQLite", sqlite_database, arguments))
    if arguments.database_url:
        runs.append(await run("PostgreSQL", functools.partial(postgresql_database, arguments.database_url), arguments))
    print(
        f"helpdesk search: {arguments.customers:,} customers, {arguments.tickets:,} tickets, {arguments.replies:,}"
        f" replies in one organization; each query {arguments.repetitions} times; the newest {search.MAX_RESULTS}"
        " matches of each kind ranked"
    )
    for each in runs:
        report(each)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
