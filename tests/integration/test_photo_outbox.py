"""The photo outbox as callers meet it: a verification whose work order was lost is published again by the processors'
sweeper and completes; a work order delivered twice completes the verification once (one `verification.completed`
delivery, one unit of monthly usage).

A gateway started alone on a topic prefix of its own, sharing the session stack's data directory (so its processors
find the images), stands for a gateway whose publish never reached the processors: its verifications stay pending,
stored exactly as a verify call stores them. No test starts processors of its own: on the embedded broker, a second
member of the processors' consumer group joining and leaving beside the session's left later members without work."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import update

from storage.photo import verifications
from tests.conftest import running_stack, stack_settings
from tests.helpers import until
from tests.peers.receiver import WebhookReceiver
from tests.photo_stack import PhotoStack, jpeg
from topics.photo import Environment, VerificationRequested, partition_key


def gateway_alone(stack: PhotoStack, broker_bootstrap: str) -> running_stack[PhotoStack]:
    """A photo gateway beside `stack` (its database and data directory) with no processors on a topic prefix of its
    own: a verify call answers 503 and stays pending."""
    platform = stack.settings.platform
    prefix = f"t{uuid.uuid4().hex[:8]}."
    settings = stack_settings(platform.data_dir, platform.database_url, None, topic_prefix=prefix, photo_wait_ms=100)
    return running_stack(settings, broker_bootstrap, PhotoStack, with_processor=False)


async def pending(gateway: PhotoStack, key: str, idempotency_key: str) -> str:
    response = await gateway.verify(key, jpeg(), "icao", idempotency_key=idempotency_key)
    assert response.status_code == 503, response.text
    return response.json()["verification_id"]


async def published_ago(stack: PhotoStack, verification_id: str, ago: timedelta) -> None:
    moved = (
        update(verifications.VERIFICATIONS)
        .where(verifications.VERIFICATIONS.c.id == verification_id)
        .values(published_at=datetime.now(UTC) - ago)
    )
    await stack.db.write(lambda connection: connection.execute(moved))


async def settled(stack: PhotoStack, key: str, verification_id: str, timeout_s: float = 30) -> httpx.Response:
    """GET /api/v1/verifications/{id} once it is no longer pending."""

    async def decided() -> httpx.Response | None:
        response = await stack.call(key, "GET", f"/api/v1/verifications/{verification_id}")
        return None if response.json()["status"] == "pending" else response

    return await until(decided, f"verification {verification_id} no longer pending", timeout_s=timeout_s)


async def test_a_lost_work_order_is_published_again_by_the_sweeper(
    photo_stack: PhotoStack, broker_bootstrap: str
) -> None:
    """The session's processors sweep verifications pending longer than SIGNALYARD_SWEEP_AFTER_S (30 s there): the
    row's publish time is set back a minute, as if its publish had been lost then."""
    assert photo_stack.settings.platform.sweep_after_s == 30
    customer = await photo_stack.new_customer()
    async with gateway_alone(photo_stack, broker_bootstrap) as gateway:
        verification_id = await pending(gateway, customer.test_key, "lost-1")
        stored = await gateway.call(customer.test_key, "GET", f"/api/v1/verifications/{verification_id}")
        assert stored.json()["status"] == "pending"

        await published_ago(photo_stack, verification_id, timedelta(minutes=1))
        completed = await settled(photo_stack, customer.test_key, verification_id)
        assert completed.status_code == 200
        assert (completed.json()["status"], completed.json()["is_compliant"]) == ("completed", False)
        assert "no_face" in completed.json()["violation_reasons"]

        # The caller's retry with the same Idempotency-Key gets the verdict from the gateway that stored it.
        retried = await gateway.verify(customer.test_key, jpeg(), "icao", idempotency_key="lost-1")
        assert retried.status_code == 200
        assert retried.json() == completed.json() | {"image_url": retried.json()["image_url"]}


async def test_a_work_order_delivered_twice_completes_once(
    photo_stack: PhotoStack, receiver: WebhookReceiver, broker_bootstrap: str
) -> None:
    customer = await photo_stack.new_customer(monthly_cap=1)
    path = await photo_stack.subscribe(customer.live_key, receiver, ["verification.completed"])
    async with gateway_alone(photo_stack, broker_bootstrap) as gateway:
        twice = await pending(gateway, customer.live_key, "twice-1")
        after = await pending(gateway, customer.test_key, "after-1")

    def work_order(verification_id: str, environment: Environment) -> VerificationRequested:
        return VerificationRequested(
            verification_id=verification_id,
            customer_id=customer.id,
            environment=environment,
            policy="icao",
            image_key=f"photo/{customer.id}/{verification_id}",
        )

    # Both copies, then another verification's work order on the same partition: once it is done, so are they.
    requested, key = photo_stack.topics.requested, partition_key(twice)
    for message in (work_order(twice, "live"), work_order(twice, "live"), work_order(after, "test")):
        await photo_stack.platform.publish(message, requested, key)
    assert (await settled(photo_stack, customer.test_key, after)).json()["status"] == "completed"
    assert (await settled(photo_stack, customer.live_key, twice)).json()["status"] == "completed"

    deliveries = await receiver.wait_for(path, 2)
    assert sorted(delivery.json["data"]["id"] for delivery in deliveries) == sorted([twice, after])
    assert all(delivery.verified for delivery in deliveries)
    # The live verification used the cap of 1 once: a second one is refused, and the first is stored once.
    capped = await photo_stack.verify(customer.live_key, jpeg(), idempotency_key="twice-2")
    assert capped.status_code == 429
    assert capped.json()["error"].startswith("Monthly usage cap of 1 verifications reached")
    history = (await photo_stack.call(customer.live_key, "GET", "/api/v1/verifications")).json()["data"]
    assert [item["id"] for item in history] == [twice]
