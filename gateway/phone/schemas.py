"""Request and response bodies of the phone API that are the gateway's own (results live in `topics.phone`), and
the examples the OpenAPI document shows of every body."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from gateway.phone.errors import ErrorBody, ErrorEnvelope
from topics.phone import RequestId, StoredRequestFailure, Timestamp, VerifyResult

Phone = Annotated[
    str,
    msgspec.Meta(
        description="A US number in any common format: E.164 (`+14155550100`) or national (`(415) 555-0100`, "
        "`415-555-0100`, `415.555.0100`, `1 415 555 0100`). Anything else is 422 `invalid_phone`, and a valid "
        "number outside the US (Canada, the Caribbean, US territories with their own region) 422 "
        "`unsupported_country`.",
        examples=["+14155550100"],
        extra_json_schema={"format": "phone-number"},
    ),
]
NO_NUL = r"^[^\x00]*$"
"""Text that can be stored: PostgreSQL's text types hold no NUL character."""
Name = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=200,
        pattern=NO_NUL,
        description="The person or business name compared with the caller-ID name registered for the number. "
        "Any characters but NUL.",
        examples=["John Smith"],
    ),
]
ReferenceId = Annotated[
    str,
    msgspec.Meta(
        max_length=128,
        pattern=NO_NUL,
        description="Your own identifier, stored and echoed back as `subject.reference_id`; never interpreted. "
        "Any characters but NUL.",
        examples=["customer-8812"],
    ),
]
AddOns = Annotated[
    list[Literal["core_phone"]],
    msgspec.Meta(
        max_length=1,
        description='Products to run: an empty list, `["core_phone"]` or no property at all all mean `core_phone`.',
    ),
]
TenantId = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "uuid", "examples": ["6f707ad6-d427-4f5f-949e-53cea59b8b31"]})
]


class VerifyRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of `POST /verify` (section 2.1). No properties other than these are allowed."""

    phone: Phone
    name: Name
    subject_type: Literal["person", "business"]
    reference_id: ReferenceId | None = None
    add_ons: AddOns = []


class Pending(msgspec.Struct):
    request_id: RequestId
    status: Literal["pending"] = "pending"


class Period(msgspec.Struct):
    from_: Timestamp = msgspec.field(name="from")
    to: Timestamp


class SkuUsage(msgspec.Struct):
    sku: str
    billable_requests: int
    cache_hits: int
    amount_microdollars: int


class UsageSummary(msgspec.Struct):
    tenant_id: TenantId
    environment: Literal["live", "test"]
    period: Period
    by_sku: list[SkuUsage]
    total_amount_microdollars: int


# Examples: real answers of the sandbox (docs/phone.md, "Sandbox magic numbers"), converted to their types so that an
# example cannot drift from the schema it illustrates.

VERIFY_REQUEST_EXAMPLES: dict[str, tuple[str, VerifyRequest]] = {
    "person": (
        "A person on the sandbox's mobile number with caller-ID SMITH JOHN",
        VerifyRequest(phone="+14155550100", name="John Smith", subject_type="person", reference_id="customer-8812"),
    ),
    "business": (
        "A business on the sandbox's landline with caller-ID ACME INC, in national format",
        VerifyRequest(phone="(415) 555-0101", name="Acme, Inc.", subject_type="business", add_ons=["core_phone"]),
    ),
}

_COMPLETED: dict[str, Any] = {
    "request_id": "93503244-a401-403e-a9e2-52c209f4f3d5",
    "environment": "test",
    "created_at": "2026-11-24T00:24:25.119599Z",
    "completed_at": "2026-11-24T00:24:25.151286Z",
    "product_version": "core_phone-2026-10-15.2",
    "rule_version": "name_match-2026-11",
    "result_state": "completed",
    "subject": {
        "phone_e164": "+14155550100",
        "phone_national": "(415) 555-0100",
        "subject_type": "person",
        "supplied_name": "John Smith",
        "reference_id": "customer-8812",
    },
    "checks": {"requested": ["core_phone"], "completed": ["core_phone"]},
    "phone": {
        "valid": True,
        "country": "US",
        "line_type": "mobile",
        "line_type_raw": "mobile",
        "carrier_name": "Sandbox Wireless",
        "carrier_type": "wireless",
        "ported": False,
        "rate_center": {"city": "San Francisco", "state": "CA"},
    },
    "caller_id": {"state": "available", "name": "SMITH JOHN", "error_code": None},
    "name_match": {"state": "match", "score": 100, "reasons": ["surname_match", "given_name_match"]},
    "signals": {"voip_or_virtual": False, "toll_free": False},
    "provenance": [
        {"provider": "sandbox", "sku": "core_phone", "cache_hit": False, "attempted_at": "2026-11-24T00:24:25.151246Z"}
    ],
    "billing": {"disposition": "billable", "sku": "core_phone", "unit_price_microdollars": 15000, "cache_hit": False},
    "warnings": [],
}
_UNAVAILABLE: dict[str, Any] = _COMPLETED | {
    "request_id": "f40a5024-e9df-494a-b83c-1e6bca09842a",
    "result_state": "unavailable",
    "subject": _COMPLETED["subject"] | {"phone_e164": "+14155550190", "phone_national": "(415) 555-0190"},
    "checks": {"requested": ["core_phone"], "completed": []},
    "phone": {
        "valid": False,
        "country": "US",
        "line_type": "unknown",
        "line_type_raw": None,
        "carrier_name": None,
        "carrier_type": "unknown",
        "ported": None,
        "rate_center": {"city": "San Francisco", "state": "CA"},
    },
    "caller_id": {"state": "unavailable", "name": None, "error_code": None},
    "name_match": {"state": "unavailable", "score": None, "reasons": ["caller_id_unavailable"]},
    "signals": {"voip_or_virtual": None, "toll_free": None},
    "billing": {"disposition": "not_billable", "sku": "core_phone", "unit_price_microdollars": 0, "cache_hit": False},
}

VERIFY_RESULT_EXAMPLES: dict[str, tuple[str, VerifyResult]] = {
    "completed": (
        "+1 415 555 0100 with John Smith: mobile, caller-ID SMITH JOHN, a match, billed",
        msgspec.convert(_COMPLETED, VerifyResult),
    ),
    "unavailable": (
        "+1 415 555 0190, a number the provider calls invalid: result_state unavailable, not billed",
        msgspec.convert(_UNAVAILABLE, VerifyResult),
    ),
}
PENDING_EXAMPLE = Pending("3ef46a1d-4864-4187-9a05-3a4eb9eb5260")
FAILURE_EXAMPLE = msgspec.convert(
    {
        "request_id": "60f95380-6730-4983-99a0-cec02c8df76a",
        "status": "failed",
        "error": {
            "code": "provider_unavailable",
            "message": "carrier lookup timed out; gave up after 3 attempt(s)",
        },
        "billing_disposition": "not_billable",
    },
    StoredRequestFailure,
)
USAGE_EXAMPLE = UsageSummary(
    tenant_id="6f707ad6-d427-4f5f-949e-53cea59b8b31",
    environment="test",
    period=Period(from_="2026-11-01T00:00:00Z", to="2026-11-24T23:59:59.999999Z"),
    by_sku=[SkuUsage("core_phone", billable_requests=1, cache_hits=0, amount_microdollars=15000)],
    total_amount_microdollars=15000,
)


def _error(code: str, message: str, *, request_id: str | None = None, details: Any = None) -> ErrorEnvelope:
    return ErrorEnvelope(ErrorBody(code, message, request_id, details))


ERROR_EXAMPLES: dict[str, tuple[str, ErrorEnvelope]] = {
    "invalid_body": (
        "A body property of the wrong type or length, or one the contract does not know",
        _error("invalid_request", "Expected `str` of length <= 200 - at `name`", details={"field": "name"}),
    ),
    "invalid_json": (
        "A body that is not JSON",
        _error("invalid_request", "the body is not valid JSON: JSON is malformed: invalid character (byte 0)"),
    ),
    "missing_idempotency_key": (
        "No Idempotency-Key header",
        _error("missing_idempotency_key", "the Idempotency-Key header is required"),
    ),
    "malformed_idempotency_key": (
        "An Idempotency-Key that is empty, too long or not printable ASCII",
        _error(
            "invalid_request",
            "Idempotency-Key must be 1 to 128 printable characters",
            details={"field": "Idempotency-Key"},
        ),
    ),
    "invalid_date": (
        "A `from` or `to` that is not a date like 2026-11-01",
        _error("invalid_request", "`from` must be a date like 2026-11-01", details={"field": "from"}),
    ),
    "from_after_to": (
        "A `from` after `to`",
        _error("invalid_request", "`from` is after `to`", details={"field": "from"}),
    ),
    "too_large": (
        "A body over the size limit",
        _error("invalid_request", "Request Entity Too Large"),
    ),
    "missing_key": (
        "No API key",
        _error("unauthorized", "send your API key as `Authorization: Bearer <key>`"),
    ),
    "invalid_key": (
        "An unknown, revoked or expired API key",
        _error("unauthorized", "the API key is not valid or has been revoked"),
    ),
    "forbidden_scope_verify": (
        "A key without the `verify` scope",
        _error("forbidden_scope", "this API key lacks the `verify` scope", details={"scope": "verify"}),
    ),
    "forbidden_scope_requests": (
        "A key without the `requests:read` scope",
        _error("forbidden_scope", "this API key lacks the `requests:read` scope", details={"scope": "requests:read"}),
    ),
    "forbidden_scope_usage": (
        "A key without the `usage:read` scope",
        _error("forbidden_scope", "this API key lacks the `usage:read` scope", details={"scope": "usage:read"}),
    ),
    "forbidden_sku": (
        "A tenant that may not use the product",
        _error("forbidden_sku", "this tenant may not use the `core_phone` product", details={"sku": "core_phone"}),
    ),
    "tenant_suspended": (
        "A suspended tenant",
        _error("tenant_suspended", "this tenant is suspended; contact support"),
    ),
    "not_found": (
        "No request with this id for the key's tenant and environment",
        _error("not_found", "no request with this id for this key's tenant and environment"),
    ),
    "idempotency_conflict": (
        "The Idempotency-Key was used with a different body",
        _error(
            "idempotency_conflict",
            "this Idempotency-Key was used with a different body",
            request_id="3f6c2a4e-8d1b-4c7a-9e2f-5b0d7a9c1e44",
        ),
    ),
    "open_check": (
        "The number has a check still pending or awaiting reconciliation",
        _error(
            "idempotency_conflict",
            "a check of this number is still pending or awaiting reconciliation; poll it instead of starting another",
            request_id="3ef46a1d-4864-4187-9a05-3a4eb9eb5260",
        ),
    ),
    "invalid_phone": (
        "Not a valid phone number",
        _error("invalid_phone", "not a valid US phone number", details={"field": "phone"}),
    ),
    "unsupported_country": (
        "A valid number outside the US",
        _error("unsupported_country", "only US numbers are supported (this one is CA)", details={"field": "phone"}),
    ),
    "rate_limited": (
        "The key's rate limit is reached (wait `Retry-After` seconds)",
        _error("rate_limited", "rate limit of 50 per 1 second per key reached"),
    ),
    "spend_cap_reached": (
        "The tenant's monthly spend cap is reached (`Retry-After`: seconds to the next UTC month)",
        _error("spend_cap_reached", "the tenant's monthly spend cap is reached"),
    ),
    "internal_error": (
        "A failure of ours; the details are in our log",
        _error("internal_error", "an internal error occurred; it has been logged"),
    ),
    "provider_unavailable": (
        "The provider did not answer after retries; not billed, the request is stored as failed",
        _error(
            "provider_unavailable",
            "carrier lookup timed out; gave up after 3 attempt(s)",
            request_id="60f95380-6730-4983-99a0-cec02c8df76a",
        ),
    ),
    "enforcement_unavailable": (
        "The rate limit or the spend cap cannot be checked",
        _error("enforcement_unavailable", "rate limits cannot be checked right now; retry"),
    ),
    "keys_unavailable": (
        "The API key cannot be checked (the key store does not answer)",
        _error("enforcement_unavailable", "API keys cannot be checked right now; retry"),
    ),
    "provider_unconfigured": (
        "Live keys, with no carrier lookup credentials configured",
        _error(
            "provider_unconfigured",
            "no carrier lookup credentials are configured for live requests",
            request_id="60f95380-6730-4983-99a0-cec02c8df76a",
        ),
    ),
    "ledger_unavailable": (
        "The check could not be recorded and was voided; not billed",
        _error(
            "ledger_unavailable",
            "the check could not be recorded and was voided",
            request_id="60f95380-6730-4983-99a0-cec02c8df76a",
        ),
    ),
}
"""Examples of the error envelope, by example id (`STATUS` gives each one's HTTP status, but `too_large`: 413)."""
