"""Helpdesk replies benchmark: agents' replies through REST against a bare endpoint, REST ticket creates beside them in
the same run, and the time from a reply to its mail's arrival at the customer's mail server.

    python bench/helpdesk_replies.py [--duration 10] [--concurrency 32] [--database-url URL] [--tickets 64]

Starts a local SMTP server on this process's event loop (standing for the customers' mail servers: it records when
each mail arrived, by its Message-ID), `signalyard up --services helpdesk` with SIGNALYARD_HELPDESK_SMTP_URL pointing at
it, an email channel of the demo organization and `--tickets` tickets of as many customers, and `bench/bare_app.py
--service helpdesk` (the gateway's authenticator and the key's limits, then a canned 201: the stack's Conversation for
a reply, the same bytes for a create). Then, from this process (bench/phone.py's load generator):

1. closed loops, for each concurrency: REST ticket creates against the stack, then the bare endpoint; REST replies
   (`POST /api/v1/tickets/{id}/conversations`, the tickets in turn) against the stack, then the bare endpoint;
2. replies ratio@32 = stack / bare replies per second, against the creates' ratio@32 of the same run (target: no
   lower);
3. an open loop of replies at half the stack's best reply rate: each reply's mail awaited at the SMTP server; the
   time from the reply's request to the mail's arrival, p50 and p99 (target p99 <= 1 s, every reply mailed once).

Each phase has a key of its own. Prints a table and the checks, and writes the figures to
bench/results/helpdesk-replies-<timestamp>.json. Not a test: it always exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from helpdesk import (  # noqa: E402
    RATIO_CONCURRENCY,
    Bench,
    Creates,
    Keys,
    run_bench,
    stack_env,
    stand_in_for_autovacuum,
)
from phone import (  # noqa: E402
    Answer,
    Phase,
    RawHttp,
    Server,
    arguments,
    closed_loop,
    execute,
    free_port,
    log,
    ms_text,
    open_loop,
    parse,
    percentile,
    phase_table,
    redacted,
    signalyard_command,
    verdict,
    wait_ready,
)

MAIL_P99_TARGET_MS = 1000.0
MESSAGE_ID = re.compile(rb"^Message-ID:\s*<([^>\r\n]+)>", re.M | re.I)


class _Delivery(msgspec.Struct):
    provider_message_id: str | None = None


class _Conversation(msgspec.Struct):
    id: str
    delivery: _Delivery | None = None


_conversation = msgspec.json.Decoder(_Conversation).decode


class Mailbox:
    """The customers' mail server: a minimal SMTP server on the bench's own event loop that takes every mail (each
    command answered with success) and records when it arrived, by its Message-ID. The mail server stands for
    machines of others: aiosmtpd on a thread of this process took about a quarter of a core at 300 mails a second,
    and the load generator's GIL, from the two cores the stack is measured on."""

    def __init__(self, *, pipelining: bool = True) -> None:
        self.pipelining = pipelining
        """Whether its EHLO offers PIPELINING (as the common relays' do)."""
        self.arrived: dict[str, list[float]] = {}
        self.received = 0
        self.port = free_port()
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.get_running_loop().create_server(lambda: _Session(self), "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()

    def arrive(self, mail: bytes) -> None:
        self.received += 1
        found = MESSAGE_ID.search(mail)
        if found is not None:
            self.arrived.setdefault(found.group(1).decode(), []).append(time.monotonic())

    async def wait_for(self, message_ids: set[str], timeout_s: float) -> float | None:
        """When the last of them arrived, or None when not all did within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not message_ids <= self.arrived.keys():
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.05)
        return max(self.arrived[message_id][0] for message_id in message_ids)

    async def drained(self, count: int, timeout_s: float) -> float | None:
        """Seconds until `count` mails in all have arrived, or None when they did not within `timeout_s`."""
        began = time.monotonic()
        while self.received < count:
            if time.monotonic() - began > timeout_s:
                return None
            await asyncio.sleep(0.05)
        return time.monotonic() - began


class _Session(asyncio.Protocol):
    """One SMTP connection to the Mailbox: every command is answered 250 (EHLO with 8BITMIME, and PIPELINING as the
    common relays' do unless the Mailbox is told not to), DATA with 354, then the mail up to its lone `.` line is the
    Mailbox's, answered 250."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox
        self.buffer = b""
        self.in_data = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        self.transport.write(b"220 mailbox ESMTP\r\n")

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        while True:
            if self.in_data:
                end = self.buffer.find(b"\r\n.\r\n")
                if end < 0:
                    return
                self.mailbox.arrive(self.buffer[:end])
                self.buffer, self.in_data = self.buffer[end + 5 :], False
                self.transport.write(b"250 OK\r\n")
                continue
            line, found, self.buffer = self.buffer.partition(b"\r\n")
            if not found:
                self.buffer = line
                return
            verb = line[:4].upper()
            if verb == b"EHLO":
                offered = b"250-PIPELINING\r\n" if self.mailbox.pipelining else b""
                self.transport.write(b"250-mailbox\r\n" + offered + b"250 8BITMIME\r\n")
            elif verb == b"DATA":
                self.in_data = True
                self.transport.write(b"354 End data with <CR><LF>.<CR><LF>\r\n")
            elif verb == b"QUIT":
                self.transport.write(b"221 Bye\r\n")
                self.transport.close()
                return
            else:
                self.transport.write(b"250 OK\r\n")


class _PerTicket:
    """One keep-alive pool per ticket's conversations path: RawHttp posts to a fixed path."""

    def __init__(self, port: int, authorization: str, tickets: list[str]) -> None:
        self.pools = [
            RawHttp(port, authorization, path=f"/api/v1/tickets/{ticket}/conversations") for ticket in tickets
        ]

    async def aclose(self) -> None:
        for pool in self.pools:
            await pool.aclose()


class Replies:
    """The load client (bench/phone.py's LoadClient): an agent's replies over REST, to the tickets in turn. While
    tracking, it keeps each reply's (sent, answered, Message-ID)."""

    ok_status = "201"

    def __init__(self, tickets: list[str]) -> None:
        self.tickets = tickets
        self.seq = 0
        self.answered = 0
        """Replies answered 201, by the stack or the bare endpoint: each of the stack's is mailed."""
        self.authorization = ""
        self.sent: dict[str, tuple[float, float, str]] | None = None

    def use(self, key: str, *, track: bool) -> None:
        self.authorization = f"Bearer {key}"
        self.sent = {} if track else None

    def connect(self, server: Server, limit: int) -> _PerTicket:
        return _PerTicket(server.port, self.authorization, self.tickets)

    async def send(self, http: Any) -> Answer:
        self.seq += 1
        pool = http.pools[self.seq % len(http.pools)]
        sent = time.monotonic()
        status, answer = await pool.post(b'{"body": "Reply %d: your order left our depot today."}' % self.seq)
        self.answered += status == self.ok_status
        if status == self.ok_status and self.sent is not None:
            made = _conversation(answer)
            if made.delivery is not None and made.delivery.provider_message_id:
                self.sent[made.id] = (sent, time.monotonic(), made.delivery.provider_message_id)
        return status, answer


class RepliesBench(Bench):
    """One run: the mailbox, the stack and the bare endpoint, the keys, and what each phase measured."""

    async def start(self) -> None:
        args = self.args
        self.data_dir.mkdir()
        self.mailbox = Mailbox()
        await self.mailbox.start()
        self.closers.append(self.mailbox.stop)
        port = free_port()
        log(f"starting `signalyard up --services helpdesk` on port {port} (data dir {self.data_dir})")
        env = stack_env(args, self.data_dir, port)
        env["SIGNALYARD_HELPDESK_SMTP_URL"] = f"smtp://127.0.0.1:{self.mailbox.port}"
        self.stack = self.server("stack", [*signalyard_command(), "--services", "helpdesk"], env, port)
        await wait_ready(self.stack, args.startup_timeout)
        self.stack.note_children()
        self.keys = Keys(self.database_url, (self.data_dir / "demo-helpdesk-key").read_text().strip())
        self.closers.append(await stand_in_for_autovacuum(self.keys.db))  # stopped before the keys' database
        self.closers.append(self.keys.aclose)
        key = await self.keys.next()
        http = RawHttp(self.stack.port, f"Bearer {key}", path="/api/v1/channels")
        address = f"support-{secrets.token_hex(4)}@bench.example"  # a database of an earlier run may hold another
        channel = {"kind": "email", "name": "Support", "addresses": [address]}
        status, answer = await http.post(json.dumps(channel).encode())
        await http.aclose()
        if status != "201":
            raise RuntimeError(f"POST /api/v1/channels answered {status}: {answer[:300]!r}")
        self.tickets = await self.open_tickets(key, args.tickets)
        self.replies = Replies(self.tickets)
        self.replies.use(key, track=True)
        started = time.monotonic()
        pools = self.replies.connect(self.stack, 1)
        status, canned = await self.replies.send(pools)
        await pools.aclose()
        if status != "201" or not self.replies.sent:
            raise RuntimeError(f"a first reply answered {status}: {canned[:300]!r}\n{self.stack.log_tail()}")
        self.stack_replies = 1
        """Replies the stack answered 201: each is mailed."""
        first = {message_id for _, _, message_id in self.replies.sent.values()}
        if await self.mailbox.wait_for(first, args.warmup_timeout) is None:
            raise RuntimeError(f"no mail within {args.warmup_timeout:g}s of a reply\n{self.stack.log_tail()}")
        log(f"{len(self.tickets)} tickets; a first reply mailed after {time.monotonic() - started:.1f}s")
        response = self.workdir / "conversation.json"
        response.write_bytes(canned)
        port = free_port()
        argv = [sys.executable, str(HERE / "bare_app.py"), "--service", "helpdesk", "--port", str(port)]
        argv += ["--database-url", self.database_url, "--response", str(response)]
        self.bare = self.server("bare", argv, self.stack.env, port)
        await wait_ready(self.bare, args.startup_timeout)
        log(f"bare endpoint ready (pid {self.bare.pid})")

    async def drain(self) -> None:
        """Wait until every reply the stack answered so far has been mailed: a sender behind the closed loop keeps
        sending after it, on the same cores as the next run."""
        mailed, answered = self.mailbox.received, self.stack_replies
        took = await self.mailbox.drained(answered, self.args.mail_timeout)
        if took is None:
            unsent = answered - self.mailbox.received
            raise RuntimeError(f"{unsent} replies not mailed within {self.args.mail_timeout:g}s")
        log(f"  the stack's sender mailed its {answered - mailed} replies still queued in {took:.1f}s")

    async def open_tickets(self, key: str, count: int) -> list[str]:
        http = RawHttp(self.stack.port, f"Bearer {key}", path="/api/v1/tickets")
        made = []
        try:
            for number in range(count):
                body = {"subject": f"Order {number} has not arrived", "customer_email": f"c{number}@bench.example"}
                status, answer = await http.post(json.dumps(body).encode())
                if status != "201":
                    raise RuntimeError(f"POST /api/v1/tickets answered {status}: {answer[:300]!r}")
                made.append(json.loads(answer)["id"])
        finally:
            await http.aclose()
        return made

    async def run_phase(
        self, client: Any, target: str, server: Server, concurrency: int | None = None, rate: float | None = None
    ) -> Phase:
        args = self.args
        client.use(await self.keys.next(), track=rate is not None)
        answered = getattr(client, "answered", 0)
        if rate is None:
            assert concurrency is not None
            phase = await closed_loop(
                client, server, self.servers, concurrency, duration_s=args.duration, warmup_s=args.warmup
            )
        else:
            phase = await open_loop(client, server, self.servers, rate, duration_s=args.duration, warmup_s=args.warmup)
        phase.target = target
        self.phases.append(phase)
        if client is self.replies and server is self.stack:
            self.stack_replies += client.answered - answered
        log(f"  {target}: {phase.throughput:.1f} ok/s, p50 {phase.p50_ms} ms, p99 {phase.p99_ms} ms, {phase.failures}")
        await asyncio.sleep(args.pause)
        return phase

    async def measure(self) -> dict[str, Any]:
        args = self.args
        creates = Creates(args.client, args.customers)
        ratios: dict[str, float | None] = {}
        for concurrency in args.concurrency:
            for name, client in (("creates", creates), ("replies", self.replies)):
                log(f"closed loops: {name}, concurrency {concurrency}, {args.duration:g}s each")
                stack = await self.run_phase(client, f"{name} stack", self.stack, concurrency)
                if client is self.replies:  # the bare endpoint's run shares no CPU with the stack's sends
                    await self.drain()
                bare = await self.run_phase(client, f"{name} bare", self.bare, concurrency)
                if concurrency == RATIO_CONCURRENCY:
                    ratios[name] = round(stack.throughput / bare.throughput, 3) if bare.throughput else None
        best = max((p for p in self.phases if p.target == "replies stack"), key=lambda p: p.throughput)
        half = best.throughput / 2
        log(f"open loop: replies at {half:.1f}/s (half of {best.throughput:.1f}), {args.duration:g}s")
        open_phase = await self.run_phase(self.replies, "replies stack", self.stack, rate=half)
        sent = dict(self.replies.sent or {})
        ended = time.monotonic()
        last = await self.mailbox.wait_for({message_id for _, _, message_id in sent.values()}, args.mail_timeout)
        arrived = [self.mailbox.arrived.get(message_id) for _, _, message_id in sent.values()]
        from_answer = sorted(
            (times[0] - answered) * 1000
            for (_, answered, _), times in zip(sent.values(), arrived, strict=True)
            if times
        )
        from_send = sorted(
            (times[0] - at) * 1000 for (at, _, _), times in zip(sent.values(), arrived, strict=True) if times
        )
        mailed = sum(1 for times in arrived if times)
        repeated = sum(1 for times in arrived if times and len(times) > 1)
        mail_p99 = percentile(from_send, 0.99)
        replies_ratio, creates_ratio = ratios.get("replies"), ratios.get("creates")
        return {
            "benchmark": "helpdesk-replies",
            "settings": {
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "concurrency": args.concurrency,
                "tickets": args.tickets,
                "database": "sqlite (temporary)" if not args.database_url else redacted(args.database_url),
                "mail_latency": "reply sent (its request written) -> its mail received by the SMTP server",
            },
            "phases": [asdict(p) | {"failures": p.failures} for p in self.phases],
            "replies_ratio_at_32": replies_ratio,
            "creates_ratio_at_32": creates_ratio,
            "ratio_met": None if replies_ratio is None or creates_ratio is None else replies_ratio >= creates_ratio,
            "half_max_rate": round(half, 1),
            "open_loop": asdict(open_phase) | {"failures": open_phase.failures},
            "mail": {
                "replies": len(sent),
                "mailed": mailed,
                "repeated": repeated,
                "p50_ms": percentile(from_send, 0.5),
                "p99_ms": mail_p99,
                "answered_p99_ms": percentile(from_answer, 0.99),
                "drain_s": None if last is None else round(max(0.0, last - ended), 2),
            },
            "mail_p99_target_ms": MAIL_P99_TARGET_MS,
            "mail_p99_met": None
            if mail_p99 is None
            else mail_p99 <= MAIL_P99_TARGET_MS and mailed == len(sent) and open_phase.failures == "-",
        }


async def run(args: argparse.Namespace, servers: list[Server], workdir: Path) -> dict[str, Any]:
    return await run_bench(RepliesBench, args, servers, workdir)


def report(result: dict[str, Any]) -> str:
    settings, mail = result["settings"], result["mail"]
    replies, creates = result["replies_ratio_at_32"], result["creates_ratio_at_32"]
    shown = ["n/a" if value is None else f"{value:.3f}" for value in (replies, creates)]
    open_phase = result["open_loop"]
    return "\n".join(
        [
            "",
            f"helpdesk replies benchmark ({settings['duration_s']:g}s per run, {settings['database']}, "
            f"{result['machine']['cpus']} CPUs, {settings['tickets']} tickets)",
            "",
            *phase_table(result["phases"]),
            "",
            f"replies ratio@{RATIO_CONCURRENCY} = {shown[0]} (stack / bare replies; target >= the creates' ratio of the"
            f" same run, {shown[1]})  {verdict(result['ratio_met'])}",
            f"mail p99 @ half max rate = {ms_text(mail['p99_ms'])} ms (target <= {MAIL_P99_TARGET_MS:.0f} ms)"
            f"  [{result['half_max_rate']:.1f} replies/s open loop; reply sent -> mail received p50"
            f" {ms_text(mail['p50_ms'])} ms; from the reply's answer p99 {ms_text(mail['answered_p99_ms'])} ms;"
            f" {mail['mailed']}/{mail['replies']} mailed, {mail['repeated']} twice, last {mail['drain_s']} s after"
            f" the run; reply p50 {ms_text(open_phase['p50_ms'])} ms, p99 {ms_text(open_phase['p99_ms'])} ms]"
            f"  {verdict(result['mail_p99_met'])}",
        ]
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arguments("helpdesk_replies", __doc__, "a first reply's mail")
    parser.add_argument("--tickets", type=int, default=64, help="tickets the replies go to in turn (default 64)")
    parser.add_argument(
        "--mail-timeout", type=float, default=60, help="seconds to wait for the open loop's mail (default 60)"
    )
    parser.set_defaults(concurrency=[RATIO_CONCURRENCY], customers=100)
    args = parse(parser, argv)
    if args.tickets < 1:
        parser.error("--tickets must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    return execute(parse_args(sys.argv[1:] if argv is None else argv), "helpdesk-replies", run, report)


if __name__ == "__main__":
    sys.exit(main())
