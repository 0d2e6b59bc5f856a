"""Section 4.3: GET /usage sums the calling key's tenant and environment over inclusive UTC dates."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from sqlalchemy import update

from storage.phone.models import LedgerEntry
from tests.contract.phone.helpers import (
    PRICE,
    assert_error,
    assert_names_field,
    assert_result,
    assert_uuid,
    live_number,
    person,
    sandbox,
)
from tests.peers.twilio import TwilioLookupServer
from tests.phone_stack import Stack


def period(first: date, last: date) -> dict[str, str]:
    """How the gateway renders an inclusive period of UTC dates."""
    return {"from": f"{first.isoformat()}T00:00:00Z", "to": f"{last.isoformat()}T23:59:59.999999Z"}


def core_phone(usage: dict) -> dict:
    """The summary's `core_phone` entry (zeros when the period has none)."""
    entries = [entry for entry in usage["by_sku"] if entry["sku"] == "core_phone"]
    assert len(entries) <= 1, usage
    return (
        entries[0]
        if entries
        else {"sku": "core_phone", "billable_requests": 0, "cache_hits": 0, "amount_microdollars": 0}
    )


async def usage(stack: Stack, key: str, **params: str) -> dict:
    response = await stack.get(key, "/v1/usage", **params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"tenant_id", "environment", "period", "by_sku", "total_amount_microdollars"}, body
    assert_uuid(body["tenant_id"])
    assert set(body["period"]) == {"from", "to"}
    for entry in body["by_sku"]:
        assert set(entry) == {"sku", "billable_requests", "cache_hits", "amount_microdollars"}, entry
        assert all(isinstance(entry[field], int) for field in entry if field != "sku")
    assert body["total_amount_microdollars"] == sum(entry["amount_microdollars"] for entry in body["by_sku"])
    return body


async def move_ledger_row(stack: Stack, request_id: str, at: datetime) -> None:
    """Test data set-up: date a ledger row elsewhere in time."""
    moved = update(LedgerEntry).where(LedgerEntry.request_id == request_id).values(created_at=at)
    await stack.db.write(lambda connection: connection.execute(moved))


async def test_usage_defaults_to_the_current_month_up_to_today(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    today = datetime.now(UTC).date()
    body = await usage(stack, tenant.test_key)
    assert body["period"] == period(today.replace(day=1), today)
    assert body["tenant_id"] == tenant.id
    assert body["environment"] == "test"


async def test_usage_with_only_to_starts_on_the_first_of_that_month(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    body = await usage(stack, tenant.test_key, to="2026-02-14")
    assert body["period"] == period(date(2026, 2, 1), date(2026, 2, 14))


async def test_usage_with_only_from_ends_today(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    body = await usage(stack, tenant.test_key, **{"from": "2025-12-30"})
    assert body["period"] == period(date(2025, 12, 30), datetime.now(UTC).date())


async def test_usage_with_from_and_to_covers_exactly_those_dates(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    body = await usage(stack, tenant.test_key, **{"from": "2025-11-03", "to": "2026-01-31"})
    assert body["period"] == period(date(2025, 11, 3), date(2026, 1, 31))


async def test_usage_counts_billable_requests_cache_hits_and_amounts(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    for phone in (sandbox("0100"), sandbox("0100"), sandbox("0104"), sandbox("0190"), sandbox("0191")):
        assert_result(await stack.verify(tenant.test_key, person(phone=phone)))
    assert (await stack.verify(tenant.test_key, person(phone=sandbox("0192")))).status_code == 502
    body = await usage(stack, tenant.test_key)
    assert body["by_sku"] == [
        {"sku": "core_phone", "billable_requests": 2, "cache_hits": 1, "amount_microdollars": 2 * PRICE}
    ]
    assert body["total_amount_microdollars"] == 2 * PRICE


async def test_usage_dates_are_inclusive(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    today = datetime.now(UTC).date().isoformat()
    assert_result(await stack.verify(tenant.test_key, person()))
    body = await usage(stack, tenant.test_key, **{"from": today, "to": today})
    assert core_phone(body)["billable_requests"] == 1
    assert body["total_amount_microdollars"] == PRICE


async def test_usage_period_edges_are_utc_midnights(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    ids = []
    for phone in (sandbox("0100"), sandbox("0101"), sandbox("0102"), sandbox("0104")):
        ids.append(assert_result(await stack.verify(tenant.test_key, person(phone=phone)))["request_id"])
    await move_ledger_row(stack, ids[0], datetime(2021, 2, 28, 23, 59, 59, tzinfo=UTC))  # before
    await move_ledger_row(stack, ids[1], datetime(2021, 3, 1, 0, 0, 0, tzinfo=UTC))  # first instant
    await move_ledger_row(stack, ids[2], datetime(2021, 3, 31, 23, 59, 59, 999000, tzinfo=UTC))  # last instant
    await move_ledger_row(stack, ids[3], datetime(2021, 4, 1, 0, 0, 0, tzinfo=UTC))  # after
    body = await usage(stack, tenant.test_key, **{"from": "2021-03-01", "to": "2021-03-31"})
    assert core_phone(body)["billable_requests"] == 2
    assert body["total_amount_microdollars"] == 2 * PRICE


async def test_usage_excludes_rows_dated_outside_the_period(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    old = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0101"))))
    await move_ledger_row(stack, old["request_id"], datetime(2020, 1, 15, 12, tzinfo=UTC))
    assert core_phone(await usage(stack, tenant.test_key))["billable_requests"] == 1
    then = await usage(stack, tenant.test_key, **{"from": "2020-01-01", "to": "2020-01-31"})
    assert core_phone(then) == {
        "sku": "core_phone",
        "billable_requests": 1,
        "cache_hits": 0,
        "amount_microdollars": PRICE,
    }


async def test_usage_excludes_other_tenants(stack: Stack) -> None:
    tenant, other = await stack.new_tenant(), await stack.new_tenant()
    assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    for phone in (sandbox("0100"), sandbox("0101"), sandbox("0102")):
        assert_result(await stack.verify(other.test_key, person(phone=phone)))
    body = await usage(stack, tenant.test_key)
    assert body["tenant_id"] == tenant.id
    assert core_phone(body)["billable_requests"] == 1
    assert body["total_amount_microdollars"] == PRICE


async def test_usage_excludes_the_other_environment(stack: Stack, twilio: TwilioLookupServer) -> None:
    tenant = await stack.new_tenant()
    number = live_number()
    twilio.answer(number)
    assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0101"))))
    assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    test = await usage(stack, tenant.test_key)
    live = await usage(stack, tenant.live_key)
    assert (test["environment"], live["environment"]) == ("test", "live")
    assert core_phone(test)["billable_requests"] == 2
    assert test["total_amount_microdollars"] == 2 * PRICE
    assert core_phone(live)["billable_requests"] == 1
    assert live["total_amount_microdollars"] == PRICE


async def test_usage_of_a_tenant_without_checks_is_zero(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    body = await usage(stack, tenant.test_key)
    assert core_phone(body)["billable_requests"] == 0
    assert body["total_amount_microdollars"] == 0


@pytest.mark.parametrize(
    "params",
    [
        {"from": "2026-13-01"},
        {"to": "2026-02-30"},
        {"from": "yesterday"},
        {"to": "2026-1-5"},
        {"from": "2026-01-05T00:00:00Z"},
    ],
    ids=["month_13", "february_30", "word", "unpadded", "date_time"],
)
async def test_usage_with_an_invalid_date_is_invalid_request(stack: Stack, params: dict[str, str]) -> None:
    tenant = await stack.new_tenant()
    error = assert_error(await stack.get(tenant.test_key, "/v1/usage", **params), 400, "invalid_request")
    assert_names_field(error, next(iter(params)))


async def test_usage_with_from_after_to_is_invalid_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.get(tenant.test_key, "/v1/usage", **{"from": "2026-03-02", "to": "2026-03-01"})
    assert_error(response, 400, "invalid_request")
