"""Webhook deliveries benchmark: the engine (claim from SQLite, sign, POST over HTTPS, record) against a bare loop of
our guarded httpx client posting the same bodies at the same concurrency, to the same local receiver (the baseline of
the target, from when the engine sent with it); and the same bare loop with the engine's own aiohttp session, its
sends without the engine around them.

    python bench/deliveries.py [--deliveries 20000] [--endpoints 20] [--concurrency 64] [--per-endpoint 8]
                               [--rounds 2] [--database-url URL]

The receiver is a raw ASGI app on uvicorn (httptools, uvloop) in a subprocess, with a certificate from a trustme CA;
it answers 200 `ok` and counts. This process runs on uvloop, as `signalyard processors` does. Each round, one after
the other: the bare loop (`--deliveries` POSTs by `--concurrency` workers, precomputed headers), then the engine
(`--deliveries` deliveries fanned out beforehand, timed from the first claim until every result is stored), then the
bare loop on aiohttp. Prints deliveries/s of each, the ratio (engine / bare httpx) and the CPU per delivery of sender
and receiver per round, then the best figures, the median ratio and what one core's worth of CPU would give (the
sender is CPU-bound; on a shared machine throughput varies with the neighbours, CPU per delivery much less), and the
receiver's count as a check.
Targets: >= 1,000/s and ratio >= 0.5. Not a test: it exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvloop

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cryptography.fernet import Fernet  # noqa: E402

from net.guard import guarded_client, guarded_session, tls_context  # noqa: E402
from processors.common.webhooks import WebhookDeliverer  # noqa: E402
from storage.common.db import Database, migrate, sqlite_url  # noqa: E402
from storage.common.webhooks.deliveries import fan_out  # noqa: E402
from storage.common.webhooks.endpoints import create_endpoint  # noqa: E402
from storage.common.webhooks.events import record_events  # noqa: E402
from topics.photo import WEBHOOKS  # noqa: E402

PROFILE = dataclasses.replace(WEBHOOKS, service="bench", max_endpoints=1_000_000)
"""Photo's webhooks (body, signature, timestamp and delivery-id headers) under a service of the bench's own, with
as many endpoints per owner as `--endpoints` asks."""
DATA = {
    "verification_id": "ver_0123456789abcdef01234567",
    "status": "completed",
    "category": "passport",
    "compliant": False,
    "violation_reasons": ["background_not_uniform", "face_too_small"],
    "confidence": 0.93,
}


# ------------------------------------------------------------------------------------------------------ receiver


def serve(port: int, certfile: str) -> None:
    """The receiver subprocess: count POSTs, answer 200 `ok`; GET /count answers the count."""
    import uvicorn

    count = 0

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal count
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["method"] == "POST":
            count += 1
            body = b"ok"
        else:
            body = str(count).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        ssl_certfile=certfile,
        http="httptools",
        loop="uvloop",
        lifespan="off",
        log_level="warning",
        access_log=False,
        interface="asgi3",
        backlog=4096,
        timeout_keep_alive=60,
    )


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU of a process (this one by default)."""
    if pid is None:
        used = resource.getrusage(resource.RUSAGE_SELF)
        return used.ru_utime + used.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_receiver(workdir: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    import trustme

    ca = trustme.CA()
    ca_bundle, certfile = workdir / "ca.pem", workdir / "server.pem"
    ca.cert_pem.write_to_path(str(ca_bundle))
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(certfile))
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(certfile)])
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, port, ca_bundle
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the receiver did not start") from None
            time.sleep(0.05)


# ----------------------------------------------------------------------------------------------------- the runs


async def prepare(db: Database, cipher: Fernet, port: int, endpoints: int, deliveries: int) -> None:
    """`endpoints` endpoints of one owner and enough events fanned out for `deliveries` deliveries."""
    owner = f"cus_bench_{time.time_ns()}"

    def create(connection: Any) -> None:
        for index in range(endpoints):
            create_endpoint(
                connection,
                PROFILE,
                cipher,
                owner_id=owner,
                url=f"https://localhost:{port}/hooks/{index}",
                events=["verification.completed"],
            )

    await db.write(create)
    events = -(-deliveries // endpoints)
    for start in range(0, events, 500):

        def record(connection: Any, count: int = min(500, events - start)) -> None:
            batch = [("verification.completed", DATA)] * count
            ids = record_events(connection, PROFILE, owner, batch, now=datetime.now(UTC))
            fan_out(connection, set(ids), now=datetime.now(UTC))

        await db.write(record)


async def engine_round(
    db: Database, cipher: Fernet, ca_bundle: Path, args: argparse.Namespace, port: int
) -> tuple[float, float]:
    """(deliveries/s, CPU seconds the setup took)."""
    setup_started = cpu_seconds()
    await prepare(db, cipher, port, args.endpoints, args.deliveries)
    setup_s = cpu_seconds() - setup_started
    engine = WebhookDeliverer(
        db,
        PROFILE,
        cipher,
        allow_private_targets=True,
        ca_bundle=ca_bundle,
        concurrency=args.concurrency,
        per_endpoint=args.per_endpoint,
        claim_batch=args.claim_batch,
    )
    try:
        started = time.perf_counter()
        sent = await engine.deliver_due()
        elapsed = time.perf_counter() - started
    finally:
        await engine.aclose()
    return sent / elapsed, setup_s


async def bare_round(ca_bundle: Path, args: argparse.Namespace, port: int, client: str = "httpx") -> float:
    """`client`'s bare loop: `--concurrency` workers spread over the endpoints, each with a client of one kept
    connection (as the engine keeps them: our guarded httpx client, or the engine's own aiohttp session), posting one
    signed body again and again: HTTP and TLS alone."""
    tls = tls_context(ca_bundle)
    event_id = "evt_0123456789abcdef01234567"
    body = PROFILE.envelope(event_id, "verification.completed", datetime.now(UTC), DATA)
    headers = PROFILE.headers("whsec_" + "x" * 43, body, int(time.time()), event_id)
    urls = [f"https://localhost:{port}/hooks/{index}" for index in range(args.endpoints)]
    posts: list[Callable[[str], Awaitable[int]]] = []
    closes: list[Callable[[], Awaitable[None]]] = []
    for _ in range(args.concurrency):
        if client == "httpx":
            httpx_client = guarded_client(allow_private_targets=True, tls=tls, max_connections=1)

            async def post_httpx(url: str, httpx_client: Any = httpx_client) -> int:
                async with httpx_client.stream("POST", url, content=body, headers=headers) as response:
                    async for _ in response.aiter_bytes():
                        pass
                return int(response.status_code)

            posts.append(post_httpx)
            closes.append(httpx_client.aclose)
        else:
            session = guarded_session(allow_private_targets=True, tls=tls, max_connections=1)

            async def post_aiohttp(url: str, session: Any = session) -> int:
                async with session.post(url, data=body, headers=headers, allow_redirects=False) as response:
                    await response.read()
                return int(response.status)

            posts.append(post_aiohttp)
            closes.append(session.close)
    remaining = args.deliveries

    async def worker(index: int) -> None:
        nonlocal remaining
        post, url = posts[index], urls[index % args.endpoints]
        while remaining > 0:
            remaining -= 1
            assert await post(url) == 200

    try:
        started = time.perf_counter()
        await asyncio.gather(*(worker(index) for index in range(args.concurrency)))
        elapsed = time.perf_counter() - started
    finally:
        await asyncio.gather(*(close() for close in closes))
    return args.deliveries / elapsed


async def received(ca_bundle: Path, port: int) -> int:
    async with guarded_client(allow_private_targets=True, ca_bundle=ca_bundle) as client:
        return int((await client.get(f"https://localhost:{port}/count")).text)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-deliveries-") as workdir:
        receiver, port, ca_bundle = start_receiver(Path(workdir))
        url = args.database_url or sqlite_url(Path(workdir) / "bench.db")
        await asyncio.to_thread(migrate, url)
        db = Database(url)
        cipher = Fernet(Fernet.generate_key())
        try:
            print(
                f"{args.deliveries} deliveries to {args.endpoints} endpoints, concurrency {args.concurrency} "
                f"(per endpoint {args.per_endpoint}), {os.cpu_count()} cores, {url.split(':')[0]}"
            )
            rates: list[tuple[float, float, float, float]] = []
            for round_ in range(1, args.rounds + 1):
                before = cpu_seconds(), cpu_seconds(receiver.pid)
                bare = await bare_round(ca_bundle, args, port)
                middle = cpu_seconds(), cpu_seconds(receiver.pid)
                engine, setup_s = await engine_round(db, cipher, ca_bundle, args, port)
                after = cpu_seconds(), cpu_seconds(receiver.pid)
                other = await bare_round(ca_bundle, args, port, client="aiohttp")
                last = cpu_seconds(), cpu_seconds(receiver.pid)
                bare_us = [(m - b) / args.deliveries * 1e6 for b, m in zip(before, middle, strict=True)]
                engine_us = [(a - m) / args.deliveries * 1e6 for m, a in zip(middle, after, strict=True)]
                engine_us[0] -= setup_s / args.deliveries * 1e6
                other_us = [(z - a) / args.deliveries * 1e6 for a, z in zip(after, last, strict=True)]
                print(
                    f"round {round_}: bare httpx {bare:6.0f}/s   engine {engine:6.0f}/s   ratio {engine / bare:.2f}   "
                    f"CPU per delivery (sender / receiver): bare {bare_us[0]:.0f} / {bare_us[1]:.0f} us, "
                    f"engine {engine_us[0]:.0f} / {engine_us[1]:.0f} us; bare aiohttp {other:6.0f}/s, "
                    f"{other_us[0]:.0f} / {other_us[1]:.0f} us"
                )
                rates.append((bare, engine, bare_us[0], engine_us[0]))
            bare_best, engine_best = max(r[0] for r in rates), max(r[1] for r in rates)
            ratio = sorted(r[1] / r[0] for r in rates)[len(rates) // 2]
            bare_cpu, engine_cpu = min(r[2] for r in rates), min(r[3] for r in rates)
            print(f"best: bare {bare_best:.0f}/s, engine {engine_best:.0f}/s; median ratio {ratio:.2f}")
            print(
                f"least CPU per delivery: bare {bare_cpu:.0f} us, engine {engine_cpu:.0f} us; one core's worth: "
                f"{1e6 / bare_cpu:.0f}/s and {1e6 / engine_cpu:.0f}/s, ratio {bare_cpu / engine_cpu:.2f}"
            )
            expected = 3 * args.rounds * args.deliveries
            print(f"receiver counted {await received(ca_bundle, port)} POSTs (expected {expected})")
        finally:
            await db.dispose()
            receiver.terminate()
            receiver.wait()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=20_000)
    parser.add_argument("--endpoints", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-endpoint", type=int, default=8)
    parser.add_argument("--claim-batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--database-url", help="default: a SQLite file in a temporary directory")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "CERTFILE"), help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    parsed = arguments()
    if parsed.serve:
        serve(int(parsed.serve[0]), parsed.serve[1])
    else:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main(parsed))
