"""Test keys run against the deterministic sandbox: its magic numbers reach every documented state."""

from __future__ import annotations

import pytest

from processors.phone.name_match import SCORE_BANDS
from tests.contract.phone.helpers import (
    REQUIRED_RESULT_FIELDS,
    assert_error,
    assert_pending,
    assert_result,
    assert_uuid,
    business,
    person,
    sandbox,
)
from tests.phone_stack import Stack


@pytest.mark.parametrize(
    ("phone", "line_type", "line_type_raw", "carrier_type", "carrier_name", "voip_or_virtual", "toll_free"),
    [
        (sandbox("0100"), "mobile", "mobile", "wireless", "Sandbox Wireless", False, False),
        (sandbox("0101"), "landline", "landline", "landline", "Sandbox Telecom", False, False),
        (sandbox("0102"), "voip", "fixedVoip", "voip", "Sandbox Voice", True, False),
        (sandbox("0104"), "voip", "nonFixedVoip", "voip", "Sandbox Cloud Voice", True, False),
        (sandbox("0105", "800"), "toll_free", "tollFree", "unknown", None, False, True),
        (sandbox("0106", "900"), "premium", "premium", "unknown", None, False, False),
        (sandbox("0107"), "pager", "pager", "wireless", None, False, False),
        (sandbox("0108"), "unknown", "unknown", "unknown", None, False, False),
        (sandbox("0109"), "voip", "voicemail", "voip", None, True, False),
        (sandbox("0110"), "mobile", "personal", "wireless", None, False, False),
    ],
    ids=lambda value: value[-4:] if isinstance(value, str) and value.startswith("+") else None,
)
async def test_magic_number_reports_its_line_type(
    stack: Stack,
    phone: str,
    line_type: str,
    line_type_raw: str,
    carrier_type: str,
    carrier_name: str | None,
    voip_or_virtual: bool,
    toll_free: bool,
) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=phone)))
    assert result["result_state"] == "completed"
    assert result["phone"]["line_type"] == line_type
    assert result["phone"]["line_type_raw"] == line_type_raw
    assert result["phone"]["carrier_type"] == carrier_type
    assert result["phone"]["carrier_name"] == carrier_name
    assert result["phone"]["valid"] is True
    assert result["signals"] == {"voip_or_virtual": voip_or_virtual, "toll_free": toll_free}


@pytest.mark.parametrize(
    ("last4", "state", "name"),
    [
        ("0100", "available", "SMITH JOHN"),
        ("0101", "available", "ACME INC"),
        ("0102", "available", "WASHINGTON GEOR"),
        ("0112", "available", "DOE JANE"),
        ("0103", "placeholder", None),
        ("0104", "unavailable", None),
        ("0111", "error", None),
    ],
)
async def test_magic_number_reports_its_caller_id_state(stack: Stack, last4: str, state: str, name: str | None) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox(last4))))
    caller_id = result["caller_id"]
    assert result["result_state"] == "completed"
    assert caller_id["state"] == state
    if state == "available":
        assert caller_id["name"] == name
        assert caller_id["error_code"] is None
    if state == "placeholder":
        assert caller_id["name"] in (None, "WIRELESS CALLER")
        assert caller_id["error_code"] is None
    if state == "unavailable":
        assert caller_id["name"] is None
        assert caller_id["error_code"] is None
    if state == "error":
        assert caller_id["name"] is None
        assert isinstance(caller_id["error_code"], str)
        assert caller_id["error_code"]


@pytest.mark.parametrize(
    ("body", "state"),
    [
        (person(sandbox("0100"), "John Smith"), "match"),
        (person(sandbox("0100"), "Johnny Smith"), "match"),
        (person(sandbox("0102"), "George Washington"), "match"),
        (business(sandbox("0101"), "Acme Inc"), "match"),
        (person(sandbox("0100"), "Jane Smith"), "partial_match"),
        (person(sandbox("0112"), "Jane Smith"), "partial_match"),
        (person(sandbox("0100"), "Smith"), "ambiguous"),
        (person(sandbox("0101"), "John Smith"), "ambiguous"),
        (person(sandbox("0100"), "Maria Garcia"), "mismatch"),
        (business(sandbox("0101"), "Globex LLC"), "mismatch"),
    ],
    ids=[
        "match",
        "match_nickname",
        "match_truncated_cnam",
        "match_business",
        "partial_match_other_given_name",
        "partial_match_other_surname",
        "ambiguous_single_word",
        "ambiguous_business_phone_for_person",
        "mismatch",
        "mismatch_business",
    ],
)
async def test_supplied_name_is_compared_with_an_available_caller_id(
    stack: Stack, body: dict[str, str], state: str
) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, body))
    assert result["caller_id"]["state"] == "available"
    match = result["name_match"]
    assert match["state"] == state, match
    low, high = SCORE_BANDS[state]
    assert low <= match["score"] <= high, match
    assert match["reasons"], match


@pytest.mark.parametrize(
    ("last4", "caller_id_state"),
    [("0103", "placeholder"), ("0104", "unavailable"), ("0111", "error")],
)
@pytest.mark.parametrize("name", ["John Smith", "Maria Garcia"])
async def test_name_match_without_a_usable_caller_id_is_unavailable_never_mismatch(
    stack: Stack, last4: str, caller_id_state: str, name: str
) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox(last4), name=name)))
    assert result["caller_id"]["state"] == caller_id_state
    assert result["name_match"]["state"] == "unavailable"
    assert result["name_match"]["score"] is None


async def test_completed_magic_number_is_a_completed_core_phone_check(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    assert result["result_state"] == "completed"
    assert result["checks"] == {"requested": ["core_phone"], "completed": ["core_phone"]}
    assert result["phone"]["valid"] is True


async def test_unallocated_magic_number_is_unavailable_with_200(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0190"))))
    assert result["result_state"] == "unavailable"
    assert result["phone"]["valid"] is False
    assert result["checks"]["requested"] == ["core_phone"]
    assert result["name_match"]["state"] == "unavailable"


async def test_unreadable_provider_answer_is_result_state_error_with_200(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0191"))))
    assert result["result_state"] == "error"
    assert result["name_match"]["state"] == "unavailable"


async def test_ported_magic_number_reports_ported(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    ported = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0112"), name="Jane Doe")))
    assert ported["phone"]["ported"] is True
    assert ported["phone"]["carrier_name"] == "Sandbox Mobile"
    assert ported["name_match"]["state"] == "match"
    not_ported = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox("0100"))))
    assert not_ported["phone"]["ported"] is False


async def test_slow_magic_number_answers_202_then_completes_on_get(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    request_id = assert_pending(await stack.verify(tenant.test_key, person(phone=sandbox("0199"))))
    result = assert_result(await stack.settle(tenant.test_key, request_id))
    assert result["request_id"] == request_id
    assert result["result_state"] == "completed"
    assert result["caller_id"] == {"state": "available", "name": "SMITH JOHN", "error_code": None}
    assert result["name_match"]["state"] == "match"


async def test_provider_failure_magic_number_is_502_provider_unavailable(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    assert_error(await stack.verify(tenant.test_key, person(phone=sandbox("0192"))), 502, "provider_unavailable")


async def test_any_other_number_gets_a_completed_sandbox_result(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone="+1 212 234 5678")))
    assert result["result_state"] == "completed"
    assert result["phone"]["line_type"] in ("mobile", "landline", "voip")
    assert result["provenance"][0]["provider"] == "sandbox"


async def test_sandbox_answers_are_deterministic(stack: Stack) -> None:
    first, second = await stack.new_tenant(), await stack.new_tenant()
    for phone in (sandbox("0101"), "+1 212 234 5678"):
        one = assert_result(await stack.verify(first.test_key, person(phone=phone)))
        two = assert_result(await stack.verify(second.test_key, person(phone=phone)))
        for part in ("phone", "caller_id", "name_match", "signals"):
            assert one[part] == two[part]


@pytest.mark.parametrize("last4", ["0100", "0104", "0190", "0191"])
async def test_sandbox_provenance_is_sandbox(stack: Stack, last4: str) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=sandbox(last4))))
    assert result["environment"] == "test"
    assert len(result["provenance"]) == 1
    provenance = result["provenance"][0]
    assert provenance["provider"] == "sandbox"
    assert provenance["sku"] == "core_phone"
    assert provenance["cache_hit"] is False


async def test_result_carries_the_request_it_answers(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    body = person(phone="(415) 555-0100", name="Jöhn O'Smith", reference_id="crm-99")
    result = assert_result(await stack.verify(tenant.test_key, body))
    assert_uuid(result["request_id"])
    assert result["subject"] == {
        "phone_e164": "+14155550100",
        "phone_national": "(415) 555-0100",
        "subject_type": "person",
        "supplied_name": "Jöhn O'Smith",
        "reference_id": "crm-99",
    }
    assert result["phone"]["country"] == "US"
    assert result["phone"]["rate_center"]["state"] == "CA"


async def test_get_request_returns_the_stored_result(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person()))
    stored = assert_result(await stack.get(tenant.test_key, f"/v1/requests/{result['request_id']}"))
    assert stored == result


@pytest.mark.parametrize("last4", ["0100", "0103", "0105", "0190", "0191"])
async def test_result_has_exactly_the_contracts_fields_and_types(stack: Stack, last4: str) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(phone=sandbox(last4)))
    assert response.headers["content-type"].startswith("application/json")
    result = assert_result(response)  # fields, types, vocabularies, score 0..100, documented reasons
    assert set(result) - REQUIRED_RESULT_FIELDS <= {"completed_at", "product_version", "rule_version"}
