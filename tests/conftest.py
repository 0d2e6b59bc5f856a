"""Shared fixtures: one embedded broker per session, and a whole phone stack per database under test."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import structlog
from sqlalchemy.engine import Connection, make_url

from signalyard import bootstrap, logs
from signalyard.embedded_broker import EmbeddedBroker, free_port
from signalyard.registry import phone, photo
from signalyard.registry.phone import PhoneSettings
from signalyard.registry.photo import PhotoSettings
from signalyard.service import Service, topics_of
from signalyard.settings import PlatformSettings, Settings
from storage.common.db import Database
from storage.phone import tenants
from tests.peers.receiver import WebhookReceiver
from tests.peers.s3 import S3Server
from tests.peers.twilio import TwilioLookupServer
from tests.photo_stack import PhotoStack, wait_for_photo_processor
from tests.processes import descendants_of
from topics.phone import PhoneTopics

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
TWILIO_SID = "AC" + "0" * 32
TWILIO_TOKEN = "test-auth-token"


@pytest.fixture(scope="session")
def broker_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    broker = EmbeddedBroker(log_path=tmp_path_factory.mktemp("broker") / "broker.log")
    yield broker.start()
    broker.stop()


@pytest.fixture(scope="session")
def twilio() -> Iterator[TwilioLookupServer]:
    with TwilioLookupServer(account_sid=TWILIO_SID, auth_token=TWILIO_TOKEN) as server:
        yield server


@pytest.fixture(scope="session", params=DATABASES)
async def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A fresh database per session: a SQLite file, or a new PostgreSQL database dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'signalyard.db'}"
        return
    async with fresh_postgres_database(PG_URL or "") as url:
        yield url


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


def stack_settings(data_dir: Path, database_url: str, twilio: TwilioLookupServer | None, **overrides: Any) -> Settings:
    """Settings of a test stack; `overrides` name platform fields, photo fields with `photo_`, or phone fields with
    or without `phone_`."""
    platform: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "topic_prefix": f"t{uuid.uuid4().hex[:8]}.",
        "topic_partitions": 4,
        "sweep_after_s": 30,
        "sweep_every_s": 1,
    }
    phone: dict[str, Any] = {
        "port": free_port(),
        "wait_ms": 2000,
        "rate_limit": "1000/second",
        "sandbox_slow_ms": 2500,
        "carrier_lookup_url": twilio.base_url if twilio else "http://127.0.0.1:9",
        "carrier_lookup_sid": TWILIO_SID,
        "carrier_lookup_token": TWILIO_TOKEN,
        "carrier_lookup_timeout_s": 0.5,
        "carrier_lookup_retries": 1,
    }
    photo: dict[str, Any] = {"port": free_port(), "wait_ms": 5000, "check_workers": 1}
    for name, value in overrides.items():
        if name in _PLATFORM_FIELDS:
            platform[name] = value
        elif name.startswith("photo_"):
            photo[name.removeprefix("photo_")] = value
        else:
            phone[name.removeprefix("phone_")] = value
    return Settings(PlatformSettings(**platform), {"phone": PhoneSettings(**phone), "photo": PhotoSettings(**photo)})


@dataclass
class TenantKeys:
    id: str
    test_key: str
    live_key: str


@dataclass
class Stack:
    """A running phone gateway and processor on the session broker, with a client pointed at its /v1."""

    settings: Settings
    db: Database
    base_url: str
    client: httpx.AsyncClient
    platform: bootstrap.Platform

    @property
    def topics(self) -> PhoneTopics:
        return PhoneTopics(self.settings.platform.topic_prefix)

    async def new_tenant(
        self, *, scopes: list[str] | None = None, skus: list[str] | None = None, spend_cap: int | None = None
    ) -> TenantKeys:
        def create(connection: Connection) -> TenantKeys:
            tenant_id = tenants.create_tenant(connection, "test", skus=skus, spend_cap_microdollars=spend_cap)
            _, test_key = tenants.create_key(connection, tenant_id, "test", scopes)
            _, live_key = tenants.create_key(connection, tenant_id, "live", scopes)
            return TenantKeys(tenant_id, test_key, live_key)

        return await self.db.write(create)

    async def verify(
        self, key: str, body: Any, *, idempotency_key: str | None = "auto", **headers: str
    ) -> httpx.Response:
        sent = {"Authorization": f"Bearer {key}", **headers}
        if idempotency_key == "auto":
            idempotency_key = str(uuid.uuid4())
        if idempotency_key is not None:
            sent["Idempotency-Key"] = idempotency_key
        return await self.client.post("/v1/verify", json=body, headers=sent)

    async def get(self, key: str, path: str, **params: str) -> httpx.Response:
        return await self.client.get(path, headers={"Authorization": f"Bearer {key}"}, params=params)

    async def settle(self, key: str, request_id: str, timeout_s: float = 15) -> httpx.Response:
        """Poll GET /requests/{id} until it is no longer pending."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            response = await self.get(key, f"/v1/requests/{request_id}")
            if response.status_code != 202 or asyncio.get_running_loop().time() > deadline:
                return response
            await asyncio.sleep(0.1)


@pytest.fixture(scope="session")
async def stack(
    broker_bootstrap: str, database_url: str, twilio: TwilioLookupServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    settings = stack_settings(tmp_path_factory.mktemp("data"), database_url, twilio)
    async with running_stack(settings, broker_bootstrap) as running:
        yield running


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


@pytest.fixture(scope="session")
async def photo_stack(
    broker_bootstrap: str, database_url: str, receiver: WebhookReceiver, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[PhotoStack]:
    settings = stack_settings(
        tmp_path_factory.mktemp("photo"),
        database_url,
        None,
        webhook_allow_private_targets=True,
        webhook_ca_bundle=str(receiver.ca_bundle),
    )
    async with running_stack(settings, broker_bootstrap, service=photo.SERVICE) as running:
        yield running


@pytest.fixture
async def gateway_only(
    broker_bootstrap: str, database_url: str, tmp_path: Path
) -> AsyncIterator[Callable[..., AbstractAsyncContextManager[Stack]]]:
    """A factory of extra phone gateways (no processor) on the session's database, with settings of the test's own:
    `async with gateway_only(phone_rate_limit="2/minute") as strict: ...`. Their requests stay pending."""

    def start(**overrides: Any) -> AbstractAsyncContextManager[Stack]:
        settings = stack_settings(tmp_path, database_url, None, phone_wait_ms=100, **overrides)
        return running_stack(settings, broker_bootstrap, with_processor=False)

    return start


class running_stack:
    """A service's gateway (served by uvicorn on a free port) and processors, exactly as `signalyard up` wires them;
    phone by default, `service=photo.SERVICE` for photo (entered as a `PhotoStack`)."""

    def __init__(
        self,
        settings: Settings,
        broker_bootstrap: str,
        *,
        with_processor: bool = True,
        service: Service = phone.SERVICE,
    ) -> None:
        self.settings = settings
        self.bootstrap = broker_bootstrap
        self.with_processor = with_processor
        self.service = service

    async def __aenter__(self) -> Any:
        import uvicorn

        group = self.settings.services[self.service.name]
        topics = topics_of([self.service], self.settings.platform.topic_prefix)
        self._platform = bootstrap.platform(self.settings.platform, topics, bootstrap=self.bootstrap, upgrade=True)
        p = await self._platform.__aenter__()
        app = self.service.gateway(p, group)
        await p.broker.start()
        self.background = self.service.processors(p, group) if self.with_processor else []
        await p.consume()  # as `signalyard processors` does: its consumer groups joined together
        port = self.service.port(group)
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
        self._server = bootstrap.Server(config)
        self._serving = asyncio.create_task(self._server.serve())
        self._sweeping = bootstrap.run_background(self.background)
        while not self._server.started:
            await asyncio.sleep(0.02)
        base_url = f"http://127.0.0.1:{port}"
        self._client = httpx.AsyncClient(base_url=base_url, timeout=30)
        if self.service.name == "photo":
            if self.with_processor:
                await wait_for_photo_processor(self._client, p)
            return PhotoStack(self.settings, p.db, base_url, self._client, p)
        if self.with_processor:
            await _wait_for_processor(self._client, p)
        return Stack(self.settings, p.db, base_url, self._client, p)

    async def __aexit__(self, *exc: object) -> None:
        for task in self._sweeping:
            task.cancel()
        await asyncio.gather(*self._sweeping, return_exceptions=True)
        await self._client.aclose()
        self._server.should_exit = True
        await self._serving
        await self._platform.__aexit__(*exc)


async def _wait_for_processor(client: httpx.AsyncClient, p: bootstrap.Platform) -> None:
    """The processors' consumer group takes a few seconds to join; a warm-up check tells when it has."""
    _, key = await p.db.write(
        lambda connection: tenants.create_key(connection, tenants.create_tenant(connection, "warm-up"), "test")
    )
    for attempt in range(60):
        response = await client.post(
            "/v1/verify",
            json={"phone": "+12025550100", "name": "Warm Up", "subject_type": "person"},
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": f"warm-up-{attempt}"},
        )
        if response.status_code == 200:
            return
        if response.status_code == 409:  # the previous attempt is still pending: give it time
            await asyncio.sleep(0.5)
    raise RuntimeError("the phone processor never answered")
