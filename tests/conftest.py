"""The platform's fixtures: one embedded broker per session (per worker under xdist), the databases under test, the
local peers, and `running_stack`, which starts any service as `signalyard up` wires it. Each service's stack and its
fixtures live in `tests/<service>_stack.py`, registered below; a test starts only the stacks it asks for."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Generic, TypeVar

import asyncpg
import httpx
import pytest
import structlog
from sqlalchemy.engine import make_url

from net.guard import tls_context
from signalyard import bootstrap, logs
from signalyard.embedded_broker import EmbeddedBroker
from signalyard.registry.helpdesk import HelpdeskSettings
from signalyard.registry.phone import PhoneSettings
from signalyard.registry.photo import PhotoSettings
from signalyard.service import Service, topics_of
from signalyard.settings import PlatformSettings, Settings
from storage.common.db import Database, migrate
from tests.peers.receiver import WebhookReceiver
from tests.peers.s3 import S3Server
from tests.peers.twilio import TwilioLookupServer
from tests.processes import descendants_of

pytest_plugins = ["tests.phone_stack", "tests.photo_stack", "tests.helpdesk_stack"]
"""Each service's stack fixtures (`stack`, `gateway_only`; `photo_stack`; `helpdesk_stack`, `helpdesk_gateway_only`),
registered once for the whole session."""
E2E = Path(__file__).parent / "e2e"
SHARED_STACKS = ["stack", "photo_stack", "helpdesk_stack"]
"""The fixtures of each service's shared stack (`SharedStacks`): one running stack per database, shared by its tests."""
KEEP_ALIVE_BELOW_THE_SERVER_S = httpx.Limits(keepalive_expiry=2.0)
"""A stack's client drops an idle connection well before the gateway's server does (uvicorn: after 5 s): with both at
5 s, a request sent on a connection idle that long met the server closing it (httpx.ReadError)."""

logs.configure("warning")


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Fails the session (each xdist worker's own) if a process the tests started outlives them: set up first, it
    is torn down last, once every other fixture has stopped what it started."""
    yield
    left = descendants_of(os.getpid())
    assert not left, "processes left behind by the tests:\n" + "\n".join(map(str, left))


@contextmanager
def logging_restored() -> Iterator[None]:
    """Whatever a test does to the logging configuration (`logs.configure`, handlers, levels) is undone after it."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    saved_levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    saved_structlog = structlog.get_config()
    try:
        yield
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        for name, level in saved_levels.items():
            logging.getLogger(name).setLevel(level)
        structlog.configure(**saved_structlog)


PG_URL = os.environ.get("SIGNALYARD_TEST_DATABASE_URL")
DATABASES = ["sqlite"] + (["postgresql"] if PG_URL else [])
collect_ignore = [] if PG_URL else ["integration/test_postgresql_pool.py"]
"""Tests of PostgreSQL alone exist where the suite runs on PostgreSQL, as every PostgreSQL variant does."""
TWILIO_SID = "AC" + "0" * 32
TWILIO_TOKEN = "test-auth-token"


def shared_stacks_of(item: pytest.Item) -> list[str]:
    """The shared stacks a test uses, each named with its database: `stack-sqlite` (no brackets: xdist reads a
    group after the last `]` of a test's id)."""
    callspec = getattr(item, "callspec", None)
    if not isinstance(item, pytest.Function) or callspec is None or "database_url" not in callspec.params:
        return []
    return [f"{name}-{callspec.params['database_url']}" for name in SHARED_STACKS if name in item.fixturenames]


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under xdist (`-n 3 --dist loadgroup`, pyproject's addopts) each worker starts the fixtures its tests use. The
    tests of one shared stack form a group that one worker runs, in collection order, so that each stack starts once
    per run, not once per worker. Other tests go to whichever worker is free, end-to-end tests first: they are the
    longest (a schemathesis run takes minutes), and handed out last they would keep one worker busy alone at the end.
    Then the tests marked `waits` (processes killed and restarted: most of their time is group joins, leases and
    sweeps), so that other workers' tests use the CPU they leave idle; handed out last, they left the machine half
    idle for the run's last few minutes."""
    items.sort(key=lambda item: (not item.path.is_relative_to(E2E), item.get_closest_marker("waits") is None))
    for item in items:
        stacks = shared_stacks_of(item)
        if stacks:
            item.add_marker(pytest.mark.xdist_group("+".join(stacks)))


LAST_USERS = pytest.StashKey[dict[str, pytest.Item]]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The last test (in collection order) of each shared stack: `SharedStacks` stops the stack after it."""
    last_users: dict[str, pytest.Item] = {}
    for item in session.items:
        for name in shared_stacks_of(item):
            last_users[name] = item
    session.config.stash[LAST_USERS] = last_users


@pytest.fixture(scope="session")
def broker_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    broker = EmbeddedBroker(log_path=tmp_path_factory.mktemp("broker") / "broker.log")
    yield broker.start()
    broker.stop()


@pytest.fixture(scope="session")
def twilio() -> Iterator[TwilioLookupServer]:
    with TwilioLookupServer(account_sid=TWILIO_SID, auth_token=TWILIO_TOKEN) as server:
        yield server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An S3-compatible server (moto's) on a local socket; each test makes buckets of its own."""
    with S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def receiver() -> Iterator[WebhookReceiver]:
    """Customers' webhook receiver: real HTTPS on localhost, with a certificate from a test CA."""
    with WebhookReceiver() as running:
        yield running


@pytest.fixture(scope="session", params=DATABASES)
async def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A fresh database per session (per worker under xdist) at the newest schema: a SQLite file, or a new PostgreSQL
    database dropped afterwards. Migrated here, not by whichever stack happens to start first on it: a worker may run
    tests that use the database without any stack."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'signalyard.db'}"
        await asyncio.to_thread(migrate, url)
        yield url
        return
    async with fresh_postgres_database(PG_URL or "") as url:
        await asyncio.to_thread(migrate, url)
        yield url


@pytest.fixture(scope="module")
async def db(database_url: str) -> AsyncIterator[Database]:
    """The session's database through an engine of the test module's own, for tests that use storage directly."""
    database = Database(database_url)
    yield database
    await database.dispose()


class fresh_postgres_database:
    def __init__(self, base_url: str) -> None:
        self.base = make_url(base_url)
        self.name = f"sy_test_{uuid.uuid4().hex[:12]}"

    def _dsn(self, database: str) -> str:
        return self.base.set(drivername="postgresql", database=database).render_as_string(hide_password=False)

    async def __aenter__(self) -> str:
        connection = await asyncpg.connect(self._dsn(self.base.database or "postgres"))
        await connection.execute(f'CREATE DATABASE "{self.name}"')
        await connection.close()
        return self.base.set(database=self.name).render_as_string(hide_password=False)

    async def __aexit__(self, *_: object) -> None:
        connection = await asyncpg.connect(self._dsn(self.base.database or "postgres"))
        await connection.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        await connection.close()


_PLATFORM_FIELDS = {spec.name for spec in dataclasses.fields(PlatformSettings)}


def stack_settings(
    data_dir: Path, database_url: str | None, twilio: TwilioLookupServer | None, **overrides: Any
) -> Settings:
    """Settings of a test stack; `overrides` name platform fields, photo fields with `photo_`, helpdesk fields with
    `helpdesk_`, or phone fields with or without `phone_`. Gateway ports are 0: `running_stack` binds a free one (and
    the settings it returns say which), so that no other process can take it in between. Helpdesk passwords are
    hashed cheaply."""
    platform: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "topic_prefix": f"t{uuid.uuid4().hex[:8]}.",
        "topic_partitions": 4,
        "sweep_after_s": 30,
        "sweep_every_s": 1,
    }
    phone: dict[str, Any] = {
        "port": 0,
        "wait_ms": 2000,
        "rate_limit": "1000/second",
        "sandbox_slow_ms": 2500,
        "carrier_lookup_url": twilio.base_url if twilio else "http://127.0.0.1:9",
        "carrier_lookup_sid": TWILIO_SID,
        "carrier_lookup_token": TWILIO_TOKEN,
        "carrier_lookup_timeout_s": 0.5,
        "carrier_lookup_retries": 1,
    }
    photo: dict[str, Any] = {"port": 0, "wait_ms": 5000, "check_workers": 1}
    helpdesk: dict[str, Any] = {"port": 0, "password_memory_kib": 64, "password_passes": 1}
    for name, value in overrides.items():
        if name in _PLATFORM_FIELDS:
            platform[name] = value
        elif name.startswith("photo_"):
            photo[name.removeprefix("photo_")] = value
        elif name.startswith("helpdesk_"):
            helpdesk[name.removeprefix("helpdesk_")] = value
        else:
            phone[name.removeprefix("phone_")] = value
    groups = {
        "phone": PhoneSettings(**phone),
        "photo": PhotoSettings(**photo),
        "helpdesk": HelpdeskSettings(**helpdesk),
    }
    return Settings(PlatformSettings(**platform), groups)


@dataclass
class ServiceStack:
    """A running service (its gateway, and its processors unless left out) with a client at its gateway's root. Each
    service's stack (`tests/<service>_stack.py`) adds the requests its users send."""

    service: ClassVar[Service]
    settings: Settings
    db: Database
    base_url: str
    client: httpx.AsyncClient
    platform: bootstrap.Platform

    async def wait_for_processors(self) -> None:
        """Return once the processors answer: their consumer group takes a few seconds to join."""
        raise NotImplementedError


S = TypeVar("S", bound=ServiceStack)


class running_stack(Generic[S]):
    """The service of `kind` (a `ServiceStack`), exactly as `signalyard up` wires it, on `broker_bootstrap`: its
    gateway served by uvicorn on a socket bound here, and its processors unless `with_processor=False`."""

    def __init__(
        self, settings: Settings, broker_bootstrap: str, kind: type[S], *, with_processor: bool = True
    ) -> None:
        self.settings = settings
        self.bootstrap = broker_bootstrap
        self.kind = kind
        self.with_processor = with_processor

    async def __aenter__(self) -> S:
        import uvicorn

        service = self.kind.service
        async with AsyncExitStack() as stack:
            port = service.port(self.settings.services[service.name])
            listening = stack.enter_context(bootstrap.listen("127.0.0.1", port, "the test's port"))
            port = listening.getsockname()[1]
            group = dataclasses.replace(self.settings.services[service.name], port=port)
            settings = dataclasses.replace(self.settings, services={**self.settings.services, service.name: group})

            topics = topics_of([service], settings.platform.topic_prefix)
            p = await stack.enter_async_context(
                bootstrap.platform(settings.platform, topics, bootstrap=self.bootstrap, upgrade=True)
            )
            app = service.gateway(p, group)
            await p.broker.start()
            background = service.processors(p, group) if self.with_processor else []
            await p.consume()  # as `signalyard processors` does: its consumer groups joined together
            server = bootstrap.Server(uvicorn.Config(app, log_config=None, access_log=False))
            serving = asyncio.create_task(server.serve(sockets=[listening]))
            stack.push_async_callback(_stop, server, serving)
            sweeping = bootstrap.run_background(background)
            stack.push_async_callback(_cancel, sweeping)
            while not server.started:
                if serving.done():
                    await serving  # uvicorn could not start: say why
                    raise RuntimeError("the gateway stopped before it started")
                await asyncio.sleep(0.02)
            base_url = f"http://127.0.0.1:{port}"
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=base_url, timeout=30, limits=KEEP_ALIVE_BELOW_THE_SERVER_S, verify=tls_context()
                )
            )
            running = self.kind(settings, p.db, base_url, client, p)
            if self.with_processor:
                await running.wait_for_processors()
            self._exit = stack.pop_all()
        return running

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self._exit.__aexit__(kind, error, traceback)


class SharedStacks:
    """This worker's shared stacks (`SHARED_STACKS`): each starts for the first test that uses it and stops after the
    last one, in collection order, instead of polling the broker idle (a fifth of a core with the broker's share) until
    the session ends. One asked for again after it stopped (tests run out of order) starts again."""

    def __init__(self, last_users: dict[str, pytest.Item]) -> None:
        self.last_users = last_users
        self.running: dict[str, tuple[running_stack[Any], ServiceStack]] = {}

    async def use(self, request: pytest.FixtureRequest, start: Callable[[], running_stack[S]]) -> S:
        """The stack of the fixture `request` is for; `start()` says how to start it."""
        name = self._name(request)
        if name not in self.running:
            starting = start()
            self.running[name] = (starting, await starting.__aenter__())
        starting, running = self.running[name]
        assert isinstance(running, starting.kind)
        return running

    async def done(self, request: pytest.FixtureRequest) -> None:
        """After each test: stop the stack if no later test uses it."""
        name = self._name(request)
        if self.last_users.get(name) is request.node:
            await self._stop(name)

    async def stop_all(self) -> None:
        for name in list(self.running):
            await self._stop(name)

    def _name(self, request: pytest.FixtureRequest) -> str:
        return f"{request.fixturename}-{request.node.callspec.params['database_url']}"

    async def _stop(self, name: str) -> None:
        starting, _ = self.running.pop(name)
        await starting.__aexit__(None, None, None)


@pytest.fixture(scope="session")
async def shared_stacks(request: pytest.FixtureRequest, broker_bootstrap: str) -> AsyncIterator[SharedStacks]:
    stacks = SharedStacks(request.config.stash.get(LAST_USERS, {}))
    yield stacks
    await stacks.stop_all()


async def _stop(server: bootstrap.Server, serving: asyncio.Task[None]) -> None:
    server.should_exit = True
    await serving


async def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
