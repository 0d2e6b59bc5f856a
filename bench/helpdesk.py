"""Helpdesk ticket creates benchmark: REST creates through the whole stack against a bare Litestar endpoint, and the
time from a create to its signed `ticket.created` delivery at a local webhook receiver.

    python bench/helpdesk.py [--duration 10] [--concurrency 1,8,32,64] [--database-url URL] [--customers 100]

Starts, as subprocesses: a webhook receiver (this script with `--receive`: plain HTTP on uvicorn, checks each
`x-helpdesk-signature`, records when each delivery arrived), `signalyard up --services helpdesk` (gateway: the key,
one transaction with the ticket, its activity and its webhook event, the event published to Kafka, 201; processors:
the fan-out group member makes the deliveries, the deliverer POSTs them) with a subscription to `ticket.created` with
a secret, and `bench/bare_app.py --service helpdesk` (the gateway's own authenticator and the key's limits, then a
canned 201 Ticket). Then, from this process (bench/phone.py's load generator, closed and open loops):

1. closed loop, for each concurrency: `--duration` s against the stack, then against the bare endpoint: creates
   answered 201 per second, p50 and p99, other statuses, CPU of each process; after each stack run, every create's
   delivery is awaited, and its latency (create answered -> delivery received) is taken for the creates sent in the
   measured window;
2. ratio@32 = stack / bare creates per second at concurrency 32 (target >= 0.5);
3. open loop at half the stack's best rate: create latency from each scheduled send time, and delivery latency
   p50/p99 (target p99 <= 1 s, every create delivered, every signature valid);
4. paired, at each concurrency: REST creates and the procedure `tickets.create` with a session cookie in closed
   loops, REST, procedures, procedures, REST, half `--duration` each (the stack slows as its database grows: the order
   lets that weigh on both alike); procedures ratio@32 = their creates per second / bare, against the paired REST
   runs' own (target: no lower);
5. the transport floor: bench/kafka_floor.py --hops 0 on the stack's broker, a publish and its acknowledgement alone,
   which each create waits for.

Each phase has a key of its own (see bench/README.md). Prints a table and the checks, and writes the figures to
bench/results/helpdesk-<timestamp>.json. Not a test: it always exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from phone import (  # noqa: E402
    AiohttpHttp,
    Answer,
    Http,
    Phase,
    RawHttp,
    Server,
    arguments,
    closed_loop,
    execute,
    first_200,
    free_port,
    idle_stack_cpu,
    log,
    machine,
    ms_text,
    open_loop,
    parse,
    percentile,
    phase_table,
    ratios,
    redacted,
    signalyard_command,
    transport_floor,
    verdict,
    wait_ready,
)
from sqlalchemy.engine import Connection  # noqa: E402

from gateway.helpdesk.accounts.credentials import AccessTokens  # noqa: E402
from gateway.helpdesk.accounts.sessions import Sessions  # noqa: E402
from processors.common.webhooks.fanout import FANOUT_WAIT_MS  # noqa: E402
from signalyard.secrets import kept as secrets_kept  # noqa: E402
from signalyard.services.helpdesk import DEMO_EMAIL  # noqa: E402
from storage.common.db import Database, sqlite_url  # noqa: E402
from storage.common.keys import hash_key  # noqa: E402
from storage.helpdesk import accounts, keys  # noqa: E402

RATIO_CONCURRENCY = 32
RATIO_TARGET = 0.5
DELIVERY_P99_TARGET_MS = 1000.0
TICKETS = "/api/v1/tickets"
PROCEDURE = "/api/trpc/tickets.create"
PROCEDURES, PAIRED_REST = "procs", "rest"
"""The paired runs' phase names: the procedure `tickets.create` with a session cookie, and REST creates beside it."""
SCRIPT = str(Path(__file__).resolve())
KEY_LIMIT = 1_000_000_000
"""Per minute and per hour, for each phase's key: never reached."""


# ------------------------------------------------------------------------------------------------ receiver


def receive(port: int, secret: str) -> None:
    """The receiver subprocess. POST: a delivery, answered 200 when its signature is the HMAC-SHA256 of the body
    keyed by `secret` (401 otherwise); the arrival (CLOCK_MONOTONIC, as this benchmark's clock) of each first
    `ticket.created` delivery is kept by ticket id. GET /deliveries?from=N: the arrivals from the Nth on and the
    counts; GET /readyz: 200."""
    import uvicorn

    key = secret.encode()
    arrivals: list[tuple[str, float]] = []
    seen: set[bytes] = set()
    counts: Counter[str] = Counter()

    def check(headers: dict[bytes, bytes], body: bytes, arrived: float) -> int:
        signature = headers.get(b"x-helpdesk-signature")
        if signature is None:
            counts["unsigned"] += 1
            return 401
        if not hmac.compare_digest(signature, hmac.new(key, body, hashlib.sha256).hexdigest().encode()):
            counts["bad_signature"] += 1
            return 401
        delivery_id = headers.get(b"x-helpdesk-delivery-id", b"")
        if delivery_id in seen:
            counts["repeated"] += 1
            return 200
        seen.add(delivery_id)
        event = json.loads(body)
        if event["event"] != "ticket.created":
            counts["other_events"] += 1
            return 200
        counts["ticket_created"] += 1
        arrivals.append((event["data"]["ticketId"], arrived))
        return 200

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        arrived = time.monotonic()
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        answer = b""
        if scope["method"] == "POST":
            status = check(dict(scope["headers"]), body, arrived)
        elif scope["path"] == "/deliveries":
            start = int(scope["query_string"].decode().removeprefix("from=") or 0)
            status, answer = 200, json.dumps({"arrivals": arrivals[start:], "counts": counts}).encode()
        else:
            status = 200 if scope["path"] == "/readyz" else 404
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-length", b"%d" % len(answer))]}
        )
        await send({"type": "http.response.body", "body": answer})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        http="httptools",
        loop="uvloop",
        lifespan="off",
        log_level="warning",
        access_log=False,
        interface="asgi3",
        timeout_keep_alive=60,
    )


class Arrivals:
    """What the receiver has recorded so far: ticket id -> arrival time; and its counts."""

    def __init__(self, receiver: Server) -> None:
        self.http = RawHttp(receiver.port, "", timeout_s=10)
        self.at: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.read = 0

    async def fetch(self) -> None:
        status, body = await self.http.get(f"/deliveries?from={self.read}")
        if status != "200":
            raise RuntimeError(f"the receiver answered {status} to GET /deliveries")
        answer = json.loads(body)
        self.read += len(answer["arrivals"])
        for ticket_id, arrived in answer["arrivals"]:
            self.at.setdefault(ticket_id, arrived)
        self.counts = answer["counts"]

    async def wait_for(self, ticket_ids: set[str], timeout_s: float) -> float | None:
        """Until every one of `ticket_ids` has arrived (or `timeout_s`); the last arrival, if all arrived."""
        deadline = time.monotonic() + timeout_s
        while True:
            await self.fetch()
            missing = ticket_ids.difference(self.at)
            if not missing:
                return max((self.at[t] for t in ticket_ids), default=None)
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.2)


# ------------------------------------------------------------------------------------------------ load


class _Created(msgspec.Struct):
    id: str


class _Data(msgspec.Struct):
    json: _Created


class _Result(msgspec.Struct):
    data: _Data


class _Called(msgspec.Struct):
    result: _Result


_created = msgspec.json.Decoder(_Created).decode
_called = msgspec.json.Decoder(_Called).decode


class Creates:
    """The load client (bench/phone.py's LoadClient): ticket creates, each with its own subject, for one of
    `customers` customers in turn (new ones at first, then existing ones), with the key `use` gave, or, after
    `use_session`, as the procedure `tickets.create` with a signed-in member's cookies. While tracking, it keeps each
    ticket's (sent, answered) times by id."""

    def __init__(self, kind: str, customers: int) -> None:
        self.kind = kind
        self.customers = customers
        self.seq = 0
        self.authorization = ""
        self.cookie = ""
        self.created: dict[str, tuple[float, float]] | None = None

    ok_status = "201"

    def use(self, key: str, *, track: bool) -> None:
        self.authorization, self.cookie, self.ok_status = f"Bearer {key}", "", "201"
        self.created = {} if track else None

    def use_session(self, cookie: str, *, track: bool) -> None:
        self.authorization, self.cookie, self.ok_status = "", cookie, "200"
        self.created = {} if track else None

    def connect(self, server: Server, limit: int) -> Http:
        if self.cookie:
            return RawHttp(server.port, "", path=PROCEDURE, headers={"Cookie": self.cookie})
        if self.kind == "aiohttp":
            return AiohttpHttp(server.port, self.authorization, limit, path=TICKETS)
        return RawHttp(server.port, self.authorization, path=TICKETS)

    async def send(self, http: Http) -> Answer:
        self.seq += 1
        subject, customer = self.seq, self.seq % self.customers
        if self.cookie:
            body = b'{"json": {"subject": "Order %d has not arrived", "customerEmail": "customer-%d@bench.example"}}'
        else:
            body = b'{"subject": "Order %d has not arrived", "customer_email": "customer-%d@bench.example"}'
        sent = time.monotonic()
        status, answer = await http.post(body % (subject, customer))
        if status == self.ok_status and self.created is not None:
            made = _called(answer).result.data.json if self.cookie else _created(answer)
            self.created[made.id] = (sent, time.monotonic())
        return status, answer


@dataclass
class Deliveries:
    """The deliveries of one stack phase's creates."""

    mode: str
    concurrency: int | None
    rate: float | None
    created: int
    """Creates answered 201 in the whole phase (warm-up included): each must be delivered."""
    delivered: int
    measured: int
    """Creates sent in the measured window and delivered: the latencies' sample."""
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    """Create answered -> delivery received."""
    sent_p50_ms: float | None = None
    sent_p99_ms: float | None = None
    """Create sent -> delivery received."""
    drain_s: float | None = None
    """From the phase's end to its last delivery (None: not all delivered within --delivery-timeout)."""
    receiver_cpu_percent: float = 0.0


def deliveries_of(
    phase: Phase,
    created: dict[str, tuple[float, float]],
    arrivals: Arrivals,
    window: tuple[float, float],
    *,
    ended: float,
    last: float | None,
) -> Deliveries:
    """`created`'s deliveries; latencies of those sent in the measured `window`; `ended`: when the phase ended,
    `last`: its last delivery (None: some never came)."""
    answered: list[float] = []
    sent: list[float] = []
    for ticket_id, (sent_at, answered_at) in created.items():
        arrived = arrivals.at.get(ticket_id)
        if arrived is not None and window[0] <= sent_at < window[1]:
            answered.append(arrived - answered_at)
            sent.append(arrived - sent_at)
    answered.sort()
    sent.sort()

    def ms(ordered: list[float], q: float) -> float | None:
        value = percentile(ordered, q)
        return None if value is None else round(value * 1000, 1)

    return Deliveries(
        phase.mode,
        phase.concurrency,
        phase.rate,
        created=len(created),
        delivered=sum(1 for ticket_id in created if ticket_id in arrivals.at),
        measured=len(answered),
        p50_ms=ms(answered, 50),
        p99_ms=ms(answered, 99),
        max_ms=ms(answered, 100),
        sent_p50_ms=ms(sent, 50),
        sent_p99_ms=ms(sent, 99),
        drain_s=None if last is None else round(max(0.0, last - ended), 2),
        receiver_cpu_percent=phase.cpu_percent.get("idle_receiver_server", 0.0),
    )


# ------------------------------------------------------------------------------------------------ orchestration


async def closed_then_open(
    args: argparse.Namespace,
    phase: Callable[..., Awaitable[Phase]],
    servers: tuple[Server, Server],
    phases: list[Phase],
    unit: str,
) -> tuple[Phase, Phase | None]:
    """`phase` (a benchmark's own, appending to `phases`) in closed loops at each concurrency, the stack then the bare
    endpoint of `servers`, then in an open loop on the stack at half its best rate: the stack's best closed loop, and
    the open loop (None when the stack answered nothing)."""
    stack, bare = servers
    for concurrency in args.concurrency:
        for server in (stack, bare):
            log(f"closed loop: {server.name}, concurrency {concurrency}, {args.duration:g}s")
            await phase(server, concurrency)
    best = max((p for p in phases if p.target == "stack"), key=lambda p: p.throughput)
    half_rate = best.throughput / 2
    if half_rate <= 0:
        return best, None
    log(f"open loop: stack at {half_rate:.1f} {unit}/s (half of {best.throughput:.1f}), {args.duration:g}s")
    return best, await phase(stack, rate=half_rate)


async def floors(
    args: argparse.Namespace, stack: Server, hop_wait_ms: int, hop: str
) -> tuple[list[Phase], list[Phase]]:
    """The transport floor on the stack's broker: publishes and their acknowledgements at the closed loops'
    concurrencies, and `hop` (a consumer group fetching with a `hop_wait_ms` wait) one event at a time."""
    log("transport floor: publishes and their acks alone on the stack's broker (kafka_floor.py --hops 0)")
    closed = await transport_floor(args, stack, ["--hops", "0"])
    log(f"{hop} alone, one event at a time (kafka_floor.py --hops 1 --wait-ms {hop_wait_ms})")
    hops = ["--hops", "1", "--wait-ms", str(hop_wait_ms)]
    return closed, await transport_floor(args, stack, hops, concurrency=[1], mode="hop")


def stack_env(args: argparse.Namespace, data_dir: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SIGNALYARD_DATA_DIR=str(data_dir),
        SIGNALYARD_HELPDESK_PORT=str(port),
        SIGNALYARD_WEBHOOK_ALLOW_PRIVATE_TARGETS="true",  # the receiver is on 127.0.0.1
        SIGNALYARD_LOG_LEVEL=args.log_level,
        PYTHONUNBUFFERED="1",
    )
    if args.database_url:
        env["SIGNALYARD_DATABASE_URL"] = args.database_url
    return env


AUTOVACUUM_NAPTIME_S = 5.0
"""How often the stand-in for autovacuum looks at the tables (the server's own default is a minute, which the runs of
a benchmark would hardly see)."""
_ANALYZE_DUE = """
    SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
"""
"""The tables autovacuum would analyze now, by its default thresholds (50 rows, and a tenth of the table, changed)."""


async def stand_in_for_autovacuum(db: Database) -> Callable[[], Awaitable[None]]:
    """On a PostgreSQL server whose autovacuum is off (this machine's is, for its tests), analyze the bench's tables
    as autovacuum would, every AUTOVACUUM_NAPTIME_S, for as long as the run lasts; returns what stops it. Without
    statistics the planner keeps, for the whole run, the plans it made while the tables were nearly empty: a scan of
    the whole table for the reply sender's read of eight queued rows by id (3.9 ms, where 0.2 would do). No production
    server runs like that after its first minute. Nothing on SQLite or where autovacuum is on."""

    def unattended(connection: Connection) -> bool:
        if connection.dialect.name != "postgresql":
            return False
        return connection.exec_driver_sql("SHOW autovacuum").scalar() == "off"

    async def nothing() -> None:
        pass

    if not await db.read(unattended):
        return nothing

    def analyze(connection: Connection) -> None:
        for (table,) in connection.exec_driver_sql(_ANALYZE_DUE).all():
            connection.exec_driver_sql(f'ANALYZE "{table}"')

    async def rounds() -> None:
        while True:
            await asyncio.sleep(AUTOVACUUM_NAPTIME_S)
            await db.write(analyze)

    task = asyncio.create_task(rounds())
    log(f"autovacuum is off: the bench analyzes the tables as autovacuum would, every {AUTOVACUUM_NAPTIME_S:g}s")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return stop


class Keys:
    """A fresh `*` key per phase, with limits no run reaches, made as `signalyard helpdesk keys create` makes them
    (storage.helpdesk.keys.create_key), in this process rather than by a CLI process per key (2 s of CPU each). Each
    phase's key then has moving windows (kept in memory, one entry per request for the window's length) holding that
    phase's requests only, not every earlier phase's."""

    def __init__(self, database_url: str, demo_key: str) -> None:
        self.db = Database(database_url)
        self.demo_key = demo_key
        self.organization_id = ""
        self.made = 0

    async def organization(self) -> str:
        """The demo organization, which owns the demo key."""
        if not self.organization_id:
            owners = await self.db.read(keys.key_owners, [hash_key(self.demo_key)], datetime.now(UTC))
            if not owners:
                raise RuntimeError("the demo key names no organization")
            self.organization_id = next(iter(owners.values())).organization_id
        return self.organization_id

    async def session(self, data_dir: Path) -> str:
        """A new session of the demo organization's admin, as signing in makes one: the Cookie header of its access
        and refresh tokens (signed with the stack's session key, kept in its data directory)."""
        user = await self.db.read(accounts.user_by_email, DEMO_EMAIL)
        assert user is not None, "the demo admin"
        key = secrets_kept(data_dir, "helpdesk-session-key").encode()
        started = await Sessions(self.db, AccessTokens(key), secure=False).start(user.id)
        return "; ".join(f"{cookie.key}={cookie.value}" for cookie in started.cookies)

    async def next(self) -> str:
        await self.organization()
        self.made += 1
        limits = {"minute": KEY_LIMIT, "hour": KEY_LIMIT}
        _, key = await self.db.write(
            keys.create_key, self.organization_id, name=f"bench {self.made}", scopes=["*"], rate_limits=limits
        )
        return key

    async def aclose(self) -> None:
        await self.db.dispose()


class Bench:
    """One run: its servers, its keys, the load client, and what each phase measured."""

    def __init__(self, args: argparse.Namespace, servers: list[Server], workdir: Path) -> None:
        self.args = args
        self.servers = servers
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.database_url = args.database_url or sqlite_url((self.data_dir / "signalyard.db").resolve())
        self.secret = secrets.token_hex(16)
        self.client = Creates(args.client, args.customers)
        self.phases: list[Phase] = []
        self.deliveries: list[Deliveries] = []
        self.closers: list[Callable[[], Awaitable[None]]] = []

    def server(self, name: str, argv: list[str], env: dict[str, str], port: int) -> Server:
        server = Server(name, argv, env, self.workdir, port)
        self.servers.append(server)
        server.start()
        return server

    async def start(self) -> None:
        """The receiver, the stack (subscribed to ticket.created, a first create delivered) and the bare endpoint."""
        args = self.args
        self.data_dir.mkdir()
        port = free_port()
        self.receiver = self.server(
            "receiver", [sys.executable, SCRIPT, "--receive", str(port), self.secret], dict(os.environ), port
        )
        await wait_ready(self.receiver, args.startup_timeout)
        self.arrivals = Arrivals(self.receiver)
        self.closers.append(self.arrivals.http.aclose)

        port = free_port()
        log(f"starting `signalyard up --services helpdesk` on port {port} (data dir {self.data_dir})")
        argv = [*signalyard_command(), "--services", "helpdesk"]
        self.stack = self.server("stack", argv, stack_env(args, self.data_dir, port), port)
        await wait_ready(self.stack, args.startup_timeout)
        self.stack.note_children()
        demo_key = self.data_dir / "demo-helpdesk-key"
        if not demo_key.exists():
            raise RuntimeError(f"no demo key in {demo_key}\n{self.stack.log_tail()}")
        self.keys = Keys(self.database_url, demo_key.read_text().strip())
        self.closers.append(await stand_in_for_autovacuum(self.keys.db))  # stopped before the keys' database
        self.closers.append(self.keys.aclose)
        key = await self.keys.next()
        await self.subscribe(key)
        log(f"stack ready (pid {self.stack.pid}, children {list(self.stack.children)}); receiver subscribed")
        self.client.use(key, track=True)
        started = time.monotonic()
        canned = await first_200(self.client, self.stack, args.warmup_timeout)
        assert self.client.created is not None
        if await self.arrivals.wait_for(set(self.client.created), args.warmup_timeout) is None:
            raise RuntimeError(f"no delivery within {args.warmup_timeout:g}s of a create\n{self.stack.log_tail()}")
        log(f"first create delivered after {time.monotonic() - started:.1f}s")
        response = self.workdir / "ticket.json"
        response.write_bytes(canned)

        port = free_port()
        log(f"starting bench/bare_app.py --service helpdesk on port {port}")
        argv = [sys.executable, str(HERE / "bare_app.py"), "--service", "helpdesk", "--port", str(port)]
        argv += ["--database-url", self.database_url, "--response", str(response)]
        self.bare = self.server("bare", argv, self.stack.env, port)
        await wait_ready(self.bare, args.startup_timeout)
        self.client.use(await self.keys.next(), track=False)
        await first_200(self.client, self.bare, 10)
        log(f"bare endpoint ready (pid {self.bare.pid})")

    async def subscribe(self, key: str) -> None:
        http = RawHttp(self.stack.port, f"Bearer {key}", path="/api/v1/webhooks")
        url = f"http://127.0.0.1:{self.receiver.port}/hooks/helpdesk"
        body = json.dumps({"url": url, "events": ["ticket.created"], "secret": self.secret}).encode()
        try:
            status, answer = await http.post(body)
        finally:
            await http.aclose()
        if status != "201":
            raise RuntimeError(f"POST /api/v1/webhooks answered {status}: {answer[:500]!r}\n{self.stack.log_tail()}")

    async def phase(
        self,
        server: Server,
        concurrency: int | None = None,
        rate: float | None = None,
        *,
        target: str | None = None,
        duration: float | None = None,
    ) -> Phase:
        """A closed loop at `concurrency` or an open loop at `rate` for `duration` (default `--duration`), with a new
        key, or with a new session's cookies as the procedure `tickets.create` when `target` is PROCEDURES; for the
        stack, then its deliveries. `target` names the phase (default: the server's name)."""
        args, client = self.args, self.client
        duration = args.duration if duration is None else duration
        if target == PROCEDURES:
            client.use_session(await self.keys.session(self.data_dir), track=True)
        else:
            client.use(await self.keys.next(), track=server is self.stack)
        began = time.monotonic()
        if rate is None:
            assert concurrency is not None
            phase = await closed_loop(
                client, server, self.servers, concurrency, duration_s=duration, warmup_s=args.warmup
            )
        else:
            began += 0.01  # open_loop's first send
            phase = await open_loop(client, server, self.servers, rate, duration_s=duration, warmup_s=args.warmup)
        phase.target = target or phase.target
        self.phases.append(phase)
        log(f"  {phase.throughput:.1f} ok/s, p50 {phase.p50_ms} ms, p99 {phase.p99_ms} ms, other {phase.failures}")
        if client.created is not None:
            ended = time.monotonic()
            last = await self.arrivals.wait_for(set(client.created), args.delivery_timeout)
            window = (began + args.warmup, began + args.warmup + duration)
            found = deliveries_of(phase, client.created, self.arrivals, window, ended=ended, last=last)
            self.deliveries.append(found)
            log(
                f"  delivered {found.delivered}/{found.created}; p50 {found.p50_ms} ms, p99 {found.p99_ms} ms from the"
                f" create's answer; last {found.drain_s} s after the run"
            )
        await asyncio.sleep(args.pause)
        return phase

    async def paired(self, concurrency: int) -> None:
        """REST creates and procedure calls in closed loops at `concurrency`, in the order REST, procedures,
        procedures, REST, half `--duration` each: the stack slows as its database grows, and this order lets that
        weigh on both alike."""
        half = self.args.duration / 2
        for target in (PAIRED_REST, PROCEDURES, PROCEDURES, PAIRED_REST):
            log(f"closed loop: {target} (paired), concurrency {concurrency}, {half:g}s")
            await self.phase(self.stack, concurrency, target=target, duration=half)

    async def measure(self) -> dict[str, Any]:
        args = self.args
        best, open_phase = await closed_then_open(args, self.phase, (self.stack, self.bare), self.phases, "creates")
        for concurrency in args.concurrency:
            await self.paired(concurrency)
        half_rate = best.throughput / 2
        open_deliveries = self.deliveries[-1] if open_phase is not None else None
        closed, hop = await floors(args, self.stack, FANOUT_WAIT_MS, "the fan-out's hop")
        self.phases += closed + hop
        await self.arrivals.fetch()
        counts = self.arrivals.counts

        ratio, ceiling = ratios(self.phases, RATIO_CONCURRENCY)
        procedures, paired_rest = (paired_ratio(self.phases, RATIO_CONCURRENCY, t) for t in (PROCEDURES, PAIRED_REST))
        delivery_met = None
        if open_phase is not None and open_deliveries is not None and open_deliveries.p99_ms is not None:
            delivery_met = (
                open_deliveries.p99_ms <= DELIVERY_P99_TARGET_MS
                and open_deliveries.delivered == open_deliveries.created
                and open_phase.failures == "-"
                and not counts.get("bad_signature")
                and not counts.get("unsigned")
            )
        return {
            "benchmark": "helpdesk",
            "settings": {
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "concurrency": args.concurrency,
                "customers": args.customers,
                "database": "sqlite (temporary)" if not args.database_url else redacted(args.database_url),
                "key_limits": f"{KEY_LIMIT}/minute and /hour, a new key per phase",
                "delivery_latency": "create answered (201 read by the client) -> delivery received (at the receiver)",
            },
            "phases": [asdict(p) | {"failures": p.failures} for p in self.phases],
            "deliveries": [asdict(d) for d in self.deliveries],
            "receiver_counts": counts,
            "idle_stack_cpu_percent_during_bare": idle_stack_cpu(self.phases),
            "max_rate": best.throughput,
            "max_rate_concurrency": best.concurrency,
            "ratio_at_32": ratio,
            "ratio_target": RATIO_TARGET,
            "ratio_met": None if ratio is None else ratio >= RATIO_TARGET,
            "transport_ceiling_at_32": ceiling,
            "procedures_ratio_at_32": procedures,
            "paired_rest_ratio_at_32": paired_rest,
            "procedures_ratio_met": None if procedures is None or paired_rest is None else procedures >= paired_rest,
            "half_max_rate": round(half_rate, 1),
            "open_loop": None if open_phase is None else asdict(open_phase) | {"failures": open_phase.failures},
            "open_loop_deliveries": None if open_deliveries is None else asdict(open_deliveries),
            "delivery_p99_target_ms": DELIVERY_P99_TARGET_MS,
            "delivery_p99_met": delivery_met,
            "fanout_hop_ms": {"p50": hop[0].p50_ms, "p99": hop[0].p99_ms} if hop else None,
        }

    async def aclose(self) -> None:
        for close in self.closers:
            await close()


async def run_bench(
    make: Callable[[argparse.Namespace, list[Server], Path], Any],
    args: argparse.Namespace,
    servers: list[Server],
    workdir: Path,
) -> dict[str, Any]:
    """A benchmark's `Bench` (`make(args, servers, workdir)`) started, measured and closed: its figures, with when and
    on what machine they were taken."""
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    bench = make(args, servers, workdir)
    try:
        await bench.start()
        figures = await bench.measure()
    finally:
        await bench.aclose()
    return {
        **figures,
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "machine": machine(load_before, args.client),
    }


async def run(args: argparse.Namespace, servers: list[Server], workdir: Path) -> dict[str, Any]:
    return await run_bench(Bench, args, servers, workdir)


def latency_table(
    rows: list[dict[str, Any]], labels: tuple[str, str, str, str], keys: tuple[str, str, str]
) -> list[str]:
    """The second table of a report: per run, what the stack took in and what came out of it, and its latency.
    `labels`: the in and out counts', the sent-to-out p99's and the observer's CPU column headers; `keys`: the in
    count's, the out count's and the observer's CPU's keys in `rows`."""
    taken, came, sent, observer = labels
    taken_key, came_key, cpu_key = keys
    lines = [
        f"{'mode':<6} {'conc':>5} {'rate':>7} {taken:>8} {came:>9} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'max ms':>8}  {sent:>14} {'drained s':>9} {observer:>10}"
    ]
    for row in rows:
        lines.append(
            f"{row['mode']:<6} {row['concurrency'] or '-':>5} {row['rate'] or '-':>7} {row[taken_key]:>8}"
            f" {row[came_key]:>9} {ms_text(row['p50_ms']):>8} {ms_text(row['p99_ms']):>8} {ms_text(row['max_ms']):>8}"
            f"  {ms_text(row['sent_p99_ms']):>14}"
            f" {'-' if row['drain_s'] is None else format(row['drain_s'], '.2f'):>9} {row[cpu_key]:>10.0f}"
        )
    return lines


def paired_ratio(phases: list[Phase], concurrency: int, target: str) -> float | None:
    """`target`'s paired closed loops at `concurrency` (creates over their whole measured time) / bare creates."""
    bare = next((p for p in phases if (p.target, p.mode, p.concurrency) == ("bare", "closed", concurrency)), None)
    slices = [p for p in phases if (p.target, p.concurrency) == (target, concurrency)]
    if bare is None or not slices or not bare.throughput:
        return None
    return round(sum(p.ok for p in slices) / sum(p.duration_s for p in slices) / bare.throughput, 3)


def rate_lines(result: dict[str, Any], unit: str, per: str) -> list[str]:
    """The stack's best rate, the ratio at RATIO_CONCURRENCY against its target, and the transport ceiling (`unit`:
    what is counted a second; `per`: one publish per what)."""
    ratio, ceiling = result["ratio_at_32"], result["transport_ceiling_at_32"]
    return [
        f"stack max rate = {result['max_rate']:.1f} {unit}/s"
        f" (closed loop, concurrency {result['max_rate_concurrency']})",
        f"ratio@{RATIO_CONCURRENCY} = {'n/a' if ratio is None else f'{ratio:.3f}'} (target >= {RATIO_TARGET:.2f})"
        f"  {verdict(result['ratio_met'])}",
        f"transport ceiling@{RATIO_CONCURRENCY} = {'n/a' if ceiling is None else f'{ceiling:.3f}'}"
        f" (kafka / bare: acknowledged publishes, one per {per})",
    ]


def report(result: dict[str, Any]) -> str:
    settings = result["settings"]
    lines = [
        "",
        f"helpdesk ticket creates benchmark ({settings['duration_s']:g}s per run, {settings['database']}, "
        f"{result['machine']['cpus']} CPUs, {result['machine']['client']}, {settings['customers']} customers)",
        "",
        *phase_table(result["phases"]),
        "",
        "deliveries of the stack's creates (ticket.created; latency: create answered -> delivery received):",
        *latency_table(
            result["deliveries"],
            ("creates", "delivered", "sent->recv p99", "recv cpu%"),
            ("created", "delivered", "receiver_cpu_percent"),
        ),
    ]
    idle = result["idle_stack_cpu_percent_during_bare"]
    counts = result["receiver_counts"]
    open_phase, open_deliveries = result["open_loop"], result["open_loop_deliveries"]
    lines += [
        "",
        "ok/s = creates answered 201 per second; kafka closed: publishes acknowledged per second (kafka_floor.py",
        "--hops 0), kafka hop: the fan-out's hop, round trips per second (--hops 1). cpu% = share of one core over",
        "the measured window (srv: the server process, for the stack its gateway; child: Tansu and the processors;",
        "client: this load generator); cpu ms/ok = CPU of srv and child per create. While the bare endpoint ran, the",
        f"idle stack used {idle['server']:.0f}% + children {idle['children']:.0f}%. drained s: from the run's end to"
        " its last delivery.",
        f"receiver: {counts.get('ticket_created', 0)} ticket.created deliveries, {counts.get('repeated', 0)} repeated,"
        f" {counts.get('bad_signature', 0)} bad signatures, {counts.get('unsigned', 0)} unsigned",
        "",
        *rate_lines(result, "creates", "create, against bare creates"),
    ]
    if "paired_rest_ratio_at_32" in result:
        procedures, rest = (result[f"{name}_ratio_at_32"] for name in ("procedures", "paired_rest"))
        shown, beside = ("n/a" if value is None else f"{value:.3f}" for value in (procedures, rest))
        lines.append(
            f"procedures ratio@{RATIO_CONCURRENCY} = {shown} (tickets.create with a session cookie / bare REST"
            f" creates; target >= the paired REST runs' {beside})  {verdict(result['procedures_ratio_met'])}"
        )
    if hop := result["fanout_hop_ms"]:
        lines.append(
            f"fan-out hop alone = p50 {ms_text(hop['p50'])} ms, p99 {ms_text(hop['p99'])} ms (kafka hop: a publish to a"
            f" consumer group fetching with the fan-out's {FANOUT_WAIT_MS} ms wait, one event at a time)"
        )
    if open_phase is None or open_deliveries is None:
        lines.append("delivery p99 @ half max rate: not measured")
    else:
        lines.append(
            f"delivery p99 @ half max rate = {ms_text(open_deliveries['p99_ms'])} ms (target <= "
            f"{DELIVERY_P99_TARGET_MS:.0f} ms)  [{result['half_max_rate']:.1f} creates/s open loop, delivery p50 "
            f"{ms_text(open_deliveries['p50_ms'])} ms, {open_deliveries['delivered']}/{open_deliveries['created']} "
            f"delivered; create p50 {ms_text(open_phase['p50_ms'])} ms, p99 {ms_text(open_phase['p99_ms'])} ms from "
            f"scheduled sends, {open_phase['sent']} sent, {open_phase['late_sends']} sent >5 ms late]"
            f"  {verdict(result['delivery_p99_met'])}"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arguments("helpdesk", __doc__, "a first create's delivery")
    parser.add_argument(
        "--customers",
        type=int,
        default=100,
        help="customers the creates name in turn (default 100; a huge number: each create makes a new customer)",
    )
    parser.add_argument(
        "--delivery-timeout", type=float, default=60, help="seconds to wait for a run's deliveries (default 60)"
    )
    args = parse(parser, argv)
    if args.customers < 1:
        parser.error("--customers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--receive"]:
        receive(int(argv[1]), argv[2])
        return 0
    return execute(parse_args(argv), "helpdesk", run, report)


if __name__ == "__main__":
    sys.exit(main())
