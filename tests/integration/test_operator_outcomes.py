"""Outcomes that need more than a request: a ledger that cannot be written (pending_reconciliation, resolved by the
operator command) and enforcement that refuses an already accepted request (rejected)."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.phone import requests, tenants
from storage.phone.models import LedgerEntry
from tests.contract.phone.helpers import assert_error, person
from tests.helpers import until
from tests.integration.faults import ledger_refused, run_cli
from tests.phone_stack import Stack
from topics.phone import VerificationRequested


def signalyard(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(stack.settings.platform.database_url or "", stack.settings.platform.data_dir, *args)


async def test_a_check_whose_ledger_write_fails_waits_for_the_operator_and_is_never_bypassed(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    async with ledger_refused(stack, tenant.id):
        first = await stack.verify(tenant.test_key, person("+12125550100"), idempotency_key="ledger-down")
        error = assert_error(first, 503, "ledger_unavailable")
        request_id = error["request_id"]

        stored = await stack.get(tenant.test_key, f"/v1/requests/{request_id}")
        assert stored.status_code == 200
        assert stored.json() == {
            "request_id": request_id,
            "status": "pending_reconciliation",
            "error": {"code": "ledger_unavailable", "message": stored.json()["error"]["message"]},
            "billing_disposition": "pending_reconciliation",
        }
        replay = await stack.verify(tenant.test_key, person("+12125550100"), idempotency_key="ledger-down")
        assert replay.status_code == 503
        assert replay.json() == first.json()
        bypass = await stack.verify(tenant.test_key, person("+12125550100"), idempotency_key="fresh-key")
        assert_error(bypass, 409, "idempotency_conflict")

    resolved = await asyncio.to_thread(signalyard, stack, "requests", "reconcile", request_id, "--outcome", "billable")
    assert resolved.returncode == 0, resolved.stderr
    assert "completed" in resolved.stdout

    result = await stack.get(tenant.test_key, f"/v1/requests/{request_id}")
    assert result.status_code == 200
    assert result.json()["result_state"] == "completed"
    assert result.json()["billing"] == {
        "disposition": "billable",
        "sku": "core_phone",
        "unit_price_microdollars": 15000,
        "cache_hit": False,
    }
    entries = select(LedgerEntry).where(LedgerEntry.tenant_id == tenant.id)
    ledger = await stack.db.read(lambda connection: list(connection.execute(entries)))
    assert [(row.request_id, row.disposition) for row in ledger] == [(request_id, "billable")]

    again = await asyncio.to_thread(signalyard, stack, "requests", "reconcile", request_id, "--outcome", "billable")
    assert again.returncode == 2
    assert "awaiting reconciliation" in again.stderr


async def test_reconciling_as_failed_voids_the_check_and_frees_the_number(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    async with ledger_refused(stack, tenant.id):
        first = await stack.verify(tenant.test_key, person("+12125550101"))
        request_id = assert_error(first, 503, "ledger_unavailable")["request_id"]
    resolved = await asyncio.to_thread(signalyard, stack, "requests", "reconcile", request_id, "--outcome", "failed")
    assert resolved.returncode == 0, resolved.stderr

    stored = (await stack.get(tenant.test_key, f"/v1/requests/{request_id}")).json()
    assert stored["status"] == "failed"
    assert stored["billing_disposition"] == "not_billable"
    fresh = await stack.verify(tenant.test_key, person("+12125550101"))
    assert fresh.status_code == 200
    assert fresh.json()["billing"]["disposition"] == "billable"


async def test_a_request_accepted_before_its_tenant_was_suspended_is_rejected_and_not_billed(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    now = datetime.now(UTC)
    request_id = str(uuid.uuid4())
    accepted = {  # accepted, exactly as the gateway stores it ...
        "id": request_id,
        "tenant_id": tenant.id,
        "environment": "test",
        "idempotency_key": "accepted-then-suspended",
        "body_hash": "0" * 64,
        "phone_e164": "+12125550102",
        "subject_type": "person",
        "supplied_name": "John Smith",
        "reference_id": None,
        "state": "pending",
        "created_at": now,
        "published_at": now,
    }

    def accept_then_suspend(connection: Connection) -> None:
        assert requests.insert_pending(connection, [accepted]) == {request_id}
        tenants.update_tenant(connection, tenant.id, status="suspended")  # ... then the tenant is suspended

    await stack.db.write(accept_then_suspend)
    await stack.platform.publish(
        VerificationRequested(
            request_id=request_id, tenant_id=tenant.id, environment="test", phone_e164="+12125550102"
        ),
        stack.topics.requested,
        b"+12125550102",
    )

    async def decided() -> str | None:
        row = await stack.db.read(requests.get_request, request_id)
        assert row is not None
        return None if row.state == "pending" else row.state

    assert await until(decided, "the request decided") == "rejected"

    assert_error(await stack.get(tenant.test_key, f"/v1/requests/{request_id}"), 403, "tenant_suspended")
    await stack.db.write(tenants.update_tenant, tenant.id, status="active")
    stored = await stack.get(tenant.test_key, f"/v1/requests/{request_id}")
    assert stored.status_code == 200
    assert stored.json()["status"] == "rejected"
    assert stored.json()["error"]["code"] == "tenant_suspended"
    assert stored.json()["billing_disposition"] == "not_billable"
