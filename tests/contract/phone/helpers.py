"""Assertions on what an API user sees, shared by the contract tests."""

from __future__ import annotations

import json
import random
import uuid
from datetime import datetime
from typing import Any

import httpx
import phonenumbers
from sqlalchemy import select

from processors.phone.name_match import REASONS
from storage.phone.models import LedgerEntry
from tests.phone_stack import Stack

ERROR_FIELDS = {"code", "message", "request_id", "details"}
ERROR_CODES = {
    "unauthorized",
    "forbidden_scope",
    "forbidden_sku",
    "tenant_suspended",
    "invalid_request",
    "invalid_phone",
    "unsupported_country",
    "missing_idempotency_key",
    "idempotency_conflict",
    "rate_limited",
    "spend_cap_reached",
    "enforcement_unavailable",
    "provider_unavailable",
    "provider_unconfigured",
    "ledger_unavailable",
    "not_found",
    "internal_error",
}
"""Section 7: the only codes an error body may carry."""

PRICE = 15000
"""The default `core_phone` unit price in microdollars (docs/phone.md, "Billing")."""
FREE_RECHECK = "free_recheck_within_24h"


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is exactly the contract's error envelope with this status and code; returns `error`."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) <= ERROR_FIELDS, error
    assert error["code"] == code, error
    assert code in ERROR_CODES
    assert isinstance(error["message"], str)
    assert error["message"]
    if "request_id" in error:
        assert_uuid(error["request_id"])
    return error


def assert_names_field(error: dict[str, Any], field: str) -> None:
    """The error's `details` name the offending field."""
    assert "details" in error, error
    assert field in json.dumps(error["details"]), error


def assert_retry_after(response: httpx.Response) -> int:
    """A `Retry-After` header in integer seconds, at least 1."""
    value = response.headers.get("retry-after")
    assert value is not None, response.headers
    assert value.isdigit(), value
    assert int(value) >= 1, value
    return int(value)


def assert_uuid(value: Any) -> None:
    assert isinstance(value, str), value
    assert str(uuid.UUID(value)) == value.lower(), value


def assert_datetime(value: Any) -> datetime:
    assert isinstance(value, str), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def assert_pending(response: httpx.Response, request_id: str | None = None) -> str:
    """HTTP 202 with exactly the Pending body; returns its request id."""
    assert response.status_code == 202, response.text
    body = response.json()
    assert set(body) == {"request_id", "status"}, body
    assert body["status"] == "pending"
    assert_uuid(body["request_id"])
    if request_id is not None:
        assert body["request_id"] == request_id
    return body["request_id"]


def assert_failure(body: dict[str, Any], *, status: str, code: str, disposition: str | None) -> None:
    """Exactly a StoredRequestFailure (section 2.3)."""
    assert set(body) == {"request_id", "status", "error", "billing_disposition"}, body
    assert_uuid(body["request_id"])
    assert body["status"] == status
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert body["billing_disposition"] == disposition


REQUIRED_RESULT_FIELDS = {
    "request_id",
    "environment",
    "created_at",
    "result_state",
    "subject",
    "checks",
    "phone",
    "caller_id",
    "name_match",
    "signals",
    "provenance",
    "billing",
    "warnings",
}
OPTIONAL_RESULT_FIELDS = {"completed_at", "product_version", "rule_version"}


def _bool_or_null(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _str_or_null(value: Any) -> bool:
    return value is None or isinstance(value, str)


def assert_result(response: httpx.Response) -> dict[str, Any]:
    """HTTP 200 with a VerifyResult whose fields, types and vocabularies are those of section 2.2."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert_result_shape(body)
    return body


def assert_result_shape(body: dict[str, Any]) -> None:
    assert set(body) >= REQUIRED_RESULT_FIELDS, set(body) ^ REQUIRED_RESULT_FIELDS
    assert set(body) <= REQUIRED_RESULT_FIELDS | OPTIONAL_RESULT_FIELDS, set(body) - REQUIRED_RESULT_FIELDS
    assert_uuid(body["request_id"])
    assert body["environment"] in ("live", "test")
    assert_datetime(body["created_at"])
    if body.get("completed_at") is not None:
        assert_datetime(body["completed_at"])
    for optional in ("product_version", "rule_version"):
        if optional in body:
            assert isinstance(body[optional], str)
    assert body["result_state"] in ("completed", "unavailable", "error")

    subject = body["subject"]
    assert set(subject) == {"phone_e164", "phone_national", "subject_type", "supplied_name", "reference_id"}
    assert isinstance(subject["phone_e164"], str)
    assert isinstance(subject["phone_national"], str)
    assert subject["subject_type"] in ("person", "business")
    assert isinstance(subject["supplied_name"], str)
    assert _str_or_null(subject["reference_id"])

    checks = body["checks"]
    assert set(checks) == {"requested", "completed"}
    assert set(checks["requested"]) <= {"core_phone"}
    assert set(checks["completed"]) <= {"core_phone"}

    phone = body["phone"]
    assert set(phone) == {
        "valid",
        "country",
        "line_type",
        "line_type_raw",
        "carrier_name",
        "carrier_type",
        "ported",
        "rate_center",
    }
    assert _bool_or_null(phone["valid"])
    assert phone["country"] == "US"
    assert phone["line_type"] in ("mobile", "landline", "voip", "toll_free", "premium", "pager", "unknown")
    assert _str_or_null(phone["line_type_raw"])
    assert _str_or_null(phone["carrier_name"])
    assert phone["carrier_type"] in ("wireless", "landline", "voip", "unknown")
    assert _bool_or_null(phone["ported"])
    if phone["rate_center"] is not None:
        assert set(phone["rate_center"]) == {"city", "state"}
        assert _str_or_null(phone["rate_center"]["city"])
        assert _str_or_null(phone["rate_center"]["state"])

    caller_id = body["caller_id"]
    assert set(caller_id) == {"state", "name", "error_code"}
    assert caller_id["state"] in ("available", "placeholder", "unavailable", "error")
    assert _str_or_null(caller_id["name"])
    assert _str_or_null(caller_id["error_code"])

    match = body["name_match"]
    assert set(match) == {"state", "score", "reasons"}
    assert match["state"] in ("match", "partial_match", "mismatch", "ambiguous", "unavailable")
    score = match["score"]
    assert score is None or (isinstance(score, int) and not isinstance(score, bool) and 0 <= score <= 100), score
    assert isinstance(match["reasons"], list)
    assert all(isinstance(reason, str) for reason in match["reasons"])
    assert set(match["reasons"]) <= set(REASONS), match["reasons"]

    signals = body["signals"]
    assert set(signals) == {"voip_or_virtual", "toll_free"}
    assert _bool_or_null(signals["voip_or_virtual"])
    assert _bool_or_null(signals["toll_free"])

    assert isinstance(body["provenance"], list)
    assert body["provenance"]
    for item in body["provenance"]:
        assert set(item) == {"provider", "sku", "cache_hit", "attempted_at"}, item
        assert item["provider"] in ("carrier_lookup", "sandbox")
        assert isinstance(item["sku"], str)
        assert isinstance(item["cache_hit"], bool)
        assert_datetime(item["attempted_at"])

    billing = body["billing"]
    assert set(billing) == {"disposition", "sku", "unit_price_microdollars", "cache_hit"}
    assert billing["disposition"] in ("billable", "not_billable", "pending_reconciliation")
    assert isinstance(billing["sku"], str)
    price = billing["unit_price_microdollars"]
    assert isinstance(price, int)
    assert not isinstance(price, bool)
    assert isinstance(billing["cache_hit"], bool)

    assert isinstance(body["warnings"], list)
    assert all(isinstance(warning, str) for warning in body["warnings"])


def person(phone: str = "+14155550100", name: str = "John Smith", **extra: Any) -> dict[str, Any]:
    return {"phone": phone, "name": name, "subject_type": "person", **extra}


def business(phone: str = "+14155550101", name: str = "Acme Inc", **extra: Any) -> dict[str, Any]:
    return {"phone": phone, "name": name, "subject_type": "business", **extra}


def sandbox(last4: str, area: str = "415") -> str:
    """A sandbox magic number (docs/phone.md, "Sandbox magic numbers"): +1 <area> 555 <last4>."""
    return f"+1{area}555{last4}"


_rng = random.Random()
_used: set[str] = set()


def live_number() -> str:
    """A valid US number no other test uses (outside the sandbox's 555-01XX block), for the shared fake Twilio."""
    while True:
        candidate = f"+1212{_rng.randint(200, 999)}{_rng.randint(0, 9999):04d}"
        parsed = phonenumbers.parse(candidate)
        valid = phonenumbers.is_valid_number(parsed) and phonenumbers.region_code_for_number(parsed) == "US"
        if valid and candidate[5:8] != "555" and candidate not in _used:
            _used.add(candidate)
            return candidate


async def ledger(stack: Stack, tenant_id: str) -> list[Any]:
    """The tenant's ledger rows (both environments)."""
    statement = select(LedgerEntry).where(LedgerEntry.tenant_id == tenant_id)
    return await stack.db.read(lambda connection: list(connection.execute(statement)))


async def billable_total(stack: Stack, tenant_id: str) -> int:
    return sum(row.unit_price_microdollars for row in await ledger(stack, tenant_id) if row.disposition == "billable")


async def post_raw(stack: Stack, key: str, content: bytes, idempotency_key: str | None = None) -> httpx.Response:
    """POST /v1/verify with a body sent byte for byte."""
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Idempotency-Key": idempotency_key or str(uuid.uuid4()),
    }
    return await stack.client.post("/v1/verify", content=content, headers=headers)
