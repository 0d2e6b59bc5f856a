"""Phone verify benchmark: the whole stack against a bare Litestar endpoint, served the same way.

    python bench/phone.py [--duration 10] [--concurrency 1,8,32,64] [--database-url URL]

Starts `signalyard up --services phone` (gateway -> Kafka (embedded Tansu) -> processor -> SQLite or --database-url ->
gateway) and `bench/bare_app.py` (authenticates the key like the gateway, answers a canned VerifyResult) as
subprocesses, then, from this process (the load generator: raw HTTP/1.1 with httptools on uvloop, keep-alive
connections):

1. closed loop, for each concurrency: `--duration` s against the stack, then against the bare endpoint:
   successful (HTTP 200) requests/s, p50 and p99 latency, any other status by code, CPU of each process;
2. ratio@32 = stack / bare throughput at concurrency 32 (target >= 0.30);
3. open loop at half the stack's best throughput for `--duration` s: p50/p99 measured from each request's
   scheduled send time, so a stalled server cannot hide its queueing (target p99 <= 50 ms).

Prints a table and the two checks, and writes the figures to bench/results/phone-<timestamp>.json.
Every verify has its own Idempotency-Key and its own valid US number (never a 555-01XX magic number), so no
request is a replay, a free re-check or a 409 for a pending number. Not a test: it always exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import httptools  # the HTTP parser uvicorn uses: installed with uvicorn[standard]

try:
    import uvloop
except ImportError:  # pragma: no cover - the stdlib loop works, only slower
    uvloop = None  # type: ignore[assignment]

import phonenumbers

from storage.common.db import sqlite_url

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RATIO_CONCURRENCY = 32
RATIO_TARGET = 0.30
P99_TARGET_MS = 50.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
VERIFY_BODY = '{{"phone": "{phone}", "name": "John Smith", "subject_type": "person"}}'


# ------------------------------------------------------------------------------------------------ numbers


class Numbers:
    """Distinct valid US numbers, +1 NPA 2XX XXXX in big-city area codes: never 555, so never a magic number.

    Every (area code, exchange) block is checked once with phonenumbers (a US number's validity depends on its
    first six digits); the start is random so that runs against a persistent database (--database-url) do not
    reuse numbers (a reused number within 24 h would be a free re-check, a cheaper path).
    """

    AREA_CODES = (212, 415, 646, 312, 617, 206, 303, 404, 512, 702, 213, 305, 503, 612, 718, 773, 202, 214, 480, 602)
    BLOCK = 10_000
    EXCHANGES = range(200, 300)

    def __init__(self, seed: int | None = None) -> None:
        self.space = len(self.AREA_CODES) * len(self.EXCHANGES) * self.BLOCK
        self.n = random.Random(seed).randrange(self.space)
        self._blocks: dict[int, bool] = {}

    def _block_ok(self, area: int, exchange: int) -> bool:
        key = area * 1000 + exchange
        ok = self._blocks.get(key)
        if ok is None:
            ok = all(_valid_us(f"+1{area}{exchange}{line:04d}") for line in (0, 1234, 9999))
            self._blocks[key] = ok
        return ok

    def next(self) -> str:
        for _ in range(self.space):
            self.n = (self.n + 1) % self.space
            block, line = divmod(self.n, self.BLOCK)
            area_index, exchange_index = divmod(block, len(self.EXCHANGES))
            area, exchange = self.AREA_CODES[area_index], self.EXCHANGES[exchange_index]
            if self._block_ok(area, exchange):
                return f"+1{area}{exchange}{line:04d}"
        raise RuntimeError("no valid number left")


def _valid_us(e164: str) -> bool:
    number = phonenumbers.parse(e164)
    return phonenumbers.is_valid_number(number) and phonenumbers.region_code_for_number(number) == "US"


# ------------------------------------------------------------------------------------------------ processes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    # If the benchmark is killed outright, the servers get SIGTERM (and the stack then stops its broker).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int, command: bytes | None = None) -> bool:
    """Whether `pid` runs (and, given `command`, still runs that command: a pid can be reused)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and (command is None or cmdline(pid) == command)


@dataclass
class Server:
    """One server subprocess we started, its logs, and the children it started (the stack's broker)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    workdir: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    children: dict[int, bytes] = field(default_factory=dict)
    """pid -> command line of each process it started (the stack's broker)."""

    @property
    def stdout_path(self) -> Path:
        return self.workdir / f"{self.name}.stdout"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / f"{self.name}.stderr"

    def start(self) -> None:
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                self.argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # Ctrl-C reaches only the benchmark, which stops the servers in order
                preexec_fn=_die_with_parent,  # noqa: PLW1509
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def note_children(self) -> None:
        if self.running():
            self.children = {child: cmdline(child) for child in children_of(self.pid)}

    def cpu(self) -> dict[str, float]:
        """CPU seconds used so far: the server process, and its children (the stack's broker and processors)."""
        if self.process is None:
            return {"server": 0.0, "children": 0.0}
        return {"server": cpu_seconds(self.pid), "children": sum(cpu_seconds(c) for c in self.children)}

    def log_tail(self, lines: int = 30) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                if text:
                    parts.append(f"--- {path.name} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(parts)

    def stop(self, timeout_s: float = 20) -> list[str]:
        """SIGTERM, wait, SIGKILL if needed; then make sure no child (broker, processors) outlives it; the problems."""
        problems: list[str] = []
        if self.process is None:
            return problems
        if not self.children:
            self.note_children()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                problems.append(f"{self.name} did not stop within {timeout_s:g}s of SIGTERM: killed")
                self.process.kill()
                self.process.wait()
        deadline = time.monotonic() + 5  # the broker gets SIGTERM from the launcher or from PDEATHSIG
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.1)
        for child in self.leftovers():
            problems.append(f"{self.name}'s child {child} outlived it: killed")
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        return problems

    def leftovers(self) -> list[int]:
        return [child for child, command in self.children.items() if alive(child, command)]


# ------------------------------------------------------------------------------------------------ load


@dataclass
class Phase:
    """What one measured run produced."""

    target: str
    mode: str
    concurrency: int | None
    rate: float | None
    duration_s: float
    ok: int = 0
    throughput: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    cpu_percent: dict[str, float] = field(default_factory=dict)
    cpu_ms_per_ok: float | None = None
    """CPU of the server and its children per 200 answer."""
    sent: int | None = None
    late_sends: int | None = None
    ok_status: str = "200"
    """The status of a successful answer (`ok`); any other is listed under `failures`."""

    @property
    def failures(self) -> str:
        other = {status: count for status, count in self.statuses.items() if status != self.ok_status}
        return ", ".join(f"{status}x{count}" for status, count in sorted(other.items())) or "-"


def percentile(ordered: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return None
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


Answer = tuple[str, bytes]
"""An HTTP status code (or the name of the transport error) and the body."""


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request at a time; answers parsed by httptools."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self.body: list[bytes] = []
        self.keep_alive = True
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self.fail(error)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.fail(exc or ConnectionResetError("the server closed the connection"))

    def fail(self, error: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.body = []

    def on_headers_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((self.parser.get_status_code(), b"".join(self.body), self.keep_alive))

    async def exchange(self, request: bytes, timeout_s: float) -> tuple[int, bytes, bool]:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self.waiter = loop.create_future()
        timer = loop.call_later(timeout_s, self.fail, TimeoutError(f"no answer within {timeout_s:g}s"))
        self.transport.write(request)
        try:
            return await self.waiter
        finally:
            timer.cancel()
            self.waiter = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class RawHttp:
    """The default load generator client: raw HTTP/1.1 over a pool of keep-alive connections (one per request in
    flight), requests written as ready-made bytes, answers parsed by httptools. A few times cheaper per request
    than aiohttp, so the client stays far from being the limit even against the bare endpoint."""

    def __init__(
        self,
        port: int,
        authorization: str,
        timeout_s: float = 60,
        path: str = "/v1/verify",
        headers: dict[str, str] | None = None,
    ) -> None:
        """`authorization`: the Authorization header's value (empty: none); `headers`: any others every request
        carries (a session's Cookie)."""
        self.port = port
        self.timeout_s = timeout_s
        self.host = f"127.0.0.1:{port}"
        given = {"Authorization": authorization} if authorization else {}
        lines = "".join(f"{name}: {value}\r\n" for name, value in {**given, **(headers or {})}.items())
        self.prefix = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n{lines}Content-Type: application/json\r\n".encode()
        self.idle: list[_Connection] = []

    async def verify(self, idempotency_key: str, body: bytes) -> Answer:
        head = b"%sIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n" % (
            self.prefix,
            idempotency_key.encode(),
            len(body),
        )
        return await self._send(head + body)

    async def post(self, body: bytes) -> Answer:
        """A JSON POST to the client's path, with no header but the key's."""
        return await self._send(b"%sContent-Length: %d\r\n\r\n%s" % (self.prefix, len(body), body))

    async def get(self, path: str) -> Answer:
        return await self._send(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())

    async def _send(self, request: bytes) -> Answer:
        connection = None
        while self.idle and connection is None:
            connection = self.idle.pop()
            if connection.lost:  # the server closed it while it was idle (its keep-alive timeout)
                connection.close()
                connection = None
        try:
            if connection is None:
                _, connection = await asyncio.get_running_loop().create_connection(_Connection, "127.0.0.1", self.port)
            status, payload, keep_alive = await connection.exchange(request, self.timeout_s)
        except (OSError, TimeoutError, httptools.HttpParserError) as error:
            if connection is not None:
                connection.close()
            return type(error).__name__, b""
        if keep_alive and not connection.lost:
            self.idle.append(connection)
        else:
            connection.close()
        return str(status), payload

    async def aclose(self) -> None:
        for connection in self.idle:
            connection.close()
        self.idle.clear()


class AiohttpHttp:
    """`--client aiohttp`: the same requests through aiohttp (a cross-check of the raw client; needs aiohttp)."""

    def __init__(
        self, port: int, authorization: str, limit: int, timeout_s: float = 60, path: str = "/v1/verify"
    ) -> None:
        import aiohttp

        self.aiohttp = aiohttp
        self.url = f"http://127.0.0.1:{port}{path}"
        self.authorization = authorization
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit),
            timeout=aiohttp.ClientTimeout(total=timeout_s),
            skip_auto_headers=("User-Agent",),
        )

    async def verify(self, idempotency_key: str, body: bytes) -> Answer:
        return await self.post(body, {"Idempotency-Key": idempotency_key})

    async def post(self, body: bytes, headers: dict[str, str] | None = None) -> Answer:
        headers = {"Authorization": self.authorization, "Content-Type": "application/json", **(headers or {})}
        try:
            async with self.session.post(self.url, data=body, headers=headers) as response:
                return str(response.status), await response.read()
        except (self.aiohttp.ClientError, TimeoutError) as error:
            return type(error).__name__, b""

    async def aclose(self) -> None:
        await self.session.close()


Http = RawHttp | AiohttpHttp


def client_name(kind: str) -> str:
    loop = "uvloop" if uvloop else "asyncio"
    if kind == "aiohttp":
        import aiohttp

        return f"aiohttp {aiohttp.__version__} on {loop}"
    return f"raw HTTP/1.1 + httptools {httptools.__version__} on {loop}"


class LoadClient(Protocol):
    """What the loops drive: the requests of one benchmark, each `send` one request on a connection of `connect`."""

    ok_status: str
    """The status of a successful answer."""

    def connect(self, server: Server, limit: int) -> Http: ...

    async def send(self, http: Http) -> Answer: ...


class Client:
    """Makes the verifies: each with its own Idempotency-Key and number."""

    ok_status = "200"

    def __init__(self, key: str, run_id: str, numbers: Numbers, kind: str) -> None:
        self.run_id = run_id
        self.numbers = numbers
        self.kind = kind
        self.seq = 0
        self.authorization = f"Bearer {key}"

    def connect(self, server: Server, limit: int) -> Http:
        if self.kind == "aiohttp":
            return AiohttpHttp(server.port, self.authorization, limit)
        return RawHttp(server.port, self.authorization)

    async def send(self, http: Http) -> Answer:
        self.seq += 1
        body = VERIFY_BODY.format(phone=self.numbers.next()).encode()
        return await http.verify(f"bench-{self.run_id}-{self.seq}", body)


class CpuMeter:
    """CPU use over one phase: the target server and its children (broker, processors), this load generator, and the
    servers standing idle meanwhile (the stack's Kafka consumers poll even when no request comes)."""

    def __init__(self, server: Server, idle: list[Server]) -> None:
        self.server = server
        self.idle = [other for other in idle if other is not server and other.process is not None]

    def _sample(self) -> dict[str, float]:
        sample = {**self.server.cpu(), "client": cpu_seconds(os.getpid())}
        for other in self.idle:
            for name, used in other.cpu().items():
                sample[f"idle_{other.name}_{name}"] = used
        return sample

    def start(self) -> None:
        self.wall = time.perf_counter()
        self.before = self._sample()

    def stop(self) -> None:
        self.elapsed = time.perf_counter() - self.wall
        after = self._sample()
        self.used = {name: after[name] - self.before[name] for name in after}

    def percent(self) -> dict[str, float]:
        return {name: round(100 * used / self.elapsed, 1) for name, used in self.used.items()}


def _finish(phase: Phase, latencies: list[float], statuses: Counter[str], meter: CpuMeter) -> Phase:
    latencies.sort()
    phase.ok = statuses.get(phase.ok_status, 0)
    phase.throughput = round(phase.ok / phase.duration_s, 1)
    for name, q in (("p50_ms", 50), ("p99_ms", 99), ("max_ms", 100)):
        value = percentile(latencies, q)
        setattr(phase, name, None if value is None else round(value * 1000, 2))
    phase.statuses = dict(statuses)
    phase.cpu_percent = meter.percent()
    if phase.ok:
        phase.cpu_ms_per_ok = round(1000 * (meter.used["server"] + meter.used.get("children", 0)) / phase.ok, 3)
    return phase


async def closed_loop(
    client: LoadClient, server: Server, idle: list[Server], concurrency: int, *, duration_s: float, warmup_s: float
) -> Phase:
    """`concurrency` workers, each sending its next request as soon as the last one answered.

    Counted: answers that arrive inside the measured window (after `warmup_s`); latencies of the successful answers
    (`client.ok_status`).
    """
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    http = client.connect(server, concurrency)
    try:
        start = time.perf_counter()
        measure_from, measure_to = start + warmup_s, start + warmup_s + duration_s
        meter = CpuMeter(server, idle)

        async def worker() -> None:
            while (sent_at := time.perf_counter()) < measure_to:
                status, _ = await client.send(http)
                done = time.perf_counter()
                if measure_from <= done <= measure_to:
                    statuses[status] += 1
                    if status == client.ok_status:
                        latencies.append(done - sent_at)

        async def measure_cpu() -> None:
            await asyncio.sleep(max(0.0, measure_from - time.perf_counter()))
            meter.start()
            await asyncio.sleep(max(0.0, measure_to - time.perf_counter()))
            meter.stop()

        await asyncio.gather(measure_cpu(), *(worker() for _ in range(concurrency)))
    finally:
        await http.aclose()
    phase = Phase(server.name, "closed", concurrency, None, duration_s, ok_status=client.ok_status)
    return _finish(phase, latencies, statuses, meter)


async def open_loop(
    client: LoadClient, server: Server, idle: list[Server], rate: float, *, duration_s: float, warmup_s: float
) -> Phase:
    """Requests sent at a fixed rate whatever the answers; latency from each request's *scheduled* send time.

    Counted: every request scheduled in the measured window, however late it answers (up to the client timeout).
    """
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    interval = 1 / rate
    late = 0
    phase = Phase(server.name, "open", None, round(rate, 1), duration_s, sent=0, ok_status=client.ok_status)
    http = client.connect(server, 1024)
    try:
        start = time.perf_counter() + 0.01
        measure_from, measure_to = start + warmup_s, start + warmup_s + duration_s
        meter = CpuMeter(server, idle)
        tasks: set[asyncio.Task[None]] = set()

        async def one(scheduled: float, counted: bool) -> None:
            status, _ = await client.send(http)
            if counted:
                statuses[status] += 1
                if status == client.ok_status:
                    latencies.append(time.perf_counter() - scheduled)

        i = 0
        metering = False
        while (scheduled := start + i * interval) < measure_to:
            if not metering and scheduled >= measure_from:
                meter.start()
                metering = True
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.005:
                late += 1
            counted = scheduled >= measure_from
            phase.sent += counted  # type: ignore[operator]
            task = asyncio.create_task(one(scheduled, counted))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
        if not metering:  # a rate so low that no send fell in the measured window
            meter.start()
        await asyncio.sleep(max(0.0, measure_to - time.perf_counter()))
        meter.stop()
        if tasks:
            await asyncio.wait(tasks)
    finally:
        await http.aclose()
    phase.late_sends = late
    return _finish(phase, latencies, statuses, meter)


# ------------------------------------------------------------------------------------------------ orchestration


async def transport_floor(
    args: argparse.Namespace,
    stack: Server,
    floor_args: list[str],
    *,
    concurrency: list[int] | None = None,
    mode: str = "closed",
) -> list[Phase]:
    """bench/kafka_floor.py (with `floor_args`, at `concurrency`, by default the closed loops') on the stack's own
    broker, the stack idle meanwhile: the stack's Kafka hops, nothing else; as phases of target `kafka` and `mode`."""
    match = re.search(r"broker (\S+?),", stack.stdout_path.read_text())
    if match is None:
        log("  no broker address in the stack's output: transport floor skipped")
        return []
    loops = ",".join(str(c) for c in concurrency or args.concurrency)
    argv = [sys.executable, str(HERE / "kafka_floor.py"), "--bootstrap", match[1], "--concurrency", loops]
    argv += ["--duration", str(args.duration), "--warmup", str(args.warmup), "--pause", str(args.pause)]
    process = await asyncio.create_subprocess_exec(*argv, *floor_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await process.communicate()
    if process.returncode != 0:
        log(f"  transport floor failed ({process.returncode}): {err.decode(errors='replace')[-2000:]}")
        return []
    phases = []
    for line in out.decode().splitlines():
        run = json.loads(line)
        phase = Phase("kafka", mode, run["concurrency"], None, args.duration, throughput=run["throughput"])
        phase.ok = round(run["throughput"] * args.duration)
        phase.p50_ms, phase.p99_ms, phase.max_ms = run["p50_ms"], run["p99_ms"], run["max_ms"]
        phase.cpu_percent = {"server": run["cpu_percent"]}
        phases.append(phase)
        log(f"  concurrency {phase.concurrency}: {phase.throughput:.1f} round trips/s, p50 {phase.p50_ms} ms")
    return phases


async def wait_ready(server: Server, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    http = RawHttp(server.port, "", timeout_s=3)
    try:
        while time.monotonic() < deadline:
            if not server.running():
                raise RuntimeError(f"{server.name} exited with status {server.process.returncode}\n{server.log_tail()}")  # type: ignore[union-attr]
            status, _ = await http.get("/readyz")
            if status == "200":
                return
            await asyncio.sleep(0.2)
    finally:
        await http.aclose()
    raise RuntimeError(f"{server.name} was not ready within {timeout_s:g}s\n{server.log_tail()}")


def read_key(data_dir: Path, stack: Server) -> str:
    path = data_dir / "demo-sandbox-key"
    if path.exists():
        return path.read_text().strip()
    for line in stack.stdout_path.read_text().splitlines():
        if line.strip().startswith("sandbox key"):
            return line.split()[-1]
    raise RuntimeError(f"no sandbox key in {path} nor in the stack's output\n{stack.log_tail()}")


async def first_200(client: LoadClient, server: Server, timeout_s: float) -> bytes:
    """Requests until one answers `client.ok_status` (phone's processor group needs a few seconds to join)."""
    deadline = time.monotonic() + timeout_s
    seen: Counter[str] = Counter()
    http = client.connect(server, 1)
    try:
        while time.monotonic() < deadline:
            status, body = await client.send(http)
            if status == client.ok_status:
                return body
            seen[status] += 1
            if status != "202":  # a 202 has already waited SIGNALYARD_PHONE_WAIT_MS
                await asyncio.sleep(0.5)
    finally:
        await http.aclose()
    statuses = ", ".join(f"{s}x{n}" for s, n in seen.items())
    raise RuntimeError(
        f"{server.name} answered no request with {client.ok_status} within {timeout_s:g}s (got {statuses}); "
        f"is it handling requests?\n{server.log_tail()}"
    )


def server_env(args: argparse.Namespace, data_dir: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SIGNALYARD_DATA_DIR=str(data_dir),
        SIGNALYARD_PHONE_PORT=str(port),
        SIGNALYARD_PHONE_RATE_LIMIT="1000000/second",
        SIGNALYARD_LOG_LEVEL=args.log_level,
        PYTHONUNBUFFERED="1",
    )
    if args.database_url:
        env["SIGNALYARD_DATABASE_URL"] = args.database_url
    return env


def signalyard_command() -> list[str]:
    script = Path(sys.executable).with_name("signalyard")
    if script.exists():
        return [str(script), "up"]
    found = shutil.which("signalyard")
    return [found, "up"] if found else [sys.executable, "-m", "signalyard.cli", "up"]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def start_stack(args: argparse.Namespace, servers: list[Server], workdir: Path) -> tuple[Server, Client, bytes]:
    """`signalyard up --services phone` on a new data directory (`workdir/data`), added to `servers`, once it answers:
    the stack, a load generator with its sandbox key, and its first 200 answer."""
    data_dir = workdir / "data"
    data_dir.mkdir()
    stack_port = free_port()
    stack = Server(
        "stack",
        [*signalyard_command(), "--services", "phone"],
        server_env(args, data_dir, stack_port),
        workdir,
        stack_port,
    )
    servers.append(stack)
    log(f"starting `signalyard {' '.join(stack.argv[-3:])}` on port {stack_port} (data dir {data_dir})")
    stack.start()
    await wait_ready(stack, args.startup_timeout)
    stack.note_children()
    client = Client(read_key(data_dir, stack), uuid.uuid4().hex[:12], Numbers(), args.client)
    log(f"stack ready (pid {stack.pid}, children {list(stack.children)}); waiting for a first 200 ...")
    t = time.monotonic()
    canned = await first_200(client, stack, args.warmup_timeout)
    log(f"first 200 after {time.monotonic() - t:.1f}s")
    return stack, client, canned


async def run(args: argparse.Namespace, servers: list[Server], workdir: Path) -> dict[str, Any]:
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    stack, client, canned = await start_stack(args, servers, workdir)
    data_dir = workdir / "data"
    database_url = args.database_url or sqlite_url((data_dir / "signalyard.db").resolve())
    response_path = workdir / "verify-result.json"
    response_path.write_bytes(canned)

    bare_port = free_port()
    bare_argv = [
        sys.executable,
        str(HERE / "bare_app.py"),
        *("--port", str(bare_port), "--database-url", database_url, "--response", str(response_path)),
    ]
    bare = Server("bare", bare_argv, server_env(args, data_dir, bare_port), workdir, bare_port)
    servers.append(bare)
    log(f"starting bench/bare_app.py on port {bare_port}")
    bare.start()
    await wait_ready(bare, args.startup_timeout)
    await first_200(client, bare, 10)
    log(f"bare endpoint ready (pid {bare.pid})")

    phases: list[Phase] = []
    for concurrency in args.concurrency:
        for server in (stack, bare):
            log(f"closed loop: {server.name}, concurrency {concurrency}, {args.duration:g}s")
            phase = await closed_loop(
                client, server, servers, concurrency, duration_s=args.duration, warmup_s=args.warmup
            )
            phases.append(phase)
            log(f"  {phase.throughput:.1f} ok/s, p50 {phase.p50_ms} ms, p99 {phase.p99_ms} ms, other {phase.failures}")
            await asyncio.sleep(args.pause)

    stack_phases = [p for p in phases if p.target == "stack"]
    best = max(stack_phases, key=lambda p: p.throughput)
    half_rate = best.throughput / 2
    open_phase = None
    if half_rate > 0:
        log(f"open loop: stack at {half_rate:.1f} req/s (half of {best.throughput:.1f}), {args.duration:g}s")
        open_phase = await open_loop(client, stack, servers, half_rate, duration_s=args.duration, warmup_s=args.warmup)
        phases.append(open_phase)

    log(f"transport floor: the two Kafka hops alone on the stack's broker (bench/kafka_floor.py), {args.duration:g}s")
    phases += await transport_floor(args, stack, ["--result", str(response_path)])

    ratio, ceiling = ratios(phases, RATIO_CONCURRENCY)
    return {
        "benchmark": "phone",
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "settings": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "concurrency": args.concurrency,
            "database": "sqlite (temporary)" if not args.database_url else redacted(args.database_url),
            "rate_limit": "1000000/second",
        },
        "machine": machine(load_before, args.client),
        "phases": [asdict(p) | {"failures": p.failures} for p in phases],
        "idle_stack_cpu_percent_during_bare": idle_stack_cpu(phases),
        "max_rate": best.throughput,
        "max_rate_concurrency": best.concurrency,
        "ratio_at_32": ratio,
        "ratio_target": RATIO_TARGET,
        "ratio_met": None if ratio is None else ratio >= RATIO_TARGET,
        "transport_ceiling_at_32": ceiling,
        "half_max_rate": round(half_rate, 1),
        "p99_at_half_max_rate_ms": open_phase.p99_ms if open_phase else None,
        "p50_at_half_max_rate_ms": open_phase.p50_ms if open_phase else None,
        "open_loop_sent": open_phase.sent if open_phase else None,
        "open_loop_late_sends": open_phase.late_sends if open_phase else None,
        "p99_target_ms": P99_TARGET_MS,
        "p99_met": None
        if open_phase is None or open_phase.p99_ms is None
        else open_phase.p99_ms <= P99_TARGET_MS and open_phase.failures == "-",
    }


def machine(load_before: tuple[float, float, float], client: str) -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "client": client_name(client),
    }


def idle_stack_cpu(phases: list[Phase]) -> dict[str, float]:
    """The CPU the idle stack used while the bare endpoint ran (mean over the bare phases), % of a core."""
    bare = [p for p in phases if p.target == "bare"] or [Phase("bare", "closed", None, None, 0)]
    return {
        name: round(sum(p.cpu_percent.get(f"idle_stack_{name}", 0) for p in bare) / len(bare), 1)
        for name in ("server", "children")
    }


def ratios(phases: list[Phase], concurrency: int) -> tuple[float | None, float | None]:
    """(stack / bare, kafka / bare) closed-loop throughput at `concurrency`, where measured."""
    by = {(p.target, p.concurrency): p for p in phases if p.mode == "closed"}
    ratio = ceiling = None
    if (b := by.get(("bare", concurrency))) and b.throughput:
        if s := by.get(("stack", concurrency)):
            ratio = round(s.throughput / b.throughput, 3)
        if k := by.get(("kafka", concurrency)):
            ceiling = round(k.throughput / b.throughput, 3)
    return ratio, ceiling


def redacted(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.rpartition("@")[2]
    return scheme + sep + rest


def ms_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def phase_table(phases: list[dict[str, Any]]) -> list[str]:
    """The phases (as in the JSON file), one line each under a header."""
    lines = [
        f"{'target':<7} {'mode':<6} {'conc':>5} {'rate':>7} {'ok/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
        f"  {'cpu% srv':>8} {'child':>6} {'client':>6}  {'cpu ms/ok':>9}  other statuses",
    ]
    for p in phases:
        cpu = p["cpu_percent"]
        children = f"{cpu['children']:.0f}" if cpu.get("children") else "-"
        client = "-" if p["target"] == "kafka" else f"{cpu.get('client', 0):.0f}"
        lines.append(
            f"{p['target']:<7} {p['mode']:<6} {p['concurrency'] or '-':>5} {p['rate'] or '-':>7} "
            f"{p['throughput']:>8.1f} {ms_text(p['p50_ms']):>8} {ms_text(p['p99_ms']):>8} {ms_text(p['max_ms']):>8}"
            f"  {cpu.get('server', 0):>8.0f} {children:>6} {client:>6}"
            f"  {'-' if p['cpu_ms_per_ok'] is None else format(p['cpu_ms_per_ok'], '.2f'):>9}"
            f"  {p['failures']}"
        )
    return lines


def report(result: dict[str, Any]) -> str:
    lines = [
        "",
        f"phone verify benchmark ({result['settings']['duration_s']:g}s per run, "
        f"{result['settings']['database']}, {result['machine']['cpus']} CPUs, {result['machine']['client']})",
        "",
        *phase_table(result["phases"]),
    ]
    ratio = result["ratio_at_32"]
    ceiling = result["transport_ceiling_at_32"]
    p99 = result["p99_at_half_max_rate_ms"]
    idle = result["idle_stack_cpu_percent_during_bare"]
    lines += [
        "",
        "cpu% = share of one core over the measured window (srv: the server process, for the stack its gateway;",
        "child: the stack's child processes, Tansu and the processors; client: this load generator); cpu ms/ok =",
        "CPU of srv and child per 200 answer. While the bare endpoint ran, the idle stack used",
        f"{idle['server']:.0f}% + children {idle['children']:.0f}% (bench/idle.py measures an idle stack alone).",
        "kafka = the transport floor: the stack's two Kafka hops alone, round trips/s (bench/kafka_floor.py).",
        "",
        f"stack max rate = {result['max_rate']:.1f} req/s (closed loop, concurrency {result['max_rate_concurrency']})",
        f"ratio@{RATIO_CONCURRENCY} = {'n/a' if ratio is None else f'{ratio:.3f}'} (target >= {RATIO_TARGET:.2f})"
        f"  {verdict(result['ratio_met'])}",
        f"transport ceiling@{RATIO_CONCURRENCY} = {'n/a' if ceiling is None else f'{ceiling:.3f}'}"
        " (kafka / bare: no design of the stack can reach a higher ratio on this broker)",
        f"p99 @ half max rate = {ms_text(p99)} ms (target <= {P99_TARGET_MS:.0f} ms)"
        f"  [{result['half_max_rate']:.1f} req/s open loop, p50 {ms_text(result['p50_at_half_max_rate_ms'])} ms,"
        f" {result['open_loop_sent']} sent, {result['open_loop_late_sends']} sent >5 ms late]"
        f"  {verdict(result['p99_met'])}",
    ]
    return "\n".join(lines)


def verdict(met: bool | None) -> str:
    return {True: "met", False: "MISSED", None: "not measured"}[met]


def _concurrencies(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of positive integers")
    return values


def arguments(name: str, doc: str | None, first: str) -> argparse.ArgumentParser:
    """The options every stack-against-bare benchmark takes; `first`: what the first successful request is."""
    parser = argparse.ArgumentParser(
        prog=f"bench/{name}.py", description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=10, help="measured seconds per run (default 10)")
    parser.add_argument(
        "--concurrency", type=_concurrencies, default=[1, 8, 32, 64], help="closed-loop concurrencies (1,8,32,64)"
    )
    parser.add_argument("--database-url", help="SIGNALYARD_DATABASE_URL for the stack (default: SQLite in a temp dir)")
    parser.add_argument("--warmup", type=float, default=1, help="unmeasured seconds before each run (default 1)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between runs (default 0.5)")
    parser.add_argument("--startup-timeout", type=float, default=90, help="seconds for /readyz to answer 200")
    parser.add_argument("--warmup-timeout", type=float, default=60, help=f"seconds for {first}")
    parser.add_argument(
        "--client",
        choices=["raw", "aiohttp"],
        default="raw",
        help="load generator HTTP client: raw HTTP/1.1 + httptools (default), or aiohttp (pip install aiohttp)",
    )
    parser.add_argument("--log-level", default="warning", help="SIGNALYARD_LOG_LEVEL of the servers")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (server logs, SQLite file)")
    parser.add_argument("--output", type=Path, help=f"JSON file (default bench/results/{name}-<timestamp>.json)")
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.client == "aiohttp":
        try:
            import aiohttp  # noqa: F401
        except ImportError:
            parser.error("--client aiohttp needs aiohttp: pip install aiohttp (see bench/README.md)")
    return args


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return parse(arguments("phone", __doc__, "a first verify 200"), argv)


Run = Callable[[argparse.Namespace, list[Server], Path], Coroutine[Any, Any, dict[str, Any]]]
"""A benchmark's body: (its arguments, the list it adds each server it starts to, a temp dir) -> its figures."""


def main(argv: list[str] | None = None) -> int:
    return execute(parse_args(argv), "phone", run, report)


def execute(args: argparse.Namespace, name: str, run: Run, report: Callable[[dict[str, Any]], str]) -> int:
    """Runs `run` on uvloop; whatever happens, stops every server it started; then writes the figures to
    bench/results/<name>-<timestamp>.json (or --output) and prints `report` of them."""
    workdir = Path(tempfile.mkdtemp(prefix="signalyard-bench-"))
    servers: list[Server] = []
    result: dict[str, Any] | None = None
    code = 0
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop if uvloop else None) as runner:
            loop = runner.get_loop()
            task = loop.create_task(run(args, servers, workdir))
            loop.add_signal_handler(signal.SIGTERM, task.cancel)  # like Ctrl-C: stop the servers, then exit
            result = runner.run(_await(task))
    except (KeyboardInterrupt, asyncio.CancelledError):
        log("interrupted")
        code = 130
    except RuntimeError as error:
        log(f"failed: {error}")
        code = 1
    finally:
        log("stopping servers")
        for server in reversed(servers):
            for problem in server.stop():
                log(problem)
        leftovers = [child for server in servers for child in server.leftovers()]
        if leftovers:
            log(f"WARNING: processes left running: {leftovers}")
        if args.keep or code not in (0, 130):
            log(f"server logs and data kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if result is None:
        return code
    output = args.output or RESULTS / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(report(result), flush=True)
    print(f"\nfigures written to {output.relative_to(Path.cwd()) if output.is_relative_to(Path.cwd()) else output}")
    return code


async def _await(task: asyncio.Task[dict[str, Any]]) -> dict[str, Any]:
    return await task


if __name__ == "__main__":
    sys.exit(main())
