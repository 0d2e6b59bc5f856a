"""Live keys perform real lookups (the fake Twilio Lookup v2 peer) and are metered; test keys never reach it."""

from __future__ import annotations

import pytest

from tests.contract.phone.helpers import (
    PRICE,
    assert_error,
    assert_failure,
    assert_result,
    billable_total,
    person,
    sandbox,
)
from tests.peers.twilio import TwilioLookupServer
from tests.phone_stack import Stack, TenantKeys


async def test_live_answer_is_mapped_into_the_result(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number, line_type="landline", carrier="Acme Telco", caller_name="DOE JANE", caller_type="CONSUMER")
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number, name="Jane Doe")))
    assert result["environment"] == "live"
    assert result["result_state"] == "completed"
    assert result["subject"]["phone_e164"] == number
    assert result["phone"]["valid"] is True
    assert result["phone"]["carrier_name"] == "Acme Telco"
    assert result["phone"]["line_type"] == "landline"
    assert result["phone"]["line_type_raw"] == "landline"
    assert result["phone"]["carrier_type"] == "landline"
    assert result["caller_id"] == {"state": "available", "name": "DOE JANE", "error_code": None}
    assert result["name_match"]["state"] == "match"
    assert [(p["provider"], p["sku"], p["cache_hit"]) for p in result["provenance"]] == [
        ("carrier_lookup", "core_phone", False)
    ]
    assert result["billing"] == {
        "disposition": "billable",
        "sku": "core_phone",
        "unit_price_microdollars": PRICE,
        "cache_hit": False,
    }
    assert twilio.count(number) == 1
    assert await billable_total(stack, tenant.id) == PRICE


@pytest.mark.parametrize(
    ("raw", "line_type", "carrier_type", "voip_or_virtual", "toll_free"),
    [
        ("mobile", "mobile", "wireless", False, False),
        ("fixedVoip", "voip", "voip", True, False),
        ("nonFixedVoip", "voip", "voip", True, False),
        ("tollFree", "toll_free", "unknown", False, True),
        ("premium", "premium", "unknown", False, False),
        ("pager", "pager", "wireless", False, False),
        ("sharedCost", "unknown", "unknown", False, False),
    ],
)
async def test_live_line_type_is_mapped_to_the_contract_vocabulary(
    stack: Stack,
    twilio: TwilioLookupServer,
    raw: str,
    line_type: str,
    carrier_type: str,
    voip_or_virtual: bool,
    toll_free: bool,
    tenant: TenantKeys,
    number: str,
) -> None:
    twilio.answer(number, line_type=raw)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["phone"]["line_type"] == line_type
    assert result["phone"]["line_type_raw"] == raw
    assert result["phone"]["carrier_type"] == carrier_type
    assert result["signals"] == {"voip_or_virtual": voip_or_virtual, "toll_free": toll_free}


@pytest.mark.parametrize(
    ("caller_name", "error_code", "state"),
    [("WIRELESS CALLER", None, "placeholder"), (None, None, "unavailable"), (None, 60601, "error")],
)
async def test_live_caller_id_without_a_name_is_never_a_mismatch(
    stack: Stack,
    twilio: TwilioLookupServer,
    caller_name: str | None,
    error_code: int | None,
    state: str,
    tenant: TenantKeys,
    number: str,
) -> None:
    twilio.answer(number, caller_name=caller_name, caller_type=None, caller_name_error_code=error_code)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["result_state"] == "completed"
    assert result["caller_id"]["state"] == state
    assert result["name_match"]["state"] == "unavailable"
    assert result["billing"]["disposition"] == "billable"


async def test_live_invalid_number_is_unavailable_and_not_billed(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number, valid=False)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["result_state"] == "unavailable"
    assert result["phone"]["valid"] is False
    assert result["billing"]["disposition"] == "not_billable"
    assert await billable_total(stack, tenant.id) == 0


async def test_live_number_the_provider_does_not_know_is_unavailable_and_not_billed(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.not_found(number)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["result_state"] == "unavailable"
    assert result["billing"]["disposition"] == "not_billable"
    assert await billable_total(stack, tenant.id) == 0


async def test_live_provider_timing_out_is_502_and_not_billed(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number)
    twilio.hang(number, 1.5)
    error = assert_error(await stack.verify(tenant.live_key, person(phone=number)), 502, "provider_unavailable")
    stored = await stack.get(tenant.live_key, f"/v1/requests/{error['request_id']}")
    assert stored.status_code == 200, stored.text
    assert_failure(stored.json(), status="failed", code="provider_unavailable", disposition="not_billable")
    assert await billable_total(stack, tenant.id) == 0


async def test_live_provider_failing_every_time_is_502_and_a_failed_request(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.fail(number, status=503, times=None)
    error = assert_error(await stack.verify(tenant.live_key, person(phone=number)), 502, "provider_unavailable")
    assert "request_id" in error, error
    stored = await stack.get(tenant.live_key, f"/v1/requests/{error['request_id']}")
    assert stored.status_code == 200, stored.text
    assert_failure(stored.json(), status="failed", code="provider_unavailable", disposition="not_billable")
    assert twilio.count(number) >= 2  # retried before giving up
    assert await billable_total(stack, tenant.id) == 0


async def test_live_provider_failing_once_is_retried_to_a_completed_result(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number)
    twilio.fail(number, status=503, times=1)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["result_state"] == "completed"
    assert result["billing"]["disposition"] == "billable"
    assert twilio.count(number) == 2


async def test_live_unreadable_answer_is_result_state_error_and_not_billed(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.garbage(number)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["result_state"] == "error"
    assert result["billing"]["disposition"] == "not_billable"
    assert await billable_total(stack, tenant.id) == 0


async def test_live_replay_and_free_recheck_do_not_call_the_provider_again(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number)
    body = person(phone=number)
    first = assert_result(await stack.verify(tenant.live_key, body, idempotency_key="live-replay"))
    replay = assert_result(await stack.verify(tenant.live_key, body, idempotency_key="live-replay"))
    recheck = assert_result(await stack.verify(tenant.live_key, body))
    assert replay == first
    assert recheck["billing"]["cache_hit"] is True
    assert twilio.count(number) == 1
    assert await billable_total(stack, tenant.id) == PRICE


async def test_sandbox_requests_never_call_the_provider(
    stack: Stack, twilio: TwilioLookupServer, tenant: TenantKeys, number: str
) -> None:
    twilio.answer(number)
    for phone in (number, sandbox("0100", "646"), sandbox("0192", "646")):
        await stack.verify(tenant.test_key, person(phone=phone))
        assert twilio.count(phone) == 0
    result = assert_result(await stack.verify(tenant.test_key, person(phone=number)))
    assert result["provenance"][0]["provider"] == "sandbox"
