"""Sections 5.6, 5.7, 7 and 8: per-key limits per minute and per hour on every route, the monthly cap (held under
concurrent requests), subscriptions; the order of checks (a full window before the body); a 429 or a 400 is never
processed or charged, and sandbox keys are free."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from storage.photo import customers
from storage.photo.models import Verification
from tests.conftest import running_stack, stack_settings
from tests.photo_stack import CustomerKeys, PhotoStack, jpeg


async def stored(stack: PhotoStack, customer_id: str) -> int:
    statement = select(func.count()).where(Verification.customer_id == customer_id)
    return await stack.db.read(lambda connection: connection.execute(statement).scalar_one())


async def used(stack: PhotoStack, customer_id: str) -> int:
    return await stack.db.read(customers.usage, customer_id, customers.month_of(datetime.now(UTC)))


async def key_id_of(stack: PhotoStack, key: str) -> str:
    listed = (await stack.call(key, "GET", "/api/v1/api-keys")).json()["data"]
    return next(item["id"] for item in listed if key.startswith(item["key_prefix"][:-1]))


@pytest.mark.parametrize(("per_minute", "per_hour"), [(2, 100), (100, 2)], ids=["minute", "hour"])
async def test_a_full_window_is_429_and_nothing_is_processed(photo_stack: PhotoStack, per_minute: int, per_hour: int):
    customer = await photo_stack.new_customer()
    key_id = await key_id_of(photo_stack, customer.live_key)
    await photo_stack.db.write(customers.set_key_limits, key_id, per_minute, per_hour)
    for shade in (1, 2):
        assert (await photo_stack.verify(customer.live_key, jpeg(colour=(shade,) * 3))).status_code == 200
    refused = await photo_stack.verify(customer.live_key, jpeg(colour=(3, 3, 3)))
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert "Rate limit" in refused.json()["error"]
    assert (await stored(photo_stack, customer.id), await used(photo_stack, customer.id)) == (2, 2)
    assert (await photo_stack.verify(customer.test_key, jpeg())).status_code == 200  # another key, its own budget


@pytest.mark.parametrize("route", ["/api/v1/webhooks", "/api/v1/api-keys", "/api/v1/verifications"])
@pytest.mark.parametrize(
    ("per_minute", "per_hour", "window", "period_s"), [(1, 100, "1 per 1 minute", 60), (100, 1, "1 per 1 hour", 3600)]
)
async def test_limits_apply_to_management_too(
    photo_stack: PhotoStack,
    customer: CustomerKeys,
    route: str,
    per_minute: int,
    per_hour: int,
    window: str,
    period_s: int,
) -> None:
    key_id = await key_id_of(photo_stack, customer.test_key)
    await photo_stack.db.write(customers.set_key_limits, key_id, per_minute, per_hour)
    before = time.time()
    assert (await photo_stack.call(customer.test_key, "GET", route)).status_code == 200
    response = await photo_stack.call(customer.test_key, "GET", route)
    elapsed = time.time() - before
    assert response.status_code == 429
    assert response.json() == {"error": f"Rate limit reached: {window} for this key"}
    # until the full window's first request leaves it: the rest of its period
    assert period_s - elapsed - 1 <= int(response.headers["retry-after"]) <= period_s


async def test_a_full_window_is_429_whatever_the_body(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    key_id = await key_id_of(photo_stack, customer.test_key)
    await photo_stack.db.write(customers.set_key_limits, key_id, 1, 100)
    assert (await photo_stack.verify(customer.test_key, jpeg())).status_code == 200
    headers = {"X-API-Key": customer.test_key, "Content-Type": "application/json"}
    response = await photo_stack.client.post("/v1/verify", content=b"{not json", headers=headers)
    assert response.status_code == 429
    assert response.json() == {"error": "Rate limit reached: 1 per 1 minute for this key"}


async def test_a_bad_body_is_never_stored_or_counted(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer(monthly_cap=1)
    for image, policy in ((jpeg(), "drivers_license"), (b"%PDF-1.7", "icao"), (b"", "icao")):
        assert (await photo_stack.verify(customer.live_key, image, policy)).status_code == 400
    history = await photo_stack.call(customer.live_key, "GET", "/api/v1/verifications")
    assert history.json()["data"] == []
    assert (await stored(photo_stack, customer.id), await used(photo_stack, customer.id)) == (0, 0)
    assert (await photo_stack.verify(customer.live_key, jpeg())).status_code == 200
    assert (await photo_stack.verify(customer.live_key, jpeg(colour=(5, 5, 5)))).status_code == 429  # cap of 1


async def test_keys_show_their_own_limits(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    key_id = await key_id_of(photo_stack, customer.live_key)
    await photo_stack.db.write(customers.set_key_limits, key_id, 250, 9000)
    listed = (await photo_stack.call(customer.test_key, "GET", "/api/v1/api-keys")).json()["data"]
    raised = next(item for item in listed if item["id"] == key_id)
    assert (raised["rate_limit_per_minute"], raised["rate_limit_per_hour"]) == (250, 9000)


async def test_the_monthly_cap_is_429_and_nothing_is_charged(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer(monthly_cap=2)
    for shade in (10, 20):
        assert (await photo_stack.verify(customer.live_key, jpeg(colour=(shade,) * 3))).status_code == 200
    refused = await photo_stack.verify(customer.live_key, jpeg(colour=(30, 30, 30)))
    assert refused.status_code == 429
    assert "Monthly usage cap of 2" in refused.json()["error"]
    now = datetime.now(UTC)
    next_month = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    assert abs(int(refused.headers["retry-after"]) - (next_month - now).total_seconds()) < 60
    assert (await stored(photo_stack, customer.id), await used(photo_stack, customer.id)) == (2, 2)


async def test_the_monthly_cap_holds_under_concurrent_requests(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer(monthly_cap=5)
    images = [jpeg(colour=(shade, 100, 100)) for shade in range(20)]
    answers = await asyncio.gather(*(photo_stack.verify(customer.live_key, image) for image in images))
    statuses = [answer.status_code for answer in answers]
    assert (statuses.count(200), statuses.count(429)) == (5, 15), statuses
    cap_reached = (
        "Monthly usage cap of 5 verifications reached; it resets at the start of next month (UTC) or when the plan "
        "is raised"
    )
    assert all(answer.json() == {"error": cap_reached} for answer in answers if answer.status_code == 429)
    late = await photo_stack.verify(customer.live_key, jpeg(colour=(200, 100, 100)))
    assert (late.status_code, late.json()) == (429, {"error": cap_reached})
    assert (await stored(photo_stack, customer.id), await used(photo_stack, customer.id)) == (5, 5)


async def test_a_replay_at_the_cap_returns_the_cached_result(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer(monthly_cap=1)
    first = await photo_stack.verify(customer.live_key, jpeg(), idempotency_key="at-cap")
    again = await photo_stack.verify(customer.live_key, jpeg(), idempotency_key="at-cap")
    assert (first.status_code, again.status_code) == (200, 200)
    assert first.json()["id"] == again.json()["id"]
    assert await used(photo_stack, customer.id) == 1


async def test_sandbox_keys_are_free_and_never_meet_the_cap(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer(monthly_cap=1)
    for shade in (1, 2, 3):
        assert (await photo_stack.verify(customer.test_key, jpeg(colour=(shade,) * 3))).status_code == 200
    assert await used(photo_stack, customer.id) == 0
    assert (await photo_stack.verify(customer.live_key, jpeg())).status_code == 200  # the cap is still whole


async def test_no_active_subscription_is_403_for_live_keys(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer(subscription_active=False)
    refused = await photo_stack.verify(customer.live_key, jpeg())
    assert refused.status_code == 403
    assert refused.json() == {"error": "This account has no active subscription"}
    assert await stored(photo_stack, customer.id) == 0
    assert (await photo_stack.verify(customer.test_key, jpeg())).status_code == 200
    await photo_stack.db.write(customers.update_customer, customer.id, subscription_active=True)
    assert (await photo_stack.verify(customer.live_key, jpeg())).status_code == 200


async def test_an_unreachable_rate_limit_store_is_503_and_nothing_is_processed(
    photo_stack: PhotoStack, customer: CustomerKeys, broker_bootstrap: str, tmp_path: Path
) -> None:
    """Limits fail closed: a gateway whose shared rate-limit store (Redis) is down refuses rather than guesses."""
    settings = stack_settings(
        tmp_path, photo_stack.settings.platform.database_url or "", None, redis_url="redis://127.0.0.1:1"
    )
    async with running_stack(settings, broker_bootstrap, PhotoStack, with_processor=False) as unlimited:
        for response in (
            await unlimited.verify(customer.live_key, jpeg()),
            await unlimited.call(customer.test_key, "GET", "/api/v1/api-keys"),
        ):
            assert (response.status_code, response.json()) == (
                503,
                {"error": "Rate limits cannot be checked right now; retry"},
            )
    assert (await stored(photo_stack, customer.id), await used(photo_stack, customer.id)) == (0, 0)
