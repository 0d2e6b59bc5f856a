"""Section 5: bearer keys decide tenant and environment; scopes, SKUs and suspension refuse with 401/403."""

from __future__ import annotations

import secrets
import uuid

import httpx
import pytest
from sqlalchemy import func, select, text

from storage.phone import tenants
from storage.phone.models import PhoneRequest
from tests.contract.phone.helpers import assert_error, assert_result, live_number, person
from tests.peers.twilio import TwilioLookupServer
from tests.phone_stack import Stack

ENDPOINTS = ["verify", "request", "usage"]


async def call(stack: Stack, endpoint: str, authorization: str | None) -> httpx.Response:
    """One call of each endpoint with a given Authorization header (None: no header at all)."""
    headers = {"Authorization": authorization} if authorization is not None else {}
    if endpoint == "verify":
        headers["Idempotency-Key"] = str(uuid.uuid4())
        return await stack.client.post("/v1/verify", json=person(), headers=headers)
    if endpoint == "request":
        return await stack.client.get(f"/v1/requests/{uuid.uuid4()}", headers=headers)
    return await stack.client.get("/v1/usage", headers=headers)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_missing_authorization_header_is_unauthorized(stack: Stack, endpoint: str) -> None:
    assert_error(await call(stack, endpoint, None), 401, "unauthorized")


@pytest.mark.parametrize("scheme", ["Basic", "Token", ""])
async def test_wrong_authorization_scheme_is_unauthorized(stack: Stack, scheme: str) -> None:
    tenant = await stack.new_tenant()
    response = await call(stack, "verify", f"{scheme} {tenant.test_key}".strip())
    assert_error(response, 401, "unauthorized")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_unknown_key_is_unauthorized(stack: Stack, endpoint: str) -> None:
    response = await call(stack, endpoint, f"Bearer sy_test_{secrets.token_hex(20)}")
    assert_error(response, 401, "unauthorized")


async def test_revoked_key_is_unauthorized(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    assert_result(await stack.verify(tenant.test_key, person()))
    assert await stack.db.write(tenants.revoke_key, tenant.test_key)
    assert_error(await stack.verify(tenant.test_key, person()), 401, "unauthorized")
    assert_error(await stack.get(tenant.test_key, "/v1/usage"), 401, "unauthorized")


async def test_key_without_verify_scope_is_forbidden_scope_on_verify(stack: Stack) -> None:
    tenant = await stack.new_tenant(scopes=["requests:read", "usage:read"])
    assert_error(await stack.verify(tenant.test_key, person()), 403, "forbidden_scope")
    assert (await stack.get(tenant.test_key, "/v1/usage")).status_code == 200


async def test_key_without_requests_read_scope_is_forbidden_scope_on_get_request(stack: Stack) -> None:
    tenant = await stack.new_tenant(scopes=["verify", "usage:read"])
    result = assert_result(await stack.verify(tenant.test_key, person()))
    response = await stack.get(tenant.test_key, f"/v1/requests/{result['request_id']}")
    assert_error(response, 403, "forbidden_scope")


async def test_key_without_usage_read_scope_is_forbidden_scope_on_usage(stack: Stack) -> None:
    tenant = await stack.new_tenant(scopes=["verify", "requests:read"])
    assert_error(await stack.get(tenant.test_key, "/v1/usage"), 403, "forbidden_scope")
    assert_result(await stack.verify(tenant.test_key, person()))


async def test_tenant_without_core_phone_sku_is_forbidden_sku(stack: Stack) -> None:
    tenant = await stack.new_tenant(skus=[])
    assert_error(await stack.verify(tenant.test_key, person()), 403, "forbidden_sku")
    assert_error(await stack.verify(tenant.live_key, person(phone=live_number())), 403, "forbidden_sku")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
async def test_suspended_tenant_is_tenant_suspended(stack: Stack, endpoint: str) -> None:
    tenant = await stack.new_tenant()
    assert await stack.db.write(tenants.update_tenant, tenant.id, status="suspended")
    response = await call(stack, endpoint, f"Bearer {tenant.test_key}")
    assert_error(response, 403, "tenant_suspended")


async def test_test_key_gives_test_environment(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person()))
    assert result["environment"] == "test"
    assert result["provenance"][0]["provider"] == "sandbox"


async def test_live_key_gives_live_environment(stack: Stack, twilio: TwilioLookupServer) -> None:
    tenant = await stack.new_tenant()
    number = live_number()
    twilio.answer(number)
    result = assert_result(await stack.verify(tenant.live_key, person(phone=number)))
    assert result["environment"] == "live"
    assert result["provenance"][0]["provider"] == "carrier_lookup"


async def test_another_tenants_request_id_is_not_found(stack: Stack) -> None:
    owner, other = await stack.new_tenant(), await stack.new_tenant()
    result = assert_result(await stack.verify(owner.test_key, person()))
    response = await stack.get(other.test_key, f"/v1/requests/{result['request_id']}")
    assert_error(response, 404, "not_found")
    assert (await stack.get(owner.test_key, f"/v1/requests/{result['request_id']}")).status_code == 200


async def test_same_tenants_request_id_from_the_other_environment_is_not_found(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    result = assert_result(await stack.verify(tenant.test_key, person()))
    response = await stack.get(tenant.live_key, f"/v1/requests/{result['request_id']}")
    assert_error(response, 404, "not_found")


@pytest.mark.parametrize("request_id", ["not-a-uuid", "12345", "0" * 36])
async def test_malformed_request_id_is_not_found(stack: Stack, request_id: str) -> None:
    tenant = await stack.new_tenant()
    assert_error(await stack.get(tenant.test_key, f"/v1/requests/{request_id}"), 404, "not_found")


async def test_an_unreachable_key_store_is_503_enforcement_unavailable_and_nothing_is_stored(stack: Stack) -> None:
    """A real database failure on the key look-up (its table gone for the moment): the gateway cannot tell who is
    calling, so every route answers 503 `enforcement_unavailable` (never a 500, never a 401), and nothing is kept."""
    tenant = await stack.new_tenant()
    away = text("ALTER TABLE api_keys RENAME TO api_keys_away")
    await stack.db.write(lambda connection: connection.execute(away))
    try:
        for endpoint in ENDPOINTS:
            response = await call(stack, endpoint, f"Bearer {tenant.test_key}")
            assert_error(response, 503, "enforcement_unavailable")
    finally:
        back = text("ALTER TABLE api_keys_away RENAME TO api_keys")
        await stack.db.write(lambda connection: connection.execute(back))
    stored = select(func.count()).select_from(PhoneRequest).where(PhoneRequest.tenant_id == tenant.id)
    assert await stack.db.read(lambda connection: connection.execute(stored).scalar_one()) == 0
