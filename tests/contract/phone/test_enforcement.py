"""Sections 4.1, 7 and 8: the rate limit per key and the tenant spend cap answer 429 with Retry-After."""

from __future__ import annotations

import asyncio
import os

from storage.phone import tenants
from tests.contract.phone.helpers import (
    PRICE,
    assert_error,
    assert_pending,
    assert_result,
    assert_retry_after,
    billable_total,
    ledger,
    person,
    sandbox,
)
from tests.phone_stack import GatewayOnly, Stack, TenantKeys


async def test_rate_limit_per_key_is_429_rate_limited_with_retry_after(
    stack: Stack, gateway_only: GatewayOnly, tenant: TenantKeys
) -> None:
    async with gateway_only(phone_rate_limit="3/minute") as strict:
        for last4 in ("0100", "0101", "0102"):
            assert_pending(await strict.verify(tenant.test_key, person(phone=sandbox(last4))))
        response = await strict.verify(tenant.test_key, person(phone=sandbox("0104")))
        assert_error(response, 429, "rate_limited")
        assert assert_retry_after(response) <= 60


async def test_rate_limit_of_one_key_does_not_limit_another_key_of_the_same_tenant(
    stack: Stack, gateway_only: GatewayOnly, tenant: TenantKeys
) -> None:
    _, second_key = await stack.db.write(tenants.create_key, tenant.id, "test")
    async with gateway_only(phone_rate_limit="3/minute") as strict:
        for last4 in ("0100", "0101", "0102"):
            assert_pending(await strict.verify(tenant.test_key, person(phone=sandbox(last4))))
        assert_error(await strict.verify(tenant.test_key, person(phone=sandbox("0104"))), 429, "rate_limited")
        assert_pending(await strict.verify(second_key, person(phone=sandbox("0104"))))


async def test_unreachable_enforcement_store_is_503_enforcement_unavailable(
    stack: Stack, gateway_only: GatewayOnly, tenant: TenantKeys
) -> None:
    async with gateway_only(redis_url="redis://127.0.0.1:1") as unenforced:
        response = await unenforced.verify(tenant.test_key, person())
        assert_error(response, 503, "enforcement_unavailable")
    assert await ledger(stack, tenant.id) == []


async def test_spend_cap_reached_is_429_spend_cap_reached_with_retry_after(stack: Stack) -> None:
    tenant = await stack.new_tenant(spend_cap=PRICE)
    first = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    assert first["billing"]["disposition"] == "billable"
    response = await stack.verify(tenant.test_key, person(phone=sandbox("0101")))
    assert_error(response, 429, "spend_cap_reached")
    assert_retry_after(response)
    assert await billable_total(stack, tenant.id) == PRICE


async def test_concurrent_checks_under_a_one_check_cap_bill_exactly_one(stack: Stack) -> None:
    tenant = await stack.new_tenant(spend_cap=PRICE)
    numbers = [sandbox(last4) for last4 in ("0100", "0101", "0102", "0104", "0110", "0112")]
    responses = await asyncio.gather(*(stack.verify(tenant.test_key, person(phone=number)) for number in numbers))
    answered = sorted(responses, key=lambda response: response.status_code)
    assert [response.status_code for response in answered] == [200] + [429] * 5, [r.text for r in answered]
    assert assert_result(answered[0])["billing"]["disposition"] == "billable"
    for refused in answered[1:]:
        assert_error(refused, 429, "spend_cap_reached")
        assert_retry_after(refused)
    assert [row.disposition for row in await ledger(stack, tenant.id)].count("billable") == 1
    assert await billable_total(stack, tenant.id) <= PRICE


REDIS_URL = os.environ.get("SIGNALYARD_TEST_REDIS_URL")
if REDIS_URL:  # where CI runs there is a Redis; a fresh machine has none, and then there is nothing to test here

    async def test_rate_limit_per_key_is_shared_by_gateways_through_redis(
        stack: Stack, gateway_only: GatewayOnly
    ) -> None:
        tenant = await stack.new_tenant()
        shared = {"phone_rate_limit": "3/minute", "redis_url": REDIS_URL}
        async with gateway_only(**shared) as first, gateway_only(**shared) as second:
            assert_pending(await first.verify(tenant.test_key, person(phone=sandbox("0100"))))
            assert_pending(await second.verify(tenant.test_key, person(phone=sandbox("0101"))))
            assert_pending(await first.verify(tenant.test_key, person(phone=sandbox("0102"))))
            response = await second.verify(tenant.test_key, person(phone=sandbox("0104")))
            assert_error(response, 429, "rate_limited")
            assert assert_retry_after(response) <= 60
