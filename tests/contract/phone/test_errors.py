"""Section 7: every error body is exactly `{"error": {code, message[, request_id][, details]}}`."""

from __future__ import annotations

import uuid

import pytest

from tests.contract.phone.helpers import ERROR_CODES, assert_error, person, post_raw, sandbox
from tests.phone_stack import Stack


async def test_unknown_path_is_404_not_found(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    for path in ("/v1/verifications", "/v2/verify", "/nothing-here"):
        assert_error(await stack.get(tenant.test_key, path), 404, "not_found")


async def test_unknown_request_id_is_404_not_found(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    assert_error(await stack.get(tenant.test_key, f"/v1/requests/{uuid.uuid4()}"), 404, "not_found")


async def test_wrong_method_answers_with_the_error_envelope(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.get(tenant.test_key, "/v1/verify")
    assert 400 <= response.status_code < 500, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) <= {"code", "message", "request_id", "details"}
    assert body["error"]["code"] in ERROR_CODES
    assert isinstance(body["error"]["message"], str)


@pytest.mark.parametrize(
    ("case", "status", "code"),
    [
        ("not_json", 400, "invalid_request"),
        ("unknown_property", 400, "invalid_request"),
        ("no_idempotency_key", 400, "missing_idempotency_key"),
        ("no_key", 401, "unauthorized"),
        ("no_scope", 403, "forbidden_scope"),
        ("no_sku", 403, "forbidden_sku"),
        ("conflict", 409, "idempotency_conflict"),
        ("invalid_phone", 422, "invalid_phone"),
        ("unsupported_country", 422, "unsupported_country"),
        ("provider_down", 502, "provider_unavailable"),
    ],
)
async def test_every_error_body_is_exactly_the_envelope(stack: Stack, case: str, status: int, code: str) -> None:
    tenant = await stack.new_tenant(
        scopes=["requests:read"] if case == "no_scope" else None, skus=[] if case == "no_sku" else None
    )
    key = tenant.test_key
    if case == "not_json":
        response = await post_raw(stack, key, b"{")
    elif case == "unknown_property":
        response = await stack.verify(key, person(extra=1))
    elif case == "no_idempotency_key":
        response = await stack.verify(key, person(), idempotency_key=None)
    elif case == "no_key":
        response = await stack.client.post("/v1/verify", json=person(), headers={"Idempotency-Key": "k"})
    elif case == "conflict":
        await stack.verify(key, person(), idempotency_key="same")
        response = await stack.verify(key, person(name="Someone Else"), idempotency_key="same")
    elif case == "invalid_phone":
        response = await stack.verify(key, person(phone="not a phone"))
    elif case == "unsupported_country":
        response = await stack.verify(key, person(phone="+44 20 7946 0958"))
    elif case == "provider_down":
        response = await stack.verify(key, person(phone=sandbox("0192")))
    else:
        response = await stack.verify(key, person())
    assert response.headers["content-type"].startswith("application/json")
    assert_error(response, status, code)
