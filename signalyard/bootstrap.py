"""Wiring: settings -> broker, storage, gateways and processors. The only module that imports both sides."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import msgspec
import structlog
import uvicorn
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker
from litestar.types import ASGIApp

from gateway.phone.app import PhoneGateway, batched_accept, create_phone_app
from gateway.phone.auth import Authenticator
from gateway.phone.enforcement import Enforcement
from gateway.phone.waiter import ResultWaiter
from processors.phone.lookup import Provider
from processors.phone.providers import CarrierLookup, Sandbox
from processors.phone.router import phone_router
from processors.phone.service import PhoneProcessor, PhoneProcessorConfig
from signalyard.embedded_broker import EmbeddedBroker, die_with_parent, free_port
from signalyard.settings import Settings
from storage.db import Database, migrate, sqlite_url
from topics.admin import ensure_topics
from topics.client import LINGER_MS
from topics.phone import PhoneTopics, VerificationRequested, partition_key

log = structlog.get_logger("signalyard")


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return sqlite_url(settings.sqlite_path.resolve())


@dataclass
class Platform:
    """The shared parts of one process: settings, database, Kafka client, and what must be closed at the end."""

    settings: Settings
    db: Database
    broker: KafkaBroker
    bootstrap: str
    topics: PhoneTopics
    partitions: int
    """Of the topics this process creates (when they do not exist yet)."""
    closers: list[CarrierLookup] = field(default_factory=list)

    async def publish(self, message: msgspec.Struct, topic: str, key: bytes) -> None:
        """Publish and wait for the broker's acknowledgement, at most `publish_timeout_s` (the outbox covers losses)."""
        async with asyncio.timeout(self.settings.publish_timeout_s):
            await self.broker.publish(message, topic, key=key)

    async def ensure_topics(self) -> None:
        await ensure_topics(self.bootstrap, [self.topics.requested, self.topics.completed], self.partitions)

    async def ping_broker(self) -> None:
        if not await self.broker.ping(timeout=2):
            raise ConnectionError("Kafka is unreachable")


@contextlib.asynccontextmanager
async def platform(settings: Settings, *, bootstrap: str | None = None) -> AsyncIterator[Platform]:
    """Broker address (configured, or the embedded broker), migrated database, topics, and a Kafka client."""
    embedded: EmbeddedBroker | None = None
    bootstrap = bootstrap or settings.kafka_bootstrap
    if bootstrap is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        embedded = EmbeddedBroker(log_path=settings.data_dir / "broker.log")
        bootstrap = await asyncio.to_thread(embedded.start)
    try:
        url = database_url(settings)
        await asyncio.to_thread(migrate, url)
        db = Database(url)
        broker = KafkaBroker(bootstrap, serializer=MsgSpecSerializer(), logger=None, linger_ms=LINGER_MS)
        topics = PhoneTopics(settings.topic_prefix)
        running = Platform(settings, db, broker, bootstrap, topics, settings.partitions(embedded=embedded is not None))
        await running.ensure_topics()
        try:
            yield running
        finally:
            await broker.stop()
            for closer in running.closers:
                await closer.aclose()
            await db.dispose()
    finally:
        if embedded is not None:
            embedded.stop()


def phone_gateway(p: Platform) -> ASGIApp:
    """The phone gateway app; its result subscription is added to the platform's broker (start it afterwards)."""
    waiter = ResultWaiter(p.db)
    p.broker.include_router(waiter.router(p.topics.completed))
    enforcement = Enforcement(p.db, p.settings.phone_rate_limit, _limits_url(p.settings.redis_url))

    async def publish(message: VerificationRequested) -> None:
        await p.publish(message, p.topics.requested, partition_key(message.phone_e164))

    gateway = PhoneGateway(
        db=p.db,
        auth=Authenticator(p.db, p.settings.auth_cache_s),
        enforcement=enforcement,
        waiter=waiter,
        publish=publish,
        accept=batched_accept(p.db),
        wait_s=p.settings.phone_wait_ms / 1000,
    )
    readiness = {"database": p.db.ping, "broker": p.ping_broker, "rate_limit_store": enforcement.ping}
    return create_phone_app(gateway, readiness)


def _limits_url(redis_url: str | None) -> str | None:
    if not redis_url:
        return None
    return redis_url if redis_url.startswith("async+") else "async+" + redis_url


def phone_processor(p: Platform) -> PhoneProcessor:
    """The phone processor, subscribed on the platform's broker as a member of the processors' consumer group."""
    s = p.settings
    live = CarrierLookup(
        s.carrier_lookup_url,
        s.carrier_lookup_sid,
        s.carrier_lookup_token,
        timeout_s=s.carrier_lookup_timeout_s,
        retries=s.carrier_lookup_retries,
    )
    p.closers.append(live)
    providers: dict[str, Provider] = {"test": Sandbox(slow_delay_s=s.sandbox_slow_ms / 1000), "live": live}
    processor = PhoneProcessor(
        p.db,
        providers,
        p.publish,
        PhoneProcessorConfig(
            requested_topic=p.topics.requested,
            completed_topic=p.topics.completed,
            sweep_after=timedelta(seconds=s.sweep_after_s),
        ),
        ensure_topics=p.ensure_topics,
    )
    p.broker.include_router(phone_router(processor))
    return processor


def freeze_startup_heap() -> None:
    """What starting allocated (modules, phonenumbers' metadata, name tables, the app) lives as long as the process:
    move it out of the garbage collector's sight, so that a full collection no longer walks it. Such collections
    stopped the event loop for about 90 ms, several times a minute under load (measured, bench/README.md)."""
    gc.collect()
    gc.freeze()


async def sweep_forever(processor: PhoneProcessor, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        try:
            await processor.sweep()
        except Exception:  # a sweep that fails is retried at the next tick
            log.exception("sweep_failed")


class _Server(uvicorn.Server):
    """uvicorn, minus re-raising the stop signal after its shutdown: ours still has the broker and DB to close;
    plus a call once it listens."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.on_listening()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {signum: signal.signal(signum, self.handle_exit) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


async def serve(
    app: ASGIApp,
    host: str,
    port: int,
    on_listening: Callable[[], None] = lambda: None,
    until: Awaitable[object] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM (or until `until` completes), then return so the caller can close everything in
    order. `on_listening` is called once the port accepts connections."""
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="on")
    server = _Server(config, on_listening)

    async def stop_when_done(awaitable: Awaitable[object]) -> None:
        await awaitable
        server.should_exit = True

    stopper = asyncio.ensure_future(stop_when_done(until)) if until is not None else None
    try:
        await server.serve()
    finally:
        if stopper is not None:
            stopper.cancel()


class ProcessorsProcess:
    """`signalyard processors phone` as a child of `signalyard up`, on the same broker and database: the gateway
    and the processors each get a core, as they would get machines of their own in production."""

    def __init__(self, p: Platform) -> None:
        self.metrics_port = p.settings.processor_metrics_port or free_port()
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
            "phone",
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
