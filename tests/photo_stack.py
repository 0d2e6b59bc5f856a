"""The photo test stack: a running photo gateway and processors, customers and keys, and requests as users send them;
its fixture (`photo_stack`) is registered by the root conftest."""

from __future__ import annotations

import asyncio
import base64
import io
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
import pytest
from PIL import Image
from sqlalchemy.engine import Connection

from signalyard.registry import photo
from signalyard.service import Service
from storage.photo import customers
from tests.conftest import ServiceStack, SharedStacks, running_stack, stack_settings
from tests.peers.receiver import WebhookReceiver
from topics.photo import PhotoTopics


@dataclass
class CustomerKeys:
    id: str
    test_key: str
    live_key: str


def jpeg(width: int = 600, height: int = 600, colour: tuple[int, int, int] = (240, 240, 240)) -> bytes:
    """A plain image (no face): enough for everything but the checks themselves."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "JPEG", quality=85)
    return out.getvalue()


@dataclass
class PhotoStack(ServiceStack):
    """A running photo gateway and processors on the session broker, with a client at the host root."""

    service: ClassVar[Service] = photo.SERVICE

    @property
    def topics(self) -> PhotoTopics:
        return PhotoTopics(self.settings.platform.topic_prefix)

    async def new_customer(
        self, *, plan: str = "starter", monthly_cap: int | None = None, subscription_active: bool = True
    ) -> CustomerKeys:
        def create(connection: Connection) -> CustomerKeys:
            customer_id = customers.create_customer(
                connection, "test", plan=plan, monthly_cap=monthly_cap, subscription_active=subscription_active
            )
            _, test_key = customers.create_key(connection, customer_id, "test", name="sandbox")
            _, live_key = customers.create_key(connection, customer_id, "live", name="live")
            return CustomerKeys(customer_id, test_key, live_key)

        return await self.db.write(create)

    async def verify(
        self,
        key: str | None,
        image: bytes,
        policy: str = "profile_photo",
        *,
        idempotency_key: str | None = None,
        as_json: bool = False,
        metadata: dict[str, Any] | None = None,
        filename: str = "photo.jpg",
        declared_type: str = "image/jpeg",
    ) -> httpx.Response:
        headers = {"X-API-Key": key} if key is not None else {}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        if as_json:
            body: dict[str, Any] = {"image": base64.b64encode(image).decode(), "policy": policy}
            if metadata is not None:
                body["metadata"] = metadata
            return await self.client.post("/v1/verify", json=body, headers=headers)
        return await self.client.post(
            "/v1/verify",
            files={"image": (filename, image, declared_type)},
            data={"policy": policy},
            headers=headers,
        )

    async def subscribe(self, key: str, receiver: WebhookReceiver, events: list[str]) -> str:
        """A new webhook endpoint of the key's account at a new path of `receiver`, which checks signatures."""
        path = receiver.new_path()
        hook = await self.call(key, "POST", "/api/v1/webhooks", json={"url": receiver.url(path), "events": events})
        assert hook.status_code == 201, hook.text
        receiver.expect_secret(path, hook.json()["signing_secret"])
        return path

    async def call(self, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-API-Key": key} if key is not None else {}
        return await self.client.request(method, path, headers=headers, **kwargs)

    async def wait_for_processors(self) -> None:
        """The processors' consumer group takes a few seconds to join; a warm-up verification tells when it has."""

        def create(connection: Connection) -> str:
            customer_id = customers.create_customer(connection, "warm-up")
            return customers.create_key(connection, customer_id, "test", name="warm-up")[1]

        key = await self.db.write(create)
        image = jpeg()
        for _ in range(60):
            response = await self.verify(key, image, idempotency_key=f"warm-up-{uuid.uuid4()}", filename="warm-up.jpg")
            if response.status_code == 200:
                return
            await asyncio.sleep(0.5)
        raise RuntimeError("the photo processor never answered")


@pytest.fixture
async def photo_stack(
    request: pytest.FixtureRequest,
    shared_stacks: SharedStacks,
    broker_bootstrap: str,
    database_url: str,
    receiver: WebhookReceiver,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[PhotoStack]:
    """The photo stack on the session's database, shared by the tests that use it (`SharedStacks`)."""

    def start() -> running_stack[PhotoStack]:
        settings = stack_settings(
            tmp_path_factory.mktemp("photo"),
            database_url,
            None,
            webhook_allow_private_targets=True,
            webhook_ca_bundle=str(receiver.ca_bundle),
        )
        return running_stack(settings, broker_bootstrap, PhotoStack)

    yield await shared_stacks.use(request, start)
    await shared_stacks.done(request)
