"""Sections 3 and 4.1: the Idempotency-Key header and what a request identified by it answers."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy import func, select, update

from storage.phone.models import PhoneRequest
from tests.contract.phone.helpers import (
    PRICE,
    assert_error,
    assert_failure,
    assert_pending,
    assert_result,
    ledger,
    person,
    post_raw,
    sandbox,
)
from tests.helpers import until
from tests.phone_stack import GatewayOnly, Stack

SLOW = sandbox("0199")
PROVIDER_DOWN = sandbox("0192")


async def accepted(stack: Stack, tenant_id: str) -> int:
    """How many of the tenant's requests the gateway has recorded: a request's row is written when it is accepted."""
    count = select(func.count()).select_from(PhoneRequest).where(PhoneRequest.tenant_id == tenant_id)
    return int(await stack.db.read(lambda connection: connection.execute(count).scalar_one()))


async def test_missing_idempotency_key_is_missing_idempotency_key(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(), idempotency_key=None)
    assert_error(response, 400, "missing_idempotency_key")
    assert await ledger(stack, tenant.id) == []


@pytest.mark.parametrize(
    "key",
    ["k" * 129, "abc\tdef", ""],
    ids=["longer_than_128", "tab", "empty"],
)
async def test_idempotency_key_not_1_to_128_printable_characters_is_invalid_request(stack: Stack, key: str) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person(), idempotency_key=key)
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize("key", ["k" * 128, "x", "order 42/retry #1 ~!"], ids=["128", "one", "punctuation"])
async def test_idempotency_key_of_1_to_128_printable_characters_is_accepted(stack: Stack, key: str) -> None:
    tenant = await stack.new_tenant()
    assert_result(await stack.verify(tenant.test_key, person(), idempotency_key=key))


async def test_same_key_same_body_returns_the_original_answer_and_one_ledger_row(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())
    first = await stack.verify(tenant.test_key, person(), idempotency_key=key)
    again = await stack.verify(tenant.test_key, person(), idempotency_key=key)
    result = assert_result(first)
    assert again.status_code == first.status_code
    assert again.content == first.content
    assert result["billing"]["disposition"] == "billable"
    rows = await ledger(stack, tenant.id)
    assert [(row.request_id, row.disposition, row.unit_price_microdollars) for row in rows] == [
        (result["request_id"], "billable", PRICE)
    ]


async def test_concurrent_sends_of_the_same_key_and_body_are_one_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())
    responses = await asyncio.gather(*(stack.verify(tenant.test_key, person(), idempotency_key=key) for _ in range(4)))
    results = [assert_result(response) for response in responses]
    assert all(result == results[0] for result in results)
    rows = await ledger(stack, tenant.id)
    assert [(row.request_id, row.disposition) for row in rows] == [(results[0]["request_id"], "billable")]


async def test_same_key_with_reordered_keys_and_other_whitespace_is_the_same_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())
    compact = b'{"phone":"+14155550100","name":"John Smith","subject_type":"person","reference_id":"c-1"}'
    spaced = (
        b'{\n  "reference_id" : "c-1",\n\t"subject_type": "person",  "name":"John Smith", "phone": "+14155550100"}\n'
    )
    first = await post_raw(stack, tenant.test_key, compact, idempotency_key=key)
    again = await post_raw(stack, tenant.test_key, spaced, idempotency_key=key)
    result = assert_result(first)
    assert again.status_code == 200, again.text
    assert again.json() == result
    assert len(await ledger(stack, tenant.id)) == 1


@pytest.mark.parametrize(
    "changed",
    [
        {"name": "Jane Smith"},
        {"phone": "+14155550101"},
        {"subject_type": "business"},
        {"reference_id": "other"},
        {"add_ons": ["core_phone"]},
    ],
    ids=["name", "phone", "subject_type", "reference_id", "add_ons"],
)
async def test_same_key_different_body_is_409(stack: Stack, changed: dict[str, object]) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())
    original = person(reference_id="c-1")
    assert_result(await stack.verify(tenant.test_key, original, idempotency_key=key))
    response = await stack.verify(tenant.test_key, {**original, **changed}, idempotency_key=key)
    assert_error(response, 409, "idempotency_conflict")
    assert len(await ledger(stack, tenant.id)) == 1


async def test_same_key_while_still_processing_is_202_pending(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())

    async def resend() -> httpx.Response:
        await until(lambda: accepted(stack, tenant.id), "the first request accepted")
        return await stack.verify(tenant.test_key, person(phone=SLOW), idempotency_key=key)

    first, again = await asyncio.gather(
        stack.verify(tenant.test_key, person(phone=SLOW), idempotency_key=key), resend()
    )
    request_id = assert_pending(first)
    assert again.json() == {"request_id": request_id, "status": "pending"}
    assert again.status_code == 202

    settled = assert_result(await stack.settle(tenant.test_key, request_id))
    replay = assert_result(await stack.verify(tenant.test_key, person(phone=SLOW), idempotency_key=key))
    assert replay == settled
    assert len(await ledger(stack, tenant.id)) == 1


async def test_failed_outcome_is_terminal_for_its_key(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())
    first = await stack.verify(tenant.test_key, person(phone=PROVIDER_DOWN), idempotency_key=key)
    error = assert_error(first, 502, "provider_unavailable")
    again = await stack.verify(tenant.test_key, person(phone=PROVIDER_DOWN), idempotency_key=key)
    assert_error(again, 502, "provider_unavailable")
    assert again.json() == first.json()
    assert error.get("request_id") == again.json()["error"].get("request_id")
    assert [row for row in await ledger(stack, tenant.id) if row.disposition == "billable"] == []


async def test_fresh_key_for_a_number_whose_check_is_pending_is_409(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    slow = asyncio.create_task(stack.verify(tenant.test_key, person(phone=SLOW)))
    await until(lambda: accepted(stack, tenant.id), "the slow request accepted")
    response = await stack.verify(tenant.test_key, person(phone=SLOW))
    assert_error(response, 409, "idempotency_conflict")
    request_id = assert_pending(await slow)
    assert_result(await stack.settle(tenant.test_key, request_id))
    assert len(await ledger(stack, tenant.id)) == 1


async def test_new_key_after_confirmed_nonbillable_failure_starts_a_new_check(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    first = assert_error(await stack.verify(tenant.test_key, person(phone=PROVIDER_DOWN)), 502, "provider_unavailable")
    again = assert_error(await stack.verify(tenant.test_key, person(phone=PROVIDER_DOWN)), 502, "provider_unavailable")
    if "request_id" in first and "request_id" in again:
        assert first["request_id"] != again["request_id"]
    count = select(func.count()).select_from(PhoneRequest).where(PhoneRequest.tenant_id == tenant.id)
    assert await stack.db.read(lambda connection: connection.execute(count).scalar_one()) == 2
    assert [row for row in await ledger(stack, tenant.id) if row.disposition == "billable"] == []


async def test_new_key_after_completed_check_starts_a_new_check(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    first = assert_result(await stack.verify(tenant.test_key, person()))
    again = assert_result(await stack.verify(tenant.test_key, person()))
    assert again["request_id"] != first["request_id"]


async def hold_for_reconciliation(stack: Stack, request_id: str) -> None:
    """Test data set-up: the state a request is left in when its check ran but its billing could not be recorded."""
    held = (
        update(PhoneRequest)
        .where(PhoneRequest.id == request_id)
        .values(
            state="pending_reconciliation",
            billing_disposition="pending_reconciliation",
            error_code="ledger_unavailable",
            error_message="the check ran but its billing could not be recorded",
        )
    )
    await stack.db.write(lambda connection: connection.execute(held))


async def test_fresh_key_for_a_number_awaiting_reconciliation_is_409(stack: Stack, gateway_only: GatewayOnly) -> None:
    tenant = await stack.new_tenant()
    async with gateway_only() as accepting:
        request_id = assert_pending(await accepting.verify(tenant.test_key, person()))
    await hold_for_reconciliation(stack, request_id)
    assert_error(await stack.verify(tenant.test_key, person()), 409, "idempotency_conflict")
    assert_error(await stack.verify(tenant.test_key, person(phone="415.555.0100")), 409, "idempotency_conflict")
    assert await ledger(stack, tenant.id) == []


async def test_request_awaiting_reconciliation_reads_as_a_stored_failure(
    stack: Stack, gateway_only: GatewayOnly
) -> None:
    tenant = await stack.new_tenant()
    async with gateway_only() as accepting:
        request_id = assert_pending(await accepting.verify(tenant.test_key, person()))
    await hold_for_reconciliation(stack, request_id)
    response = await stack.get(tenant.test_key, f"/v1/requests/{request_id}")
    assert response.status_code == 200, response.text
    held = "pending_reconciliation"
    assert_failure(response.json(), status=held, code="ledger_unavailable", disposition=held)
    assert response.json()["request_id"] == request_id


async def test_get_of_a_request_still_pending_is_202_pending(stack: Stack, gateway_only: GatewayOnly) -> None:
    tenant = await stack.new_tenant()
    async with gateway_only() as accepting:
        request_id = assert_pending(await accepting.verify(tenant.test_key, person()))
    response = await stack.get(tenant.test_key, f"/v1/requests/{request_id}")
    assert_pending(response, request_id)
    assert response.json() == {"request_id": request_id, "status": "pending"}
