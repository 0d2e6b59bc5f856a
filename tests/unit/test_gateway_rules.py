"""Pure rules of the gateway and the result builder: usage periods, US numbers, Idempotency-Key, the field a
validation error names, the Retry-After of the spend cap, and how a provider answer reads as a VerifyResult."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from litestar.testing import RequestFactory

from gateway.common.limits import seconds_to_next_month
from gateway.phone.errors import ERRORS, PhoneError, field_of
from gateway.phone.schemas import VerifyRequest
from gateway.phone.usage import usage_period
from gateway.phone.verify import IDEMPOTENCY, parse_us_number
from processors.phone.lookup import CarrierAnswer
from processors.phone.result import (
    FREE_RECHECK_WARNING,
    PRODUCT_VERSION,
    RULE_VERSION,
    UNINTERPRETABLE_ERROR_CODE,
    Request,
    StoredLookup,
    build_result,
    rate_center,
)
from topics.phone import RateCenter, VerifyResult

NOW = datetime(2026, 11, 21, 15, 30, 45, tzinfo=UTC)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# -------------------------------------------------------------------------------------------------- usage_period


def test_usage_period_defaults_to_the_current_month_through_today() -> None:
    assert usage_period(None, None, NOW) == (utc(2026, 11, 1), utc(2026, 11, 22))


def test_usage_period_with_only_to_starts_on_the_first_of_its_month() -> None:
    assert usage_period(None, "2026-10-15", NOW) == (utc(2026, 10, 1), utc(2026, 10, 16))


def test_usage_period_with_only_from_runs_through_today() -> None:
    assert usage_period("2026-09-05", None, NOW) == (utc(2026, 9, 5), utc(2026, 11, 22))


@pytest.mark.parametrize(
    ("from_text", "to_text", "expected"),
    [
        ("2026-09-30", "2026-10-02", (utc(2026, 9, 30), utc(2026, 10, 3))),
        ("2026-11-21", "2026-11-21", (utc(2026, 11, 21), utc(2026, 11, 22))),
        ("2026-12-01", "2026-12-31", (utc(2026, 12, 1), utc(2027, 1, 1))),
        ("2028-02-01", "2028-02-29", (utc(2028, 2, 1), utc(2028, 3, 1))),
        ("2025-01-01", "2026-12-31", (utc(2025, 1, 1), utc(2027, 1, 1))),
    ],
)
def test_usage_period_with_both_dates_ends_at_the_midnight_after_to(
    from_text: str, to_text: str, expected: tuple[datetime, datetime]
) -> None:
    start, end = usage_period(from_text, to_text, NOW)
    assert (start, end) == expected
    assert start.tzinfo is UTC
    assert end.tzinfo is UTC
    assert (end.hour, end.minute, end.second, end.microsecond) == (0, 0, 0, 0)


def _period_error(from_text: str | None, to_text: str | None) -> PhoneError:
    with pytest.raises(PhoneError) as raised:
        usage_period(from_text, to_text, NOW)
    assert raised.value.code == "invalid_request"
    assert raised.value.status == 400
    return raised.value


def test_from_after_to_is_invalid_request() -> None:
    error = _period_error("2026-11-02", "2026-11-01")
    assert error.body.error.details == {"field": "from"}


def test_from_after_today_without_to_is_invalid_request() -> None:
    _period_error("2026-12-01", None)


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01",
        "2026-02-30",
        "2026-1-1",
        "2026-11-1",
        "26-11-01",
        "yesterday",
        "2026/11/01",
        "2026-11-01T00:00:00",
        "2026-11-01Z",
        " 2026-11-01",
        "20261101",
        "2026W441",
    ],
)
@pytest.mark.parametrize("param", ["from", "to"])
def test_malformed_dates_are_invalid_request_naming_the_parameter(param: str, text: str) -> None:
    error = _period_error(text, "2026-11-30") if param == "from" else _period_error("2026-11-01", text)
    assert error.body.error.details == {"field": param}
    assert "2026-11-01" in str(error)


@pytest.mark.parametrize("param", ["from", "to"])
def test_iso_week_dates_are_rejected_like_any_other_non_calendar_form(param: str) -> None:
    """`2026-W44-1` has the length of `YYYY-MM-DD` and Python 3.11's date.fromisoformat accepts it."""
    error = _period_error("2026-W44-1", None) if param == "from" else _period_error(None, "2026-W44-1")
    assert error.body.error.details == {"field": param}


# ------------------------------------------------------------------------------------------------ parse_us_number


@pytest.mark.parametrize(
    "text",
    [
        "+14155550100",
        "+1 415 555 0100",
        "+1 (415) 555-0100",
        "+1-415-555-0100",
        "(415) 555-0100",
        "415-555-0100",
        "415.555.0100",
        "415 555 0100",
        "4155550100",
        "14155550100",
        "1 415 555 0100",
    ],
)
def test_us_numbers_are_accepted_in_the_usual_formats(text: str) -> None:
    number = parse_us_number(text)
    assert (number.country_code, number.national_number) == (1, 4155550100)


def test_a_toll_free_us_number_is_accepted() -> None:
    assert parse_us_number("+1 800 555 0100").national_number == 8005550100


@pytest.mark.parametrize(
    ("text", "region"),
    [
        ("+1 416 555 0100", "CA"),
        ("+1 604 555 0100", "CA"),
        ("+1 876 555 0100", "JM"),
        ("+1 787 555 0100", "PR"),
        ("+44 20 7946 0958", "GB"),
        ("+442079460958", "GB"),
        ("011 44 20 7946 0958", "GB"),
    ],
)
def test_numbers_of_other_countries_are_unsupported_country(text: str, region: str) -> None:
    with pytest.raises(PhoneError) as raised:
        parse_us_number(text)
    assert raised.value.code == "unsupported_country"
    assert raised.value.status == 422
    assert raised.value.body.error.details == {"field": "phone"}
    assert region in str(raised.value)


@pytest.mark.parametrize(
    "text",
    ["", "hello", "phone", "12", "+1 415 555", "+1 415 555 01000", "+1 555 555 5555", "+1 011 555 0100", "++--"],
)
def test_junk_is_invalid_phone(text: str) -> None:
    with pytest.raises(PhoneError) as raised:
        parse_us_number(text)
    assert raised.value.code == "invalid_phone"
    assert raised.value.status == 422
    assert raised.value.body.error.details == {"field": "phone"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello", "`phone` cannot be read as a phone number: it is not a phone number"),
        ("+44 1", "`phone` cannot be read as a phone number: it has too few digits"),
        ("2", "`phone` cannot be read as a phone number: it is not a phone number"),
        ("011 2", "`phone` cannot be read as a phone number: it is too short after its international prefix"),
        ("+1 415 555 0100 0100 0100 0100 0100", "`phone` cannot be read as a phone number: it has too many digits"),
        (
            "+999 415 555 0100",
            "`phone` cannot be read as a phone number: it starts with a country code that does not exist",
        ),
        ("+1 555 555 5555", "not a valid US phone number"),
    ],
)
def test_an_unreadable_number_is_explained_in_our_words(text: str, message: str) -> None:
    """The message says what is wrong, never phonenumbers' own text with its internal error number ("(1) The
    string supplied...")."""
    with pytest.raises(PhoneError) as raised:
        parse_us_number(text)
    assert raised.value.body.error.message == message


# ---------------------------------------------------------------------------------------------- Idempotency-Key


def _request_with(headers: dict[str, str]):  # type: ignore[no-untyped-def]
    return RequestFactory().post("/v1/verify", headers=headers)


@pytest.mark.parametrize("key", ["k", "order-42", "a b c", "~!@#$%^&*()", "x" * 128])
def test_printable_idempotency_keys_of_1_to_128_characters_are_taken(key: str) -> None:
    assert IDEMPOTENCY.key_in(_request_with({"Idempotency-Key": key}).headers) == key


def test_a_missing_idempotency_key_is_its_own_error() -> None:
    with pytest.raises(PhoneError) as raised:
        IDEMPOTENCY.key_in(_request_with({}).headers)
    assert raised.value.code == "missing_idempotency_key"
    assert raised.value.status == 400


@pytest.mark.parametrize("key", ["", "x" * 129, "tab\there", "del\x7f"])
def test_an_unusable_idempotency_key_is_invalid_request(key: str) -> None:
    with pytest.raises(PhoneError) as raised:
        IDEMPOTENCY.key_in(_request_with({"Idempotency-Key": key}).headers)
    assert raised.value.code == "invalid_request"
    assert raised.value.body.error.details == {"field": "Idempotency-Key"}


# ---------------------------------------------------------------------------------------------------- field_of


def _validation_message(body: bytes) -> str:
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.json.decode(body, type=VerifyRequest)
    return str(raised.value)


VALID = b'"phone": "+14155550100", "name": "John Smith", "subject_type": "person"'


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"phone": 4155550100, "name": "John Smith", "subject_type": "person"}', "phone"),
        (b'{"phone": null, "name": "John Smith", "subject_type": "person"}', "phone"),
        (b'{"name": "John Smith", "subject_type": "person"}', "phone"),
        (b'{"phone": "+14155550100", "subject_type": "person"}', "name"),
        (b'{"phone": "+14155550100", "name": "", "subject_type": "person"}', "name"),
        (b'{"phone": "+14155550100", "name": "' + b"n" * 201 + b'", "subject_type": "person"}', "name"),
        (b'{"phone": "+14155550100", "name": "John Smith"}', "subject_type"),
        (b'{"phone": "+14155550100", "name": "John Smith", "subject_type": "robot"}', "subject_type"),
        (b"{" + VALID + b', "reference_id": 7}', "reference_id"),
        (b"{" + VALID + b', "reference_id": "' + b"r" * 129 + b'"}', "reference_id"),
        (b"{" + VALID + b', "add_ons": "core_phone"}', "add_ons"),
        (b"{" + VALID + b', "add_ons": ["core_phone", "core_phone"]}', "add_ons"),
        (b"{" + VALID + b', "unexpected": 1}', "unexpected"),
        (b"{" + VALID + b', "Phone": "+14155550100"}', "Phone"),
    ],
)
def test_field_of_names_the_field_of_a_real_msgspec_error(body: bytes, field: str) -> None:
    message = _validation_message(body)
    assert field_of(message) == field, message
    error = ERRORS.invalid_body(message)
    assert error.code == "invalid_request"
    assert error.body.error.details == {"field": field}
    assert "$" not in error.body.error.message


def test_field_of_an_array_element_names_the_array() -> None:
    message = _validation_message(b"{" + VALID + b', "add_ons": ["photo"]}')
    field = field_of(message)
    assert field is not None
    assert field.startswith("add_ons")


@pytest.mark.parametrize("body", [b"[]", b'"text"', b"42", b"null"])
def test_a_body_that_is_not_an_object_names_no_field(body: bytes) -> None:
    message = _validation_message(body)
    assert field_of(message) is None
    error = ERRORS.invalid_body(message)
    assert error.code == "invalid_request"
    assert error.body.error.details is None


# ---------------------------------------------------------------------------------------------- spend cap reset


@pytest.mark.parametrize(
    ("now", "seconds"),
    [
        (utc(2026, 11, 30, 23, 59, 59), 1),
        (utc(2026, 11, 1), 30 * 86400),
        (utc(2026, 11, 21, 12), 9 * 86400 + 12 * 3600),
        (utc(2026, 12, 1), 31 * 86400),
        (utc(2026, 12, 31, 23), 3600),
        (utc(2026, 12, 31, 23, 59, 59), 1),
        (datetime(2026, 12, 31, 23, 59, 59, 500000, tzinfo=UTC), 1),
        (datetime(2026, 12, 31, 23, 59, 58, 250000, tzinfo=UTC), 2),
        (utc(2027, 2, 1), 28 * 86400),
        (utc(2028, 2, 1), 29 * 86400),
    ],
)
def test_seconds_to_next_month(now: datetime, seconds: int) -> None:
    assert seconds_to_next_month(now) == seconds


# --------------------------------------------------------------------------------------------------- build_result

CREATED = utc(2026, 11, 21, 12, 0, 0)
ATTEMPTED = utc(2026, 11, 21, 12, 0, 1)
COMPLETED = utc(2026, 11, 21, 12, 0, 2)
REQUEST = Request(
    request_id="7f1c4c36-5d0e-4a4e-9a55-0a4f6f2d3b10",
    environment="test",
    created_at=CREATED,
    phone_e164="+14155550100",
    subject_type="person",
    supplied_name="John Smith",
    reference_id="ref-1",
)
ANSWER = CarrierAnswer(
    valid=True,
    line_type_raw="mobile",
    carrier_name="Sandbox Wireless",
    mobile_country_code="999",
    mobile_network_code="01",
    caller_name="SMITH JOHN",
    caller_type="CONSUMER",
    ported=False,
)


def _result(answer: CarrierAnswer | None, *, cache_hit: bool = False, billable: bool = True) -> VerifyResult:
    lookup = StoredLookup(provider="sandbox", attempted_at=ATTEMPTED, answer=answer)
    return build_result(
        REQUEST, lookup, completed_at=COMPLETED, cache_hit=cache_hit, billable=billable, unit_price_microdollars=15000
    )


def test_a_fresh_completed_answer_maps_onto_every_field() -> None:
    result = _result(ANSWER)
    assert result.request_id == REQUEST.request_id
    assert result.environment == "test"
    assert result.created_at == "2026-11-21T12:00:00Z"
    assert result.completed_at == "2026-11-21T12:00:02Z"
    assert result.product_version == PRODUCT_VERSION
    assert result.rule_version == RULE_VERSION
    assert result.result_state == "completed"
    assert msgspec.to_builtins(result.subject) == {
        "phone_e164": "+14155550100",
        "phone_national": "(415) 555-0100",
        "subject_type": "person",
        "supplied_name": "John Smith",
        "reference_id": "ref-1",
    }
    assert msgspec.to_builtins(result.checks) == {"requested": ["core_phone"], "completed": ["core_phone"]}
    assert msgspec.to_builtins(result.phone) == {
        "valid": True,
        "country": "US",
        "line_type": "mobile",
        "line_type_raw": "mobile",
        "carrier_name": "Sandbox Wireless",
        "carrier_type": "wireless",
        "ported": False,
        "rate_center": {"city": "San Francisco", "state": "CA"},
    }
    assert msgspec.to_builtins(result.caller_id) == {"state": "available", "name": "SMITH JOHN", "error_code": None}
    assert result.name_match.state == "match"
    assert result.name_match.score == 100
    assert msgspec.to_builtins(result.signals) == {"voip_or_virtual": False, "toll_free": False}
    assert msgspec.to_builtins(result.provenance) == [
        {"provider": "sandbox", "sku": "core_phone", "cache_hit": False, "attempted_at": "2026-11-21T12:00:01Z"}
    ]
    assert msgspec.to_builtins(result.billing) == {
        "disposition": "billable",
        "sku": "core_phone",
        "unit_price_microdollars": 15000,
        "cache_hit": False,
    }
    assert result.warnings == []
    # and it is exactly the contract's type
    assert msgspec.json.decode(msgspec.json.encode(result), type=VerifyResult) == result


def test_a_voip_line_reads_as_voip_or_virtual() -> None:
    result = _result(msgspec.structs.replace(ANSWER, line_type_raw="fixedVoip", carrier_name="Sandbox Voice"))
    assert (result.phone.line_type, result.phone.carrier_type) == ("voip", "voip")
    assert result.signals.voip_or_virtual is True
    assert result.signals.toll_free is False


def test_an_answer_with_valid_false_is_unavailable_and_carries_no_carrier_data() -> None:
    result = _result(CarrierAnswer(valid=False, line_type_raw="mobile", carrier_name="Leaked"), billable=False)
    assert result.result_state == "unavailable"
    assert result.checks.completed == []
    assert result.phone.valid is False
    assert result.phone.line_type_raw is None
    assert result.phone.carrier_name is None
    assert (result.phone.line_type, result.phone.carrier_type) == ("unknown", "unknown")
    assert result.caller_id.state == "unavailable"
    assert result.name_match.state == "unavailable"
    assert result.name_match.score is None
    assert msgspec.to_builtins(result.signals) == {"voip_or_virtual": None, "toll_free": None}
    assert msgspec.to_builtins(result.billing) == {
        "disposition": "not_billable",
        "sku": "core_phone",
        "unit_price_microdollars": 0,
        "cache_hit": False,
    }
    assert result.warnings == []


def test_no_answer_is_an_error_result_with_the_uninterpretable_code() -> None:
    result = _result(None, billable=False)
    assert result.result_state == "error"
    assert result.checks.completed == []
    assert result.phone.valid is None
    assert result.phone.ported is None
    assert result.phone.line_type_raw is None
    assert result.phone.carrier_name is None
    assert msgspec.to_builtins(result.caller_id) == {
        "state": "error",
        "name": None,
        "error_code": UNINTERPRETABLE_ERROR_CODE,
    }
    assert result.name_match.state == "unavailable"
    assert result.billing.disposition == "not_billable"
    assert result.billing.unit_price_microdollars == 0
    assert result.provenance[0].provider == "sandbox"
    assert result.provenance[0].cache_hit is False


def test_a_cache_hit_warns_is_not_billable_and_costs_nothing() -> None:
    result = _result(ANSWER, cache_hit=True, billable=False)
    assert result.result_state == "completed"
    assert result.warnings == [FREE_RECHECK_WARNING] == ["free_recheck_within_24h"]
    assert msgspec.to_builtins(result.billing) == {
        "disposition": "not_billable",
        "sku": "core_phone",
        "unit_price_microdollars": 0,
        "cache_hit": True,
    }
    assert result.provenance[0].cache_hit is True
    assert result.provenance[0].attempted_at == "2026-11-21T12:00:01Z"  # when the reused lookup ran
    assert result.completed_at == "2026-11-21T12:00:02Z"
    assert result.caller_id.name == "SMITH JOHN"


def test_the_provider_and_the_tenant_price_are_echoed() -> None:
    lookup = StoredLookup(provider="carrier_lookup", attempted_at=ATTEMPTED, answer=ANSWER)
    result = build_result(
        REQUEST, lookup, completed_at=COMPLETED, cache_hit=False, billable=True, unit_price_microdollars=9000
    )
    assert result.provenance[0].provider == "carrier_lookup"
    assert result.billing.unit_price_microdollars == 9000
    assert "+00:00" not in msgspec.json.encode(result).decode()


# ---------------------------------------------------------------------------------------------------- rate_center


def test_rate_center_of_a_city_and_state_description() -> None:
    assert rate_center("+14155550100") == RateCenter(city="San Francisco", state="CA")
    assert rate_center("+12125550100") == RateCenter(city="New York", state="NY")


@pytest.mark.parametrize(("number", "state"), [("+13075550100", "WY"), ("+14065550100", "MT")])
def test_rate_center_of_a_state_only_description_is_the_state_code(number: str, state: str) -> None:
    assert rate_center(number) == RateCenter(city=None, state=state)


def test_rate_center_of_a_number_without_a_place_is_none() -> None:
    assert rate_center("+18005550100") is None


def test_the_photo_waiter_reads_the_id_of_photo_completions() -> None:
    """The gateway's waiter must find the id in what the photo processors announce, or every verify waits out its
    whole budget before it confirms from storage."""
    from gateway.common.waiter import ResultWaiter
    from topics.photo import VerificationCompleted

    waiter = ResultWaiter(None, lambda _connection, _ids: {}, id_field="verification_id")  # type: ignore[arg-type]
    message = VerificationCompleted(
        verification_id="ver_1", customer_id="cus_1", environment="test", policy="icao", status="failed", error="x"
    )
    decoded = msgspec.json.decode(msgspec.json.encode(message), type=waiter.ref)
    assert msgspec.structs.asdict(decoded) == {"verification_id": "ver_1"}


async def test_an_options_answer_names_every_method_of_a_path_with_parameters() -> None:
    """Litestar 2 answers OPTIONS with the methods of the path's first handler only; `complete_allow` names them all,
    for paths with parameters too (`/things/{thing_id}` with GET and PATCH)."""
    import httpx
    from litestar import Litestar, get, patch
    from litestar.params import FromPath

    from gateway.common.http import complete_allow

    @get("/things/{thing_id:str}")
    async def read(thing_id: FromPath[str]) -> str:
        return thing_id

    @patch("/things/{thing_id:str}")
    async def change(thing_id: FromPath[str]) -> str:
        return thing_id

    app = complete_allow(Litestar([read, change]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:  # type: ignore[arg-type]
        answer = await client.options("/things/42")
    assert answer.status_code == 204
    assert set(answer.headers["allow"].split(", ")) == {"GET", "PATCH", "OPTIONS"}
