"""Wiring shared by every service: settings -> broker, storage, topics; serving gateways; processors children."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import msgspec
import structlog
import uvicorn
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker
from litestar.types import ASGIApp

from processors.common.outbox import Sweeper, sweep_forever
from processors.common.webhooks import WebhookDeliverer, events_outbox, fanout_router
from signalyard.embedded_broker import EmbeddedBroker, die_with_parent, free_port
from signalyard.secrets import webhook_cipher
from signalyard.settings import PlatformSettings
from storage.common.db import Database, check_schema, migrate, sqlite_url
from topics.common.admin import ensure_topics
from topics.common.client import LINGER_MS
from wire.webhooks import WebhookProfile

log = structlog.get_logger("signalyard")


def database_url(settings: PlatformSettings) -> str:
    if settings.database_url:
        return settings.database_url
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return sqlite_url(settings.sqlite_path.resolve())


@dataclass
class Platform:
    """The shared parts of one process: settings, database, Kafka client, and what must be closed at the end."""

    settings: PlatformSettings
    db: Database
    broker: KafkaBroker
    bootstrap: str
    topics: list[str]
    """Every topic of the services this process runs (created when missing)."""
    partitions: int
    """Of the topics this process creates (when they do not exist yet)."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def publish(self, message: msgspec.Struct, topic: str, key: bytes) -> None:
        """Publish and wait for the broker's acknowledgement, at most `publish_timeout_s` (the outbox covers losses)."""
        async with asyncio.timeout(self.settings.publish_timeout_s):
            await self.broker.publish(message, topic, key=key)

    async def ensure_topics(self) -> None:
        await ensure_topics(self.bootstrap, self.topics, self.partitions)

    async def ping_broker(self) -> None:
        if not await self.broker.ping(timeout=2):
            raise ConnectionError("Kafka is unreachable")


@contextlib.asynccontextmanager
async def platform(
    settings: PlatformSettings,
    topics: Sequence[str],
    *,
    bootstrap: str | None = None,
    upgrade: bool = False,
) -> AsyncIterator[Platform]:
    """Broker address (configured, or the embedded broker), database at the newest schema, `topics`, a Kafka client.

    With `upgrade` the schema is migrated first (`signalyard up`, `signalyard migrate`); without it a process on an
    older schema stops with a message naming `signalyard migrate`, so replicas never upgrade concurrently."""
    embedded: EmbeddedBroker | None = None
    bootstrap = bootstrap or settings.kafka_bootstrap
    if bootstrap is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        embedded = EmbeddedBroker(log_path=settings.data_dir / "broker.log")
        bootstrap = await asyncio.to_thread(embedded.start)
    try:
        url = database_url(settings)
        await asyncio.to_thread(migrate if upgrade else check_schema, url)
        db = Database(url)
        broker = KafkaBroker(bootstrap, serializer=MsgSpecSerializer(), logger=None, linger_ms=LINGER_MS)
        running = Platform(
            settings, db, broker, bootstrap, list(topics), settings.partitions(embedded=embedded is not None)
        )
        await running.ensure_topics()
        try:
            yield running
        finally:
            await broker.stop()
            for close in running.closers:
                await close()
            await db.dispose()
    finally:
        if embedded is not None:
            embedded.stop()


def freeze_startup_heap() -> None:
    """What starting allocated (modules, phonenumbers' metadata, name tables, the app) lives as long as the process:
    move it out of the garbage collector's sight, so that a full collection no longer walks it. Such collections
    stopped the event loop for about 90 ms, several times a minute under load (measured, bench/README.md)."""
    gc.collect()
    gc.freeze()


class Server(uvicorn.Server):
    """uvicorn without its own signal handling: `serve` stops every server on SIGINT/SIGTERM and returns, so that
    the caller closes the broker and database in order (uvicorn's would re-raise the signal after its shutdown).
    tests/unit/test_serving.py fails if uvicorn stops calling `capture_signals` from `serve`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(frozen=True, slots=True)
class Listener:
    app: ASGIApp
    host: str
    port: int


async def serve(
    listeners: Sequence[Listener],
    on_listening: Callable[[], None] = lambda: None,
    until: Awaitable[object] | None = None,
) -> None:
    """Serve every listener until SIGINT/SIGTERM (or until `until` completes), then return so the caller can close
    everything in order. `on_listening` is called once every port accepts connections."""
    servers = [
        Server(uvicorn.Config(lsn.app, host=lsn.host, port=lsn.port, log_config=None, access_log=False))
        for lsn in listeners
    ]

    def stop() -> None:
        for server in servers:
            server.should_exit = True

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop)

    async def announce() -> None:
        while not all(server.started for server in servers):
            if any(server.should_exit for server in servers):
                return
            await asyncio.sleep(0.02)
        on_listening()

    async def stop_when(awaitable: Awaitable[object]) -> None:
        await awaitable
        stop()

    helpers = [asyncio.ensure_future(announce())]
    if until is not None:
        helpers.append(asyncio.ensure_future(stop_when(until)))
    try:
        results = await asyncio.gather(*(server.serve() for server in servers), return_exceptions=True)
    finally:
        for helper in helpers:
            helper.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    if any(not server.started for server in servers):
        raise SystemExit(1)  # a port could not be bound; uvicorn has logged why


class ProcessorsProcess:
    """`signalyard processors SERVICE` as a child of `signalyard up`, on the same broker and database: the gateways
    and each service's processors get a process (and so a core) of their own, as in production.

    The child runs in a process group of its own, so a Ctrl-C in the terminal reaches only the launcher, which stops
    the child in order; if the launcher is killed outright the kernel stops the child (PDEATHSIG)."""

    def __init__(self, p: Platform, service: str) -> None:
        self.service = service
        self.metrics_port = free_port()
        self.metrics_url = f"http://{p.settings.host}:{self.metrics_port}/metrics"
        """The processors' own Prometheus endpoint (the gateway's /metrics has only the gateway's metrics)."""
        self.env = os.environ | {
            "SIGNALYARD_KAFKA_BOOTSTRAP": p.bootstrap,
            "SIGNALYARD_DATABASE_URL": p.db.url,
            "SIGNALYARD_TOPIC_PARTITIONS": str(p.partitions),
            "SIGNALYARD_PROCESSOR_METRICS_PORT": str(self.metrics_port),
        }
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "signalyard.cli",
            "processors",
            self.service,
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )

    async def exited(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def stop(self, timeout_s: float = 15) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def first_exit(processes: Sequence[ProcessorsProcess]) -> tuple[str, int]:
    """(service, status) of the first processors child that exits."""
    waits = {asyncio.ensure_future(process.exited()): process.service for process in processes}
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        task = done.pop()
        return waits[task], task.result()
    finally:
        for task in waits:
            task.cancel()


Background = Callable[[], Coroutine[Any, Any, None]]
"""A task a processors process runs beside its subscribers until it stops: a sweeper, a delivery loop."""


def sweeping(sweeper: Sweeper, every_s: float) -> Background:
    return lambda: sweep_forever(sweeper, every_s)


def webhook_engine(p: Platform, profile: WebhookProfile) -> list[Background]:
    """A service's webhooks in a processors process: the fan-out subscriber, one deliverer (woken by the fan-out),
    and the sweeper that re-announces events whose announcement was lost. Each attempt may take the profile's
    `timeout_s`."""
    settings = p.settings
    deliverer = WebhookDeliverer(
        p.db,
        profile,
        webhook_cipher(settings),
        allow_private_targets=settings.webhook_allow_private_targets,
        ca_bundle=settings.webhook_ca_bundle,
    )
    p.broker.include_router(
        fanout_router(p.db, profile.service, prefix=settings.topic_prefix, on_fanned_out=deliverer.wake)
    )
    p.closers.append(deliverer.aclose)
    sweeper = Sweeper(
        p.db,
        events_outbox(profile.service, settings.topic_prefix),
        p.publish,
        after=timedelta(seconds=settings.sweep_after_s),
        ensure_topics=p.ensure_topics,
        timeout_s=settings.publish_timeout_s,
    )
    return [deliverer.run, sweeping(sweeper, settings.sweep_every_s)]


def run_background(tasks: Sequence[Background]) -> list[asyncio.Task[None]]:
    return [asyncio.create_task(task()) for task in tasks]
