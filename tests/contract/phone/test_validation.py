"""Section 2.1 (verify request) and the 422 phone rules of sections 4.1 and 7."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.phone.helpers import assert_error, assert_names_field, assert_result, ledger, person, post_raw
from tests.phone_stack import Stack


async def test_unknown_property_is_invalid_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(nickname="Johnny"))
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, "nickname")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("phone", 4155550100),
        ("name", ["John", "Smith"]),
        ("subject_type", True),
        ("reference_id", 42),
        ("add_ons", "core_phone"),
    ],
)
async def test_field_of_wrong_type_is_invalid_request(stack: Stack, field: str, value: Any) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, {**person(), field: value})
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, field)


@pytest.mark.parametrize("field", ["phone", "name", "subject_type"])
async def test_missing_required_field_is_invalid_request(stack: Stack, field: str) -> None:
    tenant = await stack.new_tenant()
    body = person()
    del body[field]
    response = await stack.verify(tenant.test_key, body)
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, field)


async def test_name_longer_than_200_characters_is_invalid_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(name="J" * 100 + " " + "S" * 100))
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, "name")


@pytest.mark.parametrize(
    "name",
    ["J" * 99 + " " + "S" * 100, "Zoë " * 50, "José Ñúñez " * 18 + "Ø" * 2],
    ids=["ascii", "accented", "accented_mixed"],
)
async def test_name_of_exactly_200_characters_is_accepted(stack: Stack, name: str) -> None:
    tenant = await stack.new_tenant()
    name = name.strip() + "x" * (200 - len(name.strip()))
    assert len(name) == 200
    result = assert_result(await stack.verify(tenant.test_key, person(name=name)))
    assert result["subject"]["supplied_name"] == name


async def test_reference_id_longer_than_128_characters_is_invalid_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(reference_id="r" * 129))
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, "reference_id")


async def test_reference_id_of_exactly_128_characters_is_echoed(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    reference_id = "customer-7/" + "x" * 117
    assert len(reference_id) == 128
    result = assert_result(await stack.verify(tenant.test_key, person(reference_id=reference_id)))
    assert result["subject"]["reference_id"] == reference_id


async def test_absent_reference_id_is_echoed_as_null(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person()))
    assert result["subject"]["reference_id"] is None


@pytest.mark.parametrize("subject_type", ["company", "PERSON", ""])
async def test_subject_type_other_than_person_or_business_is_invalid_request(stack: Stack, subject_type: str) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(subject_type=subject_type))
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, "subject_type")


@pytest.mark.parametrize("subject_type", ["person", "business"])
async def test_subject_type_is_echoed(stack: Stack, subject_type: str) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(subject_type=subject_type)))
    assert result["subject"]["subject_type"] == subject_type


@pytest.mark.parametrize("add_ons", [[], ["core_phone"]], ids=["empty", "core_phone"])
async def test_add_ons_empty_or_core_phone_is_accepted(stack: Stack, add_ons: list[str]) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(add_ons=add_ons)))
    assert result["checks"]["requested"] == ["core_phone"]


@pytest.mark.parametrize(
    "add_ons",
    [["caller_name"], ["core_phone", "identity_match"], ["core_phone", "core_phone"], [""]],
    ids=["other", "core_phone_plus_other", "core_phone_twice", "empty_string"],
)
async def test_other_add_ons_are_invalid_request(stack: Stack, add_ons: list[str]) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(add_ons=add_ons))
    error = assert_error(response, 400, "invalid_request")
    assert_names_field(error, "add_ons")


@pytest.mark.parametrize(
    "content",
    [b'{"phone": "+14155550100", "name": "John Smith"', b"phone=+14155550100", b""],
    ids=["truncated", "form", "empty"],
)
async def test_body_that_is_not_json_is_invalid_request(stack: Stack, content: bytes) -> None:
    tenant = await stack.new_tenant()
    assert_error(await post_raw(stack, tenant.test_key, content), 400, "invalid_request")


async def test_body_over_16_kib_is_413_invalid_request_and_nothing_is_stored(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    padding = "x" * (16 * 1024)
    content = b'{"phone": "+14155550100", "name": "John Smith", "subject_type": "person", "reference_id": "'
    response = await post_raw(stack, tenant.test_key, content + padding.encode() + b'"}')
    assert_error(response, 413, "invalid_request")
    assert await ledger(stack, tenant.id) == []


async def test_body_of_16_kib_is_read(stack: Stack) -> None:
    """Up to the limit the body is read and validated (here: a reference_id over 128 characters is refused)."""
    tenant = await stack.new_tenant()
    head = b'{"phone": "+14155550100", "name": "John Smith", "subject_type": "person", "reference_id": "'
    content = head + b"x" * (16 * 1024 - len(head) - 2) + b'"}'
    assert len(content) == 16 * 1024
    error = assert_error(await post_raw(stack, tenant.test_key, content), 400, "invalid_request")
    assert error["details"] == {"field": "reference_id"}


@pytest.mark.parametrize("content", [b"[]", b'"+14155550100"', b"null"], ids=["array", "string", "null"])
async def test_body_that_is_not_an_object_is_invalid_request(stack: Stack, content: bytes) -> None:
    tenant = await stack.new_tenant()
    assert_error(await post_raw(stack, tenant.test_key, content), 400, "invalid_request")


@pytest.mark.parametrize(
    "phone",
    [
        "+14155550100",
        "+1 415 555 0100",
        "(415) 555-0100",
        "415-555-0100",
        "415.555.0100",
        "4155550100",
        "1-415-555-0100",
        "1 (415) 555-0100",
    ],
)
async def test_us_number_in_a_common_format_is_accepted_and_normalised(stack: Stack, phone: str) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person(phone=phone)))
    assert result["subject"]["phone_e164"] == "+14155550100"
    assert result["subject"]["phone_national"] == "(415) 555-0100"
    assert result["phone"]["country"] == "US"


@pytest.mark.parametrize(
    "phone",
    ["+1 416 966 1234", "+1 876 927 1234", "+1 787 722 1234", "+44 20 7946 0958", "+44 7700 900123"],
    ids=["canada_416", "jamaica_876", "puerto_rico_787", "uk_landline", "uk_mobile"],
)
async def test_non_us_number_is_unsupported_country(stack: Stack, phone: str) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(phone=phone))
    assert_error(response, 422, "unsupported_country")


@pytest.mark.parametrize(
    "phone",
    ["call me maybe", "123", "+1 212 123 4567", "415 555 01000"],
    ids=["words", "too_short", "exchange_starting_with_1", "too_long"],
)
async def test_impossible_number_is_invalid_phone(stack: Stack, phone: str) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(phone=phone))
    assert_error(response, 422, "invalid_phone")
