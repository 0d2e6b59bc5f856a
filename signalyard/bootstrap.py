"""Wiring shared by every service: settings -> broker, storage, topics; serving gateways; processors children; and
how a process stops on a signal."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import math
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

import msgspec
import structlog
import uvicorn
from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker
from litestar.types import ASGIApp

from processors.common.outbox import Sweeper, sweep_forever
from processors.common.webhooks import WebhookDeliverer, events_outbox, fanout_router
from signalyard.database import database_url
from signalyard.embedded_broker import EmbeddedBroker, die_with_parent
from signalyard.exits import PortUnavailable
from signalyard.secrets import secrets_cipher
from signalyard.settings import PlatformSettings
from storage.common.db import Database, check_schema, migrate
from topics.common.admin import ensure_topics
from topics.common.client import LINGER_MS
from wire.webhooks import WebhookProfile

log = structlog.get_logger("signalyard")
_JSON = [("content-type", b"application/json")]
"""The header FastStream's `publish` sets, so that messages published together read alike."""
_PARTITIONER = DefaultPartitioner()
"""aiokafka's own (murmur2 of the key): the partition its `send`, under FastStream's `publish`, chooses."""


@dataclass
class Platform:
    """The shared parts of one process: settings, database, Kafka client, and what must be closed at the end."""

    settings: PlatformSettings
    db: Database
    broker: KafkaBroker
    """FastStream's: the subscribers. Nothing publishes through its producer (`producer` does)."""
    producer: AIOKafkaProducer
    """Every publish of this process goes through it (`producer_for`)."""
    bootstrap: str
    topics: list[str]
    """Every topic of the services this process runs (created when missing)."""
    partitions: int
    """Of the topics this process creates (when they do not exist yet)."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def publish(self, message: msgspec.Struct, topic: str, key: bytes) -> None:
        """Publish and wait for the broker's acknowledgement, at most `publish_timeout_s` (the outbox covers losses).
        The message as FastStream's `publish` writes it (JSON, its content-type header), to the partition it would
        choose for `key` (aiokafka's partitioner, under both)."""
        async with asyncio.timeout(self.settings.publish_timeout_s):
            await self.producer.send_and_wait(topic, msgspec.json.encode(message), key=key, headers=_JSON)

    async def publish_together(self, messages: Sequence[tuple[msgspec.Struct, str, bytes]]) -> None:
        """Publish many (message, topic, key) at once and wait for the broker's acknowledgement of all, at most
        `publish_timeout_s`; raises when any was not acknowledged. Each goes to the partition `publish` would choose
        for its key, in order, in batches built with aiokafka's C record builder: a relay pass of a thousand rows
        cost a thousand `publish` calls, most of the processors' time after the database's (bench/README.md)."""
        async with asyncio.timeout(self.settings.publish_timeout_s):
            producer = self.producer
            partitions: dict[str, list[int]] = {}
            chosen: dict[tuple[str, bytes], int] = {}  # the partitioner hashes in Python: once per key
            by_partition: dict[tuple[str, int], list[tuple[bytes, bytes]]] = {}
            for message, topic, key in messages:
                if (topic, key) not in chosen:
                    if topic not in partitions:
                        partitions[topic] = sorted(await producer.partitions_for(topic))
                    chosen[topic, key] = _PARTITIONER(key, partitions[topic], partitions[topic])
                by_partition.setdefault((topic, chosen[topic, key]), []).append((key, msgspec.json.encode(message)))
            sent = []
            for (topic, partition), records in by_partition.items():
                batch = producer.create_batch()
                for key, value in records:
                    while batch.append(key=key, value=value, timestamp=None, headers=_JSON) is None:  # full
                        sent.append(await producer.send_batch(batch, topic, partition=partition))
                        batch = producer.create_batch()
                sent.append(await producer.send_batch(batch, topic, partition=partition))
            await asyncio.gather(*sent)

    async def consume(self) -> None:
        """Start the subscribers added since the broker started, together. Each joins its consumer group, which the
        broker makes wait (about 5 s on the embedded one), and FastStream's own start takes them one after another:
        photo's processors, members of two groups, took twice as long to start."""
        await asyncio.gather(*(sub.start() for sub in self.broker.subscribers if not sub.running))

    async def ensure_topics(self) -> None:
        await ensure_topics(self.bootstrap, self.topics, self.partitions)

    async def ping_broker(self) -> None:
        if not await self.broker.ping(timeout=2):
            raise ConnectionError("Kafka is unreachable")


PRODUCER_TIMEOUT_FLOOR_S: Final = 1.0
"""The shortest request timeout `producer_for` gives a producer: it bounds its connections' every request (the first
metadata too), which a tiny `SIGNALYARD_PUBLISH_TIMEOUT_S` would make fail at once."""


def producer_for(settings: PlatformSettings, bootstrap: str) -> AIOKafkaProducer:
    """The producer of a process. Its request timeout (aiokafka's default: 40 s) is also how long it keeps a message
    it could not deliver, retrying, and how long its `stop` waits for such messages: with the broker gone, a stopping
    process waited 40 s for messages whose publishers had given up after `publish_timeout_s` and left their rows to
    the outbox. Here it gives up when they do (not sooner than `PRODUCER_TIMEOUT_FLOOR_S`). FastStream's broker has
    one request timeout for its producer and its consumers, and a consumer group's join needs the long one: hence a
    producer of our own rather than FastStream's."""
    timeout_s = max(settings.publish_timeout_s, PRODUCER_TIMEOUT_FLOOR_S)
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=LINGER_MS, request_timeout_ms=math.ceil(timeout_s * 1000)
    )


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
        bootstrap = embedded.bootstrap
    try:
        if embedded is not None:
            embedded.launch()  # from the event loop's thread, which lives as long as the broker should (PDEATHSIG)
            await asyncio.to_thread(embedded.wait_until_listening)
        url = database_url(settings)
        await asyncio.to_thread(migrate if upgrade else check_schema, url)
        db = Database(url)
        broker = KafkaBroker(bootstrap, serializer=MsgSpecSerializer(), logger=None, linger_ms=LINGER_MS)
        producer = producer_for(settings, bootstrap)
        running = Platform(
            settings, db, broker, producer, bootstrap, list(topics), settings.partitions(embedded=embedded is not None)
        )
        await running.ensure_topics()
        try:
            await producer.start()
            yield running
        finally:
            # Each runs even if one before it fails: a closer skipped could leave processes behind (the image checks').
            async with contextlib.AsyncExitStack() as stopping:
                stopping.push_async_callback(db.dispose)
                stopping.push_async_callback(producer.stop)  # after the subscribers, which publish
                for close in reversed(running.closers):
                    stopping.push_async_callback(close)
                stopping.push_async_callback(broker.stop)
    finally:
        if embedded is not None:
            embedded.stop()


def freeze_startup_heap() -> None:
    """What starting allocated (modules, phonenumbers' metadata, name tables, the app) lives as long as the process:
    move it out of the garbage collector's sight, so that a full collection no longer walks it. Such collections
    stopped the event loop for about 90 ms, several times a minute under load (measured, bench/README.md)."""
    gc.collect()
    gc.freeze()


class Stop:
    """SIGINT and SIGTERM stop the process in order, whatever it is doing. While it starts, a signal cancels the
    start: every `finally` and `async with` undoes what was started, in reverse, and the command ends with status 130.
    Once it runs (it awaits `requested`), a signal makes `requested` return and the caller stops its parts in order.
    A further signal changes nothing, so that a second Ctrl-C cannot cut a shutdown short and leave processes behind.

    Create it first thing in a command: until then a signal has its default effect (nothing is started yet)."""

    def __init__(self) -> None:
        self._starting: asyncio.Task[Any] | None = asyncio.current_task()
        self._requested = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._received, signum)

    def _received(self, signum: int) -> None:
        if self._requested.is_set():
            log.info("already_stopping", signal=signal.Signals(signum).name)
            return
        log.info("stopping", signal=signal.Signals(signum).name)
        self._requested.set()
        if self._starting is not None:
            self._starting.cancel()

    async def requested(self) -> None:
        """The start is over: return once a signal asks the process to stop."""
        self._starting = None
        await self._requested.wait()


def listen(host: str, port: int, variable: str) -> socket.socket:
    """A listening socket on host:port, bound before anything else starts and handed to uvicorn as it is, so that
    nothing can take the port between a check and the bind."""
    try:
        listening = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET, backlog=2048
        )
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise PortUnavailable(f"port {port} is in use; set {variable} to another port") from None
        raise PortUnavailable(
            f"cannot listen on {host}:{port} ({error.strerror}); set {variable} or SIGNALYARD_HOST"
        ) from None
    # Connections accepted from it inherit TCP_NODELAY. asyncio sets it only on sockets made for IPPROTO_TCP, which
    # create_server's are not: without it, a response written in two parts waited out the client's delayed ACK
    # (40 ms) on every request under asyncio's own event loop.
    listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listening


class Server(uvicorn.Server):
    """uvicorn without its own signal handling: `Stop` decides when a process stops, and `serving` then stops every
    server in order (uvicorn's would re-raise the signal after its shutdown); stopping drains the app first.
    tests/unit/test_serving.py fails if uvicorn stops calling `capture_signals` from `serve`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, end the app's long-lived answers (gateway/common/app.py `Gateway.drain`), then let the
        requests in flight finish."""
        drain = getattr(self.config.app, "drain", None)
        if drain is not None:
            drain()
        await super().shutdown(sockets)


@dataclass(frozen=True, slots=True)
class Listener:
    app: ASGIApp
    socket: socket.socket
    """From `listen`."""

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextlib.asynccontextmanager
async def serving(listeners: Sequence[Listener]) -> AsyncIterator[None]:
    """Every listener's app served by uvicorn on its socket, accepting connections when this is entered; on exit each
    server stops accepting, lets the requests in flight finish, and stops."""
    servers = [Server(uvicorn.Config(lsn.app, log_config=None, access_log=False)) for lsn in listeners]
    tasks = [
        asyncio.ensure_future(server.serve(sockets=[lsn.socket]))
        for server, lsn in zip(servers, listeners, strict=True)
    ]
    try:
        while not all(server.started for server in servers):
            for task in tasks:
                if task.done():
                    task.result()  # its exception, if it has one
                    raise RuntimeError("a gateway stopped while starting")
            await asyncio.sleep(0.01)
        for lsn in listeners:
            log.info("gateway_listening", url=lsn.url)
        yield
    finally:
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks)


async def first_of(*awaitables: Awaitable[Any]) -> None:
    """Wait until one of `awaitables` is done. The coroutines among the others are cancelled; a future is left to
    whoever made it."""
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task, awaitable in zip(tasks, awaitables, strict=True):
            if task is not awaitable:
                task.cancel()


class ProcessorsProcess:
    """`signalyard processors SERVICE` as a child of `signalyard up`, on the same broker and database: the gateways
    and each service's processors get a process (and so a core) of their own, as in production.

    The child runs in a process group of its own, so a Ctrl-C in the terminal reaches only the launcher, which stops
    the child in order; if the launcher is killed outright the kernel stops the child (PDEATHSIG). Once the child has
    exited, whatever it started and left behind (image-check workers...) is killed with its process group."""

    def __init__(self, p: Platform, service: str) -> None:
        self.service = service
        self.host = p.settings.host
        self.metrics_url: str | None = None
        """The processors' own Prometheus endpoint (the gateway's /metrics has only the gateway's metrics), once the
        child said which port it got."""
        self.env = os.environ | {
            "SIGNALYARD_KAFKA_BOOTSTRAP": p.bootstrap,
            "SIGNALYARD_DATABASE_URL": p.db.url,
            "SIGNALYARD_TOPIC_PARTITIONS": str(p.partitions),
        }
        self.process: asyncio.subprocess.Process | None = None
        self._said: int | None = None

    async def start(self) -> None:
        said, say = os.pipe()
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "signalyard.cli",
                "processors",
                self.service,
                env=self.env | {READY_FD: str(say)},
                stdin=asyncio.subprocess.DEVNULL,
                preexec_fn=die_with_parent,
                pass_fds=(say,),
            )
        except BaseException:
            os.close(said)
            raise
        finally:
            os.close(say)
        self._said = said

    async def ready(self) -> None:
        """Return once the processors consume: the child then opens its metrics server on a port of its choosing and
        writes that port to READY_FD (a pipe); or once the child has exited without saying so. (The port is the
        child's to choose: one chosen here and bound there later could be taken meanwhile.)"""
        assert self._said is not None
        line = await asyncio.to_thread(_first_line, self._said)
        if line.strip().isdigit():
            self.metrics_url = f"http://{self.host}:{int(line)}/metrics"

    async def exited(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def stop(self, timeout_s: float = 15) -> None:
        if self.process is None:
            return
        if self.process.returncode is None:
            self.process.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), timeout_s)
            if self.process.returncode is None:
                log.error("processors_killed", service=self.service, after_s=timeout_s)
                self.process.kill()
                await self.process.wait()
        # Whatever the child started is in its process group; all of it should be gone with the child's orderly
        # shutdown, but a child killed, crashed or stuck leaves it, and nothing of the stack may outlive `up`.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


READY_FD = "SIGNALYARD_READY_FD"
"""Set by `signalyard up` for its processors children (not a setting): the pipe a child writes its metrics port to,
once it consumes."""


def _first_line(fd: int) -> str:
    """The first line written to the pipe `fd` (empty when its writer closed it first), which is then closed."""
    with os.fdopen(fd, "r") as pipe:
        return pipe.readline()


@contextlib.asynccontextmanager
async def processors_children(p: Platform, services: Sequence[str]) -> AsyncIterator[list[ProcessorsProcess]]:
    """A processors child per service, started at once; on exit all are stopped, together."""
    children = [ProcessorsProcess(p, service) for service in services]
    try:
        for child in children:
            await child.start()
        yield children
    finally:
        await asyncio.gather(*(child.stop() for child in children))


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
        secrets_cipher(settings),
        allow_private_targets=settings.webhook_allow_private_targets,
        ca_bundle=settings.webhook_ca_bundle,
        lease=None if settings.webhook_lease_s is None else timedelta(seconds=settings.webhook_lease_s),
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
