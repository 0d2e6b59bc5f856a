"""Section 2.2 billing rules, checked on the result a user sees and on the ledger rows behind it."""

from __future__ import annotations

import collections
from datetime import timedelta

from sqlalchemy import update

from storage.phone import requests, tenants
from storage.phone.models import PhoneRequest
from tests.contract.phone.helpers import (
    FREE_RECHECK,
    PRICE,
    assert_error,
    assert_failure,
    assert_result,
    billable_total,
    ledger,
    person,
    sandbox,
)
from tests.peers.twilio import TwilioLookupServer
from tests.phone_stack import Stack, TenantKeys


def assert_billable(result: dict, price: int = PRICE) -> None:
    assert result["billing"] == {
        "disposition": "billable",
        "sku": "core_phone",
        "unit_price_microdollars": price,
        "cache_hit": False,
    }
    assert FREE_RECHECK not in result["warnings"]
    assert result["provenance"][0]["cache_hit"] is False


def assert_not_billable(result: dict) -> None:
    assert result["billing"]["disposition"] == "not_billable"
    assert result["billing"]["sku"] == "core_phone"


async def test_completed_check_is_billable_at_the_default_price(stack: Stack, tenant: TenantKeys) -> None:
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    assert result["result_state"] == "completed"
    assert_billable(result)
    rows = await ledger(stack, tenant.id)
    assert [(row.request_id, row.disposition, row.unit_price_microdollars) for row in rows] == [
        (result["request_id"], "billable", PRICE)
    ]


async def test_completed_check_without_caller_id_name_is_billable(stack: Stack, tenant: TenantKeys) -> None:
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0104"))))
    assert result["result_state"] == "completed"
    assert result["caller_id"]["state"] == "unavailable"
    assert result["name_match"]["state"] == "unavailable"
    assert_billable(result)
    assert await billable_total(stack, tenant.id) == PRICE


async def test_unavailable_number_is_not_billable(stack: Stack, tenant: TenantKeys) -> None:
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0190"))))
    assert result["result_state"] == "unavailable"
    assert_not_billable(result)
    assert await billable_total(stack, tenant.id) == 0


async def test_error_result_is_not_billable(stack: Stack, tenant: TenantKeys) -> None:
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0191"))))
    assert result["result_state"] == "error"
    assert_not_billable(result)
    assert await billable_total(stack, tenant.id) == 0


async def test_provider_failure_is_not_billable(stack: Stack, tenant: TenantKeys) -> None:
    error = assert_error(
        await stack.verify(tenant.test_key, person(phone=sandbox("0192"))), 502, "provider_unavailable"
    )
    assert "request_id" in error, error
    stored = await stack.get(tenant.test_key, f"/v1/requests/{error['request_id']}")
    assert stored.status_code == 200, stored.text
    assert_failure(stored.json(), status="failed", code="provider_unavailable", disposition="not_billable")
    assert stored.json()["request_id"] == error["request_id"]
    assert [row for row in await ledger(stack, tenant.id) if row.disposition == "billable"] == []


async def test_recheck_of_the_same_number_within_24_hours_is_free(stack: Stack, tenant: TenantKeys) -> None:
    first = assert_result(await stack.verify(tenant.test_key, person(phone="+14155550100")))
    again = assert_result(await stack.verify(tenant.test_key, person(phone="(415) 555-0100", name="Jane Smith")))
    assert_billable(first)
    assert again["request_id"] != first["request_id"]
    assert FREE_RECHECK in again["warnings"]
    assert again["billing"]["disposition"] == "not_billable"
    assert again["billing"]["cache_hit"] is True
    assert again["provenance"][0]["cache_hit"] is True
    assert again["result_state"] == "completed"
    assert again["subject"]["supplied_name"] == "Jane Smith"
    assert again["name_match"]["state"] == "partial_match"
    rows = {row.request_id: row for row in await ledger(stack, tenant.id)}
    assert rows[first["request_id"]].disposition == "billable"
    assert rows[again["request_id"]].disposition == "not_billable"
    assert await billable_total(stack, tenant.id) == PRICE


async def age_billable_check(stack: Stack, request_id: str, hours: float) -> None:
    """Test data set-up: make an earlier billable check `hours` older than it is."""
    row = await stack.db.read(requests.get_request, request_id)
    assert row is not None
    assert row.billable_at is not None
    older = (
        update(PhoneRequest)
        .where(PhoneRequest.id == request_id)
        .values(billable_at=row.billable_at - timedelta(hours=hours))
    )
    await stack.db.write(lambda connection: connection.execute(older))


async def test_recheck_after_24_hours_is_billable_again(stack: Stack, tenant: TenantKeys) -> None:
    first = assert_result(await stack.verify(tenant.test_key, person()))
    await age_billable_check(stack, first["request_id"], hours=25)
    again = assert_result(await stack.verify(tenant.test_key, person()))
    assert_billable(again)
    assert FREE_RECHECK not in again["warnings"]
    assert await billable_total(stack, tenant.id) == 2 * PRICE


async def test_recheck_23_hours_later_is_still_free(stack: Stack, tenant: TenantKeys) -> None:
    first = assert_result(await stack.verify(tenant.test_key, person()))
    await age_billable_check(stack, first["request_id"], hours=23)
    again = assert_result(await stack.verify(tenant.test_key, person()))
    assert FREE_RECHECK in again["warnings"]
    assert again["billing"]["disposition"] == "not_billable"
    assert await billable_total(stack, tenant.id) == PRICE


async def test_check_of_the_same_number_in_the_other_environment_is_not_a_free_recheck(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number)
    sandboxed = assert_result(await stack.verify(tenant.test_key, person(phone=number)))
    live = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert_billable(sandboxed)
    assert_billable(live)
    assert twilio.count(number) == 1


async def test_check_of_the_same_number_by_another_tenant_is_not_a_free_recheck(stack: Stack) -> None:
    first, other = await stack.new_tenant(), await stack.new_tenant()
    assert_billable(assert_result(await stack.verify(first.test_key, person())))
    assert_billable(assert_result(await stack.verify(other.test_key, person())))


async def test_recheck_after_a_non_billable_result_is_not_a_free_recheck(stack: Stack, tenant: TenantKeys) -> None:
    assert_not_billable(assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0191")))))
    again = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0191"))))
    assert FREE_RECHECK not in again["warnings"]
    assert again["billing"]["cache_hit"] is False


async def test_tenant_price_is_the_unit_price(stack: Stack, tenant: TenantKeys) -> None:
    await stack.db.write(tenants.set_price, tenant.id, "core_phone", 12345)
    result = assert_result(await stack.verify(tenant.test_key, person()))
    assert_billable(result, price=12345)
    rows = await ledger(stack, tenant.id)
    assert [(row.disposition, row.unit_price_microdollars) for row in rows] == [("billable", 12345)]


async def test_every_finished_request_has_exactly_one_ledger_row(stack: Stack, tenant: TenantKeys) -> None:
    request_ids = []
    for phone in (sandbox("0100"), sandbox("0100"), sandbox("0104"), sandbox("0190"), sandbox("0191")):
        result = assert_result(await stack.verify(tenant.test_key, person(phone=phone)))
        request_ids.append(result["request_id"])
    rows = await ledger(stack, tenant.id)
    assert collections.Counter(row.request_id for row in rows) == collections.Counter(request_ids)
    assert [row.disposition for row in rows].count("billable") == 2
    assert await billable_total(stack, tenant.id) == 2 * PRICE
