"""The phone test stack: a running phone gateway and processors, tenants and keys, and requests as users send them;
its fixtures (`stack`, `gateway_only`) are registered by the root conftest."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from sqlalchemy.engine import Connection

from signalyard.registry import phone
from signalyard.service import Service
from storage.phone import tenants
from tests.conftest import ServiceStack, SharedStacks, running_stack, stack_settings
from tests.peers.twilio import TwilioLookupServer
from topics.phone import PhoneTopics


@dataclass
class TenantKeys:
    id: str
    test_key: str
    live_key: str


@dataclass
class Stack(ServiceStack):
    """A running phone gateway and processors on the session broker, with a client at the host root."""

    service: ClassVar[Service] = phone.SERVICE

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

    async def wait_for_processors(self) -> None:
        """The processors' consumer group takes a few seconds to join; a warm-up check tells when it has."""
        _, key = await self.db.write(
            lambda connection: tenants.create_key(connection, tenants.create_tenant(connection, "warm-up"), "test")
        )
        for attempt in range(60):
            response = await self.verify(
                key,
                {"phone": "+12025550100", "name": "Warm Up", "subject_type": "person"},
                idempotency_key=f"warm-up-{attempt}",
            )
            if response.status_code == 200:
                return
            if response.status_code == 409:  # the previous attempt is still pending: give it time
                await asyncio.sleep(0.5)
        raise RuntimeError("the phone processor never answered")


GatewayOnly = Callable[..., AbstractAsyncContextManager[Stack]]
"""The `gateway_only` fixture: extra gateways without a processor (their requests stay pending)."""


@pytest.fixture
async def stack(
    request: pytest.FixtureRequest,
    shared_stacks: SharedStacks,
    broker_bootstrap: str,
    database_url: str,
    twilio: TwilioLookupServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Stack]:
    """The phone stack on the session's database, shared by the tests that use it (`SharedStacks`)."""

    def start() -> running_stack[Stack]:
        settings = stack_settings(tmp_path_factory.mktemp("data"), database_url, twilio)
        return running_stack(settings, broker_bootstrap, Stack)

    yield await shared_stacks.use(request, start)
    await shared_stacks.done(request)


@pytest.fixture
def gateway_only(broker_bootstrap: str, database_url: str, tmp_path: Path) -> GatewayOnly:
    """A factory of extra phone gateways (no processor) on the session's database, with settings of the test's own:
    `async with gateway_only(phone_rate_limit="2/minute") as strict: ...`. Their requests stay pending."""

    def start(**overrides: Any) -> AbstractAsyncContextManager[Stack]:
        settings = stack_settings(tmp_path, database_url, None, phone_wait_ms=100, **overrides)
        return running_stack(settings, broker_bootstrap, Stack, with_processor=False)

    return start
