"""Helpdesk inbound mail benchmark: forwarded mails (email kind D) through the whole stack against a bare Litestar
endpoint, and the time from each mail's acceptance to its ticket being readable.

    python bench/helpdesk_inbound.py [--duration 10] [--concurrency 1,8,32,64] [--database-url URL] [--senders 100]

Starts, as subprocesses: `signalyard up --services helpdesk` (gateway: route the mail by its recipient to its channel,
check `x-forwarder-secret`, store the event in a batched insert, publish it to Kafka, 200 `{"status": "accepted"}`;
processors: the inbound consumer group parses each stored mail and makes it a ticket, in the transaction that marks
the event processed), with an email channel for bench@acme.example made in this process by the storage call that
`signalyard helpdesk channels create` makes; a watcher (this script with `--watch`: while the stack is measured,
reads the organization's tickets numbered after the highest it has seen, and records when each mail's ticket is first
there: a mail's subject ends with its Message-ID); and `bench/bare_app.py --service helpdesk-inbound` (the same
recipient, channel look-up and secret check, then a canned 200). Then, from this process
(bench/phone.py's load generator, closed and open loops):

1. closed loop, for each concurrency: `--duration` s against the stack, then against the bare endpoint: mails
   answered 200 accepted per second, p50 and p99, other statuses (a duplicate apart), CPU of each process; after each
   stack run, every accepted mail's ticket is awaited, and its latency (200 read -> ticket readable) is taken for the
   mails sent in the measured window;
2. ratio@32 = stack / bare accepts per second at concurrency 32 (target >= 0.5);
3. open loop at half the stack's best rate: accept latency from each scheduled send time, and ticket-visible latency
   p50/p99 (target p99 <= 1 s, every mail accepted and made a ticket);
4. the transport floor on the stack's broker: bench/kafka_floor.py --hops 0 (a publish and its acknowledgement,
   which each accept waits for) at the closed loops' concurrencies, and --hops 1 (the processors' hop alone, with
   their fetch wait) at concurrency 1.

Every mail is distinct: its own Message-ID (`<run id>.<n>@bench.example`) and subject, from one of `--senders`
senders in turn, with no In-Reply-To: each makes a new ticket. Prints a table and the checks, and writes the figures
to bench/results/helpdesk_inbound-<timestamp>.json. Not a test: it always exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from datetime import UTC, datetime
from email.utils import formatdate
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from helpdesk import (  # noqa: E402
    Arrivals,
    Deliveries,
    Keys,
    closed_then_open,
    deliveries_of,
    floors,
    latency_table,
    rate_lines,
    run_bench,
    stack_env,
    stand_in_for_autovacuum,
)
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
    ms_text,
    open_loop,
    parse,
    phase_table,
    ratios,
    redacted,
    signalyard_command,
    verdict,
    wait_ready,
)
from sqlalchemy import bindparam, select  # noqa: E402
from sqlalchemy.engine import Connection  # noqa: E402

from gateway.helpdesk.inbound.email import PATH  # noqa: E402
from signalyard.secrets import secrets_cipher  # noqa: E402
from signalyard.settings import PlatformSettings, load  # noqa: E402
from storage.common.db import sqlite_url  # noqa: E402
from storage.helpdesk import channels  # noqa: E402
from storage.helpdesk.tickets import TICKETS  # noqa: E402
from topics.common.client import FETCH_MAX_WAIT_MS  # noqa: E402

RATIO_CONCURRENCY = 32
RATIO_TARGET = 0.5
VISIBLE_P99_TARGET_MS = 1000.0
ADDRESS = "bench@acme.example"
SCRIPT = str(Path(__file__).resolve())
DUPLICATE = "200 duplicate"
"""The status a 200 `{"status": "duplicate"}` is counted under: a mail stored already, acknowledged, nothing stored."""
UNREADABLE = "200 unreadable"
"""The status a 200 whose body is not `{"status": ...}` is counted under."""
MAIL = (
    "From: Customer {sender} <customer-{sender}@bench.example>\r\n"
    "To: Bench <{address}>\r\n"
    "Subject: Order {seq} has not arrived ({message_id})\r\n"
    "Date: {date}\r\n"
    "Message-ID: <{message_id}>\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "\r\n"
    "Hello,\r\n\r\nmy order {seq} has not arrived yet. Could you look into it?\r\n\r\nThanks,\r\nCustomer {sender}\r\n"
)
TICKETS_COLUMNS = {"created": "accepted", "delivered": "visible", "receiver_cpu_percent": "watcher_cpu_percent"}
"""bench/helpdesk.py's Deliveries, as this benchmark names its fields: accepted mails, visible tickets."""


# ------------------------------------------------------------------------------------------------ watcher

MAIL_OF_SUBJECT = re.compile(r"\(([^()]+@bench\.example)\)$")

_CREATED = (
    select(TICKETS.c.subject, TICKETS.c.number)
    .where(TICKETS.c.organization_id == bindparam("organization_id"), TICKETS.c.number > bindparam("after"))
    .order_by(TICKETS.c.number)
)


def created_after(connection: Connection, organization_id: str, after: int) -> list[tuple[str, int]]:
    """The organization's tickets numbered after `after`: (subject, number), by the number's unique index. A ticket's
    number comes from its organization's counter, taken in the transaction that creates it and held to its commit,
    so tickets become readable in their numbers' order: each read starts after the highest number seen. The ticket is
    made in the transaction that marks its event processed, so a ticket read here is readable through the API."""
    return [
        (row.subject, row.number)
        for row in connection.execute(_CREATED, {"organization_id": organization_id, "after": after})
    ]


def watch(port: int, database_url: str, organization_id: str, poll_ms: float) -> None:
    """The watcher subprocess. While polling is on (POST /polling `on` or `off`: on only while the stack is measured,
    so that it takes no CPU from the bare endpoint), every `poll_ms` one read of the organization's tickets numbered
    after the highest seen, each bench mail's ticket (its subject ends with the mail's Message-ID) kept with the time
    of the read that found it (CLOCK_MONOTONIC, this benchmark's clock, taken before the read). GET
    /deliveries?from=N: the tickets seen from the Nth on, as (Message-ID, time), and the counts (bench/helpdesk.py's
    Arrivals reads it); GET /readyz: 200. The load client tells it nothing: a mail's ticket is known by its subject,
    and telling of each mail cost both processes CPU the stack's processes would otherwise have had."""
    import uvicorn

    from storage.common.db import Database

    seen: list[tuple[str, float]] = []
    counts: Counter[str] = Counter()
    polling = asyncio.Event()
    running: list[asyncio.Task[None]] = []

    async def poll() -> None:
        db = Database(database_url)
        newest = 0
        while True:
            await polling.wait()
            polled = time.monotonic()
            try:
                rows = await db.read(created_after, organization_id, newest)
            except Exception:  # counted, shown, and polled again
                counts["poll_errors"] += 1
                traceback.print_exc()
                rows = []
            counts["polls"] += 1
            for subject, number in rows:
                newest = max(newest, number)
                if found := MAIL_OF_SUBJECT.search(subject):
                    counts["tickets"] += 1
                    seen.append((found[1], polled))
            await asyncio.sleep(max(0.001, polled + poll_ms / 1000 - time.monotonic()))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if not running:
            running.append(asyncio.get_running_loop().create_task(poll()))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, answer = 200, b""
        if scope["method"] == "POST" and scope["path"] == "/polling" and body in (b"on", b"off"):
            polling.set() if body == b"on" else polling.clear()
        elif scope["path"] == "/deliveries":
            start = int(scope["query_string"].decode().removeprefix("from=") or 0)
            answer = json.dumps({"arrivals": seen[start:], "counts": counts}).encode()
        elif scope["path"] != "/readyz":
            status = 404
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


# ------------------------------------------------------------------------------------------------ load


class _Answer(msgspec.Struct):
    status: str


_answer = msgspec.json.Decoder(_Answer).decode


class MailHttp(RawHttp):
    """bench/phone.py's raw client, posting raw mail as a forwarder does: `Content-Type: message/rfc822` and the
    channel's `x-forwarder-secret`, no key."""

    def __init__(self, port: int, secret: str, timeout_s: float = 60) -> None:
        super().__init__(port, "", timeout_s, path=PATH)
        self.prefix = (
            f"POST {PATH} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: message/rfc822\r\n"
            f"x-forwarder-secret: {secret}\r\n"
        ).encode()


class AiohttpMail(AiohttpHttp):
    """`--client aiohttp`: the same mails through aiohttp."""

    def __init__(self, port: int, secret: str, limit: int) -> None:
        super().__init__(port, "", limit, path=PATH)
        self.secret = secret

    async def post(self, body: bytes, headers: dict[str, str] | None = None) -> Answer:
        headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": self.secret, **(headers or {})}
        try:
            async with self.session.post(self.url, data=body, headers=headers) as response:
                return str(response.status), await response.read()
        except (self.aiohttp.ClientError, TimeoutError) as error:
            return type(error).__name__, b""


class Mails:
    """The load client (bench/phone.py's LoadClient): forwarded mails, each with its own Message-ID and subject, from
    one of `senders` senders in turn, to the channel's address with its forwarder secret. While tracking, it keeps
    each accepted one's (sent, answered) times by Message-ID."""

    ok_status = "200"

    def __init__(self, kind: str, senders: int) -> None:
        self.kind = kind
        self.senders = senders
        self.run_id = uuid.uuid4().hex[:12]
        self.date = formatdate(usegmt=True)
        self.seq = 0
        self.address = ADDRESS
        self.secret = ""
        self.accepted: dict[str, tuple[float, float]] | None = None

    def use(self, secret: str, *, track: bool) -> None:
        self.secret = secret
        self.accepted = {} if track else None

    def connect(self, server: Server, limit: int) -> Http:
        if self.kind == "aiohttp":
            return AiohttpMail(server.port, self.secret, limit)
        return MailHttp(server.port, self.secret)

    async def send(self, http: Http) -> Answer:
        self.seq += 1
        message_id = f"{self.run_id}.{self.seq}@bench.example"
        mail = MAIL.format(
            sender=self.seq % self.senders, address=self.address, seq=self.seq, date=self.date, message_id=message_id
        ).encode()
        sent = time.monotonic()
        status, answer = await http.post(mail)
        if status == "200":
            try:
                if _answer(answer).status != "accepted":
                    status = DUPLICATE
            except msgspec.DecodeError:
                status = UNREADABLE
        if self.accepted is not None and status == "200":
            self.accepted[message_id] = (sent, time.monotonic())
        return status, answer


# ------------------------------------------------------------------------------------------------ orchestration


class Bench:
    """One run: its servers, the channel, the load client, and what each phase measured."""

    def __init__(self, args: argparse.Namespace, servers: list[Server], workdir: Path) -> None:
        self.args = args
        self.servers = servers
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.database_url = args.database_url or sqlite_url((self.data_dir / "signalyard.db").resolve())
        self.client = Mails(args.client, args.senders)
        self.phases: list[Phase] = []
        self.tickets: list[Deliveries] = []
        self.closers: list[Callable[[], Awaitable[None]]] = []
        self.api_check = ""

    def server(self, name: str, argv: list[str], env: dict[str, str], port: int) -> Server:
        server = Server(name, argv, env, self.workdir, port)
        self.servers.append(server)
        server.start()
        return server

    async def start(self) -> None:
        """The stack and its channel, the watcher (a first mail's ticket seen, and read through the API), then the
        bare endpoint."""
        args = self.args
        self.data_dir.mkdir()
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
        await self.open_channel()
        log(f"stack ready (pid {self.stack.pid}, children {list(self.stack.children)}); channel {self.channel_id}")

        port = free_port()
        argv = [
            sys.executable,
            SCRIPT,
            "--watch",
            str(port),
            self.database_url,
            self.organization_id,
            str(args.poll_ms),
        ]
        self.watcher = self.server("watcher", argv, dict(os.environ), port)
        await wait_ready(self.watcher, args.startup_timeout)
        self.visible = Arrivals(self.watcher)
        self.closers.append(self.visible.http.aclose)
        self.polling = RawHttp(self.watcher.port, "", timeout_s=10, path="/polling")
        self.closers.append(self.polling.aclose)

        self.client.use(self.secret, track=True)
        started = time.monotonic()
        await self.poll(True)
        canned = await first_200(self.client, self.stack, args.warmup_timeout)
        assert self.client.accepted is not None
        first = next(iter(self.client.accepted))
        if await self.visible.wait_for({first}, args.warmup_timeout) is None:
            raise RuntimeError(f"no ticket within {args.warmup_timeout:g}s of a mail\n{self.stack.log_tail()}")
        await self.poll(False)
        log(f"first mail's ticket seen after {time.monotonic() - started:.1f}s")
        self.api_check = await self.check_api(first)
        log(f"  {self.api_check}")
        response = self.workdir / "accepted.json"
        response.write_bytes(canned)

        port = free_port()
        log(f"starting bench/bare_app.py --service helpdesk-inbound on port {port}")
        argv = [sys.executable, str(HERE / "bare_app.py"), "--service", "helpdesk-inbound", "--port", str(port)]
        argv += ["--database-url", self.database_url, "--response", str(response)]
        self.bare = self.server("bare", argv, self.stack.env, port)  # the stack's data dir: its stored-secrets key
        await wait_ready(self.bare, args.startup_timeout)
        self.client.use(self.secret, track=False)
        await first_200(self.client, self.bare, 10)
        log(f"bare endpoint ready (pid {self.bare.pid})")

    async def poll(self, on: bool) -> None:
        """The watcher's polls on (while the stack is measured, its tickets awaited) or off."""
        status, _ = await self.polling.post(b"on" if on else b"off")
        if status != "200":
            raise RuntimeError(f"the watcher answered {status} to POST /polling")

    async def open_channel(self) -> None:
        """An email channel of the demo organization, as `signalyard helpdesk channels create ORG --kind email --name
        bench --address bench@acme.example` makes it (storage.helpdesk.channels.open_channel, sealed with the
        stack's cipher), in this process (a CLI process costs 2 s of CPU). With a --database-url where the address
        routes to a live channel already, a run's own address instead."""
        cipher = secrets_cipher(load(PlatformSettings, self.stack.env))
        organization_id = await self.keys.organization()
        for address in (ADDRESS, f"bench-{self.client.run_id}@acme.example"):
            try:
                record, generated = await self.keys.db.write(
                    channels.open_channel,
                    cipher,
                    organization_id,
                    kind="email",
                    name="bench",
                    addresses=[address],
                    given={},
                    settings={},
                    now=datetime.now(UTC),
                )
            except channels.AddressTaken:
                continue
            self.channel_id, self.secret, self.client.address = record.id, generated["forwarder_secret"], address
            self.organization_id = organization_id
            return
        raise RuntimeError("no address for the bench channel")

    async def check_api(self, message_id: str) -> str:
        """That a ticket the watcher saw is one the REST API serves: the mail's inbound message is listed processed
        with its ticket (GET /api/v1/inbound-messages), and GET /api/v1/tickets/{id} answers it."""
        key = await self.keys.next()

        def get(path: str) -> Any:
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.stack.port}{path}", headers={"Authorization": f"Bearer {key}"}
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                raise RuntimeError(f"GET {path} answered {error.code}: {error.read()[:500]!r}") from None

        listed = await asyncio.to_thread(get, f"/api/v1/inbound-messages?channel_id={self.channel_id}&limit=100")
        event = next((e for e in listed["data"] if e["dedup_key"] == message_id), None)
        if event is None or event["state"] != "processed" or not event["ticket_id"]:
            raise RuntimeError(f"the watcher saw a ticket for {message_id}, but the API lists {event}")
        ticket = await asyncio.to_thread(get, f"/api/v1/tickets/{event['ticket_id']}")
        return (
            f"API: inbound message {event['id']} {event['state']} ({event['outcome']}), ticket #{ticket['number']}"
            f" {ticket['subject']!r}"
        )

    async def phase(self, server: Server, concurrency: int | None = None, rate: float | None = None) -> Phase:
        """A closed loop at `concurrency` or an open loop at `rate`; for the stack, then its mails' tickets."""
        args, client = self.args, self.client
        client.use(self.secret, track=server is self.stack)
        if client.accepted is not None:
            await self.poll(True)
        began = time.monotonic()
        if rate is None:
            assert concurrency is not None
            phase = await closed_loop(
                client, server, self.servers, concurrency, duration_s=args.duration, warmup_s=args.warmup
            )
        else:
            began += 0.01  # open_loop's first send
            phase = await open_loop(client, server, self.servers, rate, duration_s=args.duration, warmup_s=args.warmup)
        self.phases.append(phase)
        log(f"  {phase.throughput:.1f} ok/s, p50 {phase.p50_ms} ms, p99 {phase.p99_ms} ms, other {phase.failures}")
        if client.accepted is not None:
            ended = time.monotonic()
            last = await self.visible.wait_for(set(client.accepted), args.ticket_timeout)
            await self.poll(False)
            window = (began + args.warmup, began + args.warmup + args.duration)
            found = deliveries_of(phase, client.accepted, self.visible, window, ended=ended, last=last)
            found.receiver_cpu_percent = phase.cpu_percent.get("idle_watcher_server", 0.0)
            self.tickets.append(found)
            log(
                f"  tickets {found.delivered}/{found.created}; p50 {found.p50_ms} ms, p99 {found.p99_ms} ms from the"
                f" accept; last {found.drain_s} s after the run"
            )
        await asyncio.sleep(args.pause)
        return phase

    async def measure(self) -> dict[str, Any]:
        args = self.args
        best, open_phase = await closed_then_open(args, self.phase, (self.stack, self.bare), self.phases, "mails")
        half_rate = best.throughput / 2
        open_tickets = self.tickets[-1] if open_phase is not None else None
        closed, hop = await floors(args, self.stack, FETCH_MAX_WAIT_MS, "the inbound processors' hop")
        self.phases += closed + hop
        await self.visible.fetch()
        counts = self.visible.counts

        ratio, ceiling = ratios(self.phases, RATIO_CONCURRENCY)
        visible_met = None
        if open_phase is not None and open_tickets is not None and open_tickets.p99_ms is not None:
            visible_met = (
                open_tickets.p99_ms <= VISIBLE_P99_TARGET_MS
                and open_tickets.delivered == open_tickets.created
                and open_phase.failures == "-"
            )
        return {
            "benchmark": "helpdesk_inbound",
            "settings": {
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "concurrency": args.concurrency,
                "senders": args.senders,
                "poll_ms": args.poll_ms,
                "database": "sqlite (temporary)" if not args.database_url else redacted(args.database_url),
                "channel": f"email {self.client.address}, made by storage.helpdesk.channels.open_channel in-process",
                "visible_latency": "accept (200 read by the client) -> the watcher's first read that finds the mail's"
                " ticket (the tickets numbered after the highest seen, read every poll_ms)",
            },
            "api_check": self.api_check,
            "phases": [asdict(p) | {"failures": p.failures} for p in self.phases],
            "tickets": [tickets_of(t) for t in self.tickets],
            "watcher_counts": counts,
            "idle_stack_cpu_percent_during_bare": idle_stack_cpu(self.phases),
            "max_rate": best.throughput,
            "max_rate_concurrency": best.concurrency,
            "ratio_at_32": ratio,
            "ratio_target": RATIO_TARGET,
            "ratio_met": None if ratio is None else ratio >= RATIO_TARGET,
            "transport_ceiling_at_32": ceiling,
            "half_max_rate": round(half_rate, 1),
            "open_loop": None if open_phase is None else asdict(open_phase) | {"failures": open_phase.failures},
            "open_loop_tickets": None if open_tickets is None else tickets_of(open_tickets),
            "visible_p99_target_ms": VISIBLE_P99_TARGET_MS,
            "visible_p99_met": visible_met,
            "inbound_hop_ms": {"p50": hop[0].p50_ms, "p99": hop[0].p99_ms} if hop else None,
        }

    async def aclose(self) -> None:
        for close in reversed(self.closers):
            await close()


def tickets_of(found: Deliveries) -> dict[str, Any]:
    return {TICKETS_COLUMNS.get(name, name): value for name, value in asdict(found).items()}


async def run(args: argparse.Namespace, servers: list[Server], workdir: Path) -> dict[str, Any]:
    return await run_bench(Bench, args, servers, workdir)


def report(result: dict[str, Any]) -> str:
    settings = result["settings"]
    lines = [
        "",
        f"helpdesk inbound mail benchmark ({settings['duration_s']:g}s per run, {settings['database']}, "
        f"{result['machine']['cpus']} CPUs, {result['machine']['client']}, {settings['senders']} senders)",
        "",
        *phase_table(result["phases"]),
        "",
        f"tickets of the stack's accepted mails (latency: 200 read -> ticket readable, polled every"
        f" {settings['poll_ms']:g} ms):",
        *latency_table(
            result["tickets"],
            ("accepted", "visible", "sent->vis p99", "watch cpu%"),
            ("accepted", "visible", "watcher_cpu_percent"),
        ),
    ]
    idle = result["idle_stack_cpu_percent_during_bare"]
    counts = result["watcher_counts"]
    open_phase, open_tickets = result["open_loop"], result["open_loop_tickets"]
    lines += [
        "",
        "ok/s = mails answered 200 accepted per second (a 200 duplicate is listed apart); kafka closed: publishes",
        "acknowledged per second (kafka_floor.py --hops 0), kafka hop: the inbound processors' hop, round trips per",
        "second (--hops 1). cpu% = share of one core over the measured window (srv: the server process, for the stack",
        "its gateway; child: Tansu and the processors; client: this load generator); cpu ms/ok = CPU of srv and child",
        f"per accepted mail. While the bare endpoint ran, the idle stack used {idle['server']:.0f}% + children"
        f" {idle['children']:.0f}%.",
        "drained s: from the run's end to its last ticket; watch cpu%: the watcher's polls, while the stack ran.",
        f"watcher: {counts.get('tickets', 0)} bench mails' tickets seen in {counts.get('polls', 0)} polls,"
        f" {counts.get('poll_errors', 0)} poll errors",
        f"{result['api_check']}",
        "",
        *rate_lines(result, "mails", "accepted mail, against bare accepts"),
    ]
    if hop := result["inbound_hop_ms"]:
        lines.append(
            f"inbound hop alone = p50 {ms_text(hop['p50'])} ms, p99 {ms_text(hop['p99'])} ms (kafka hop: a publish to a"
            f" consumer group fetching with the inbound processors' {FETCH_MAX_WAIT_MS} ms wait, one event at a time)"
        )
    if open_phase is None or open_tickets is None:
        lines.append("ticket visible p99 @ half max rate: not measured")
    else:
        lines.append(
            f"ticket visible p99 @ half max rate = {ms_text(open_tickets['p99_ms'])} ms (target <= "
            f"{VISIBLE_P99_TARGET_MS:.0f} ms)  [{result['half_max_rate']:.1f} mails/s open loop, visible p50 "
            f"{ms_text(open_tickets['p50_ms'])} ms, {open_tickets['visible']}/{open_tickets['accepted']} "
            f"tickets; accept p50 {ms_text(open_phase['p50_ms'])} ms, p99 {ms_text(open_phase['p99_ms'])} ms from "
            f"scheduled sends, {open_phase['sent']} sent, {open_phase['late_sends']} sent >5 ms late]"
            f"  {verdict(result['visible_p99_met'])}"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arguments("helpdesk_inbound", __doc__, "a first mail's ticket")
    parser.add_argument(
        "--senders",
        type=int,
        default=100,
        help="senders the mails come from in turn (default 100): each sender's mails are processed one at a time",
    )
    parser.add_argument(
        "--poll-ms",
        type=float,
        default=20,
        help="how often the watcher reads new tickets (default 20: the resolution of ticket latency)",
    )
    parser.add_argument(
        "--ticket-timeout", type=float, default=60, help="seconds to wait for a run's tickets (default 60)"
    )
    args = parse(parser, argv)
    if args.senders < 1:
        parser.error("--senders must be at least 1")
    if args.poll_ms <= 0:
        parser.error("--poll-ms must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--watch"]:
        watch(int(argv[1]), argv[2], argv[3], float(argv[4]))
        return 0
    return execute(parse_args(argv), "helpdesk_inbound", run, report)


if __name__ == "__main__":
    sys.exit(main())
