"""The operator CLI, run as the operator runs it (a separate process), against every database under test; the keys
and tenant changes it makes are checked against the running stack, and the photo customers, plans and key limits it
sets against the running photo gateway."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import inspect

from storage.common.db import Database, create_engine
from storage.helpdesk.models import SEARCH_TABLES
from storage.phone import tenants
from tests.contract.phone.helpers import assert_error, assert_result, assert_retry_after, person
from tests.integration.faults import run_cli
from tests.integration.test_storage import TABLES, empty_database
from tests.phone_stack import Stack
from tests.photo_stack import PhotoStack, jpeg

KEY = re.compile(r"sy_(test|live)_[0-9a-f]{40}")
PHOTO_CUSTOMER = re.compile(
    r"customer (cus_[0-9a-f]{32})\nsandbox key (pc_test_[0-9a-f]{40})\nlive key (pc_live_[0-9a-f]{40})\n"
)
Cli = Callable[..., Awaitable[subprocess.CompletedProcess[str]]]


@pytest.fixture
def cli(database_url: str, tmp_path: Path) -> Cli:
    """`await cli("tenants", "create", "acme")`: the CLI on the session's database, off the event loop."""

    async def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(run_cli, database_url, tmp_path, *args, **env)

    return run


@pytest.fixture
def stack_cli(stack: Stack, tmp_path: Path) -> Cli:
    """The CLI on the running stack's database, so the stack sees what it does."""

    async def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(run_cli, stack.settings.platform.database_url or "", tmp_path, *args, **env)

    return run


@pytest.fixture
def photo_cli(photo_stack: PhotoStack, tmp_path: Path) -> Cli:
    """The CLI on the running photo stack's database."""

    async def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        url = photo_stack.settings.platform.database_url or ""
        return await asyncio.to_thread(run_cli, url, tmp_path, *args, **env)

    return run


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


async def new_tenant(cli: Cli, name: str = "acme", *extra: str) -> str:
    out = ok(await cli("tenants", "create", name, *extra))
    tenant_id = out.strip()
    assert out == tenant_id + "\n", out
    assert str(uuid.UUID(tenant_id)) == tenant_id
    return tenant_id


async def new_key(cli: Cli, tenant_id: str, env: str = "test", *extra: str) -> str:
    out = ok(await cli("keys", "create", "--tenant", tenant_id, "--env", env, *extra))
    lines = out.splitlines()
    assert len(lines) == 1, out
    assert out == lines[0] + "\n", out
    return lines[0]


async def owner_of(database_url: str, key: str) -> tenants.KeyOwner | None:
    db = Database(database_url)
    try:
        return await db.read(tenants.find_key_owner, key)
    finally:
        await db.dispose()


async def tenant_row(database_url: str, tenant_id: str) -> Any:
    db = Database(database_url)
    try:
        return next((row for row in await db.read(tenants.list_tenants) if row.id == tenant_id), None)
    finally:
        await db.dispose()


# ------------------------------------------------------------------------------------------------------ migrate


async def test_migrate_brings_an_empty_database_to_the_newest_schema_and_can_run_again(
    database_url: str, tmp_path: Path
) -> None:
    async with empty_database(database_url, tmp_path) as url:
        for _ in range(2):
            result = await asyncio.to_thread(run_cli, url, tmp_path, "migrate")
            assert ok(result) == "database is at the newest schema\n"
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                tables = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
        finally:
            await engine.dispose()
    assert tables == TABLES | {"alembic_version"} | (SEARCH_TABLES if url.startswith("sqlite") else set())


async def test_migrate_on_the_session_database(cli: Cli) -> None:
    assert ok(await cli("migrate")) == "database is at the newest schema\n"


# ------------------------------------------------------------------------------------------------------ tenants


async def test_tenants_create_prints_only_the_new_tenant_id(cli: Cli, database_url: str) -> None:
    tenant_id = await new_tenant(cli, "Acme Payments")
    tenant = await tenant_row(database_url, tenant_id)
    assert tenant is not None
    assert (tenant.name, tenant.status, tenant.allowed_skus, tenant.spend_cap_microdollars) == (
        "Acme Payments",
        "active",
        ["core_phone"],
        None,
    )
    listed = ok(await cli("tenants", "list")).splitlines()
    assert listed[0] == "id\tstatus\tname"
    assert f"{tenant_id}\tactive\tAcme Payments" in listed[1:]


async def test_tenants_create_with_skus_and_a_spend_cap(cli: Cli, database_url: str) -> None:
    tenant_id = await new_tenant(cli, "capped", "--sku", "core_phone", "--spend-cap-microdollars", "45000")
    tenant = await tenant_row(database_url, tenant_id)
    assert tenant is not None
    assert (tenant.allowed_skus, tenant.spend_cap_microdollars) == (["core_phone"], 45000)


async def test_tenants_set_cap_stores_the_cap(cli: Cli, database_url: str) -> None:
    tenant_id = await new_tenant(cli)
    out = ok(await cli("tenants", "set-cap", tenant_id, "20000"))
    assert tenant_id in out
    assert "20000" in out
    tenant = await tenant_row(database_url, tenant_id)
    assert tenant is not None
    assert tenant.spend_cap_microdollars == 20000


# --------------------------------------------------------------------------------------------------------- keys


async def test_keys_create_prints_exactly_one_line_the_test_key(cli: Cli, database_url: str) -> None:
    tenant_id = await new_tenant(cli)
    result = await cli("keys", "create", "--tenant", tenant_id, "--env", "test")
    out = ok(result)
    key = out.removesuffix("\n")
    assert "\n" not in key
    assert KEY.fullmatch(key), out
    assert key.startswith("sy_test_")
    assert key not in result.stderr  # shown once, on stdout only

    owner = await owner_of(database_url, key)
    assert owner is not None
    assert (owner.tenant_id, owner.environment, owner.tenant_status) == (tenant_id, "test", "active")
    assert owner.scopes == frozenset(tenants.ALL_SCOPES)


async def test_keys_create_env_live_gives_a_live_key(cli: Cli, database_url: str) -> None:
    tenant_id = await new_tenant(cli)
    key = await new_key(cli, tenant_id, "live")
    assert KEY.fullmatch(key)
    assert key.startswith("sy_live_")
    owner = await owner_of(database_url, key)
    assert owner is not None
    assert owner.environment == "live"


async def test_keys_create_scope_limits_the_scopes(cli: Cli, database_url: str) -> None:
    tenant_id = await new_tenant(cli)
    key = await new_key(cli, tenant_id, "test", "--scope", "verify", "--scope", "usage:read")
    owner = await owner_of(database_url, key)
    assert owner is not None
    assert owner.scopes == frozenset({"verify", "usage:read"})

    only_read = await new_key(cli, tenant_id, "test", "--scope", "requests:read")
    owner = await owner_of(database_url, only_read)
    assert owner is not None
    assert owner.scopes == frozenset({"requests:read"})


async def test_keys_create_refuses_an_unknown_scope_or_environment(cli: Cli) -> None:
    tenant_id = await new_tenant(cli)
    for extra in (["--env", "prod"], ["--env", "test", "--scope", "admin"]):
        result = await cli("keys", "create", "--tenant", tenant_id, *extra)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr


# ---------------------------------------------------------------------------------------- against the running stack


async def test_a_cli_key_works_against_the_stack(stack: Stack, stack_cli: Cli) -> None:
    tenant_id = await new_tenant(stack_cli)
    key = await new_key(stack_cli, tenant_id, "test")
    body = assert_result(await stack.verify(key, person("+14155550100")))
    assert body["result_state"] == "completed"
    assert body["billing"]["disposition"] == "billable"
    usage = await stack.get(key, "/v1/usage")
    assert usage.status_code == 200
    assert usage.json()["tenant_id"] == tenant_id


async def test_a_scoped_cli_key_is_refused_outside_its_scopes(stack: Stack, stack_cli: Cli) -> None:
    tenant_id = await new_tenant(stack_cli)
    key = await new_key(stack_cli, tenant_id, "test", "--scope", "usage:read")
    assert_error(await stack.verify(key, person("+14155550100")), 403, "forbidden_scope")
    assert (await stack.get(key, "/v1/usage")).status_code == 200


async def test_a_revoked_key_gets_401(stack: Stack, stack_cli: Cli) -> None:
    tenant_id = await new_tenant(stack_cli)
    key = await new_key(stack_cli, tenant_id, "test")
    assert (await stack.verify(key, person("+14155550100"))).status_code == 200

    assert ok(await stack_cli("keys", "revoke", key)) == "revoked\n"
    assert_error(await stack.verify(key, person("+14155550101")), 401, "unauthorized")
    assert_error(await stack.get(key, "/v1/usage"), 401, "unauthorized")

    again = await stack_cli("keys", "revoke", key)
    assert again.returncode == 2
    assert "no such active key" in again.stderr
    assert again.stdout == ""


async def test_suspend_refuses_the_tenant_and_activate_lets_it_back(stack: Stack, stack_cli: Cli) -> None:
    tenant_id = await new_tenant(stack_cli)
    key = await new_key(stack_cli, tenant_id, "test")

    ok(await stack_cli("tenants", "suspend", tenant_id))
    assert_error(await stack.verify(key, person("+14155550100")), 403, "tenant_suspended")
    assert_error(await stack.get(key, "/v1/usage"), 403, "tenant_suspended")

    ok(await stack_cli("tenants", "activate", tenant_id))
    assert_result(await stack.verify(key, person("+14155550100")))


async def test_prices_set_applies_to_the_next_billable_result(stack: Stack, stack_cli: Cli) -> None:
    tenant_id = await new_tenant(stack_cli)
    key = await new_key(stack_cli, tenant_id, "test")
    out = ok(await stack_cli("prices", "set", "--tenant", tenant_id, "--microdollars", "9000"))
    assert "9000" in out

    body = assert_result(await stack.verify(key, person("+14155550100")))
    assert body["billing"] == {
        "disposition": "billable",
        "sku": "core_phone",
        "unit_price_microdollars": 9000,
        "cache_hit": False,
    }
    usage = (await stack.get(key, "/v1/usage")).json()
    assert usage["total_amount_microdollars"] == 9000


async def test_set_cap_makes_the_stack_refuse_past_the_cap(stack: Stack, stack_cli: Cli) -> None:
    tenant_id = await new_tenant(stack_cli)
    key = await new_key(stack_cli, tenant_id, "test")
    ok(await stack_cli("tenants", "set-cap", tenant_id, "20000"))

    first = assert_result(await stack.verify(key, person("+14155550100")))
    assert first["billing"]["unit_price_microdollars"] == 15000
    refused = await stack.verify(key, person("+14155550101"))
    assert_error(refused, 429, "spend_cap_reached")
    assert_retry_after(refused)

    ok(await stack_cli("tenants", "set-cap", tenant_id, "30000"))
    assert assert_result(await stack.verify(key, person("+14155550101")))["billing"]["disposition"] == "billable"


# ------------------------------------------------------------------------------------------------ photo customers


async def new_customer(cli: Cli, name: str, *extra: str) -> tuple[str, str, str]:
    """`customers create`: the account id, its sandbox key and its live key, and nothing else."""
    out = ok(await cli("customers", "create", name, *extra))
    printed = PHOTO_CUSTOMER.fullmatch(out)
    assert printed is not None, out
    return printed[1], printed[2], printed[3]


async def test_customers_create_prints_an_account_whose_keys_work(photo_stack: PhotoStack, photo_cli: Cli) -> None:
    customer_id, sandbox, live = await new_customer(photo_cli, "Photo Booth Ltd")
    listed = await photo_stack.call(sandbox, "GET", "/api/v1/api-keys")
    assert listed.status_code == 200
    assert {(key["name"], key["key_prefix"]) for key in listed.json()["data"]} == {
        ("sandbox key", sandbox[:12] + "…"),
        ("live key", live[:12] + "…"),
    }
    assert (await photo_stack.verify(live, jpeg())).json()["environment"] == "live"
    lines = ok(await photo_cli("customers", "list")).splitlines()
    assert lines[0] == "id\tplan\tmonthly_cap\tsubscription\tname\temail"
    assert f"{customer_id}\tstarter\t1000\tactive\tPhoto Booth Ltd\t" in lines[1:]


async def test_customers_mails_prints_the_dashboards_kept_sign_in_link(photo_stack: PhotoStack, photo_cli: Cli) -> None:
    address = f"grace.{uuid.uuid4().hex[:8]}@example.com"
    async with httpx.AsyncClient(base_url=photo_stack.base_url) as browser:
        page = await browser.get("/dashboard/sign-in")
        token = re.search(r'name="_csrf_token" value="([^"]+)"', page.text)
        assert token
        sent = await browser.post("/dashboard/sign-in/link", data={"email": address, "_csrf_token": token.group(1)})
        assert sent.status_code == 200
    printed = ok(await photo_cli("customers", "mails", "--to", address))
    assert printed.startswith("--- ")
    assert f"to {address}: Your sign-in link" in printed
    assert "/dashboard/link?token=pc_link_" in printed
    assert (
        ok(await photo_cli("customers", "mails", "--to", "nobody@example.com"))
        == "no kept mail to nobody@example.com\n"
    )


async def test_customers_set_plan_gives_the_plans_cap(photo_stack: PhotoStack, photo_cli: Cli) -> None:
    customer_id, _, live = await new_customer(photo_cli, "capped", "--monthly-cap", "1")
    assert (await photo_stack.verify(live, jpeg())).status_code == 200
    refused = await photo_stack.verify(live, jpeg(colour=(1, 2, 3)))
    assert refused.status_code == 429
    assert refused.json()["error"].startswith("Monthly usage cap of 1 verifications reached")

    out = ok(await photo_cli("customers", "set-plan", customer_id, "growth"))
    assert out == f"customer {customer_id}: plan growth, monthly cap 10000\n"
    assert (await photo_stack.verify(live, jpeg(colour=(1, 2, 3)))).status_code == 200
    assert f"{customer_id}\tgrowth\t10000\tactive\tcapped" in ok(await photo_cli("customers", "list"))


async def test_customers_key_limits_show_in_the_key_list(photo_stack: PhotoStack, photo_cli: Cli) -> None:
    _, sandbox, live = await new_customer(photo_cli, "limited")
    listed = (await photo_stack.call(sandbox, "GET", "/api/v1/api-keys")).json()["data"]
    key_id = next(key["id"] for key in listed if key["key_prefix"] == live[:12] + "…")
    out = ok(await photo_cli("customers", "key-limits", key_id, "--per-minute", "7", "--per-hour", "70"))
    assert out == f"key {key_id}: 7/minute, 70/hour\n"
    listed = (await photo_stack.call(sandbox, "GET", "/api/v1/api-keys")).json()["data"]
    limits = {key["id"]: (key["rate_limit_per_minute"], key["rate_limit_per_hour"]) for key in listed}
    assert limits.pop(key_id) == (7, 70)
    assert list(limits.values()) == [(100, 6000)]  # the sandbox key keeps its own


# ------------------------------------------------------------------------------------------------ unknown tenant

UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize(
    "args",
    [
        ["keys", "create", "--tenant", UNKNOWN, "--env", "test"],
        ["tenants", "suspend", UNKNOWN],
        ["tenants", "activate", UNKNOWN],
        ["tenants", "set-cap", UNKNOWN, "1000"],
        ["prices", "set", "--tenant", UNKNOWN, "--microdollars", "9000"],
    ],
    ids=lambda args: "-".join(args[:2]),
)
async def test_an_unknown_tenant_exits_2_with_a_message_on_stderr(cli: Cli, args: list[str]) -> None:
    result = await cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("signalyard: ")
    assert UNKNOWN in result.stderr
    assert "Traceback" not in result.stderr


async def test_revoking_an_unknown_key_exits_2(cli: Cli) -> None:
    result = await cli("keys", "revoke", "sy_test_" + "0" * 40)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "no such active key" in result.stderr


# ----------------------------------------------------------------------------------------------------- asyncapi


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part]
    return node


async def test_asyncapi_prints_the_topics_document(cli: Cli) -> None:
    result = await cli("asyncapi")
    document = json.loads(ok(result))  # the whole of stdout is the document
    assert document["asyncapi"] == "3.0.0"
    assert document["info"]["title"]
    assert document["info"]["version"]

    channels = document["channels"]
    assert {channel["address"] for channel in channels.values()} == {
        "phone.verification.requested",
        "phone.verification.completed",
        "photo.verification.requested",
        "photo.verification.completed",
        "photo.webhook.events",
        "helpdesk.activity.recorded",
        "helpdesk.webhook.events",
        "helpdesk.inbound.received",
    }
    by_address = {channel["address"]: channel for channel in channels.values()}
    requested = [_resolve(document, m["$ref"]) for m in by_address["phone.verification.requested"]["messages"].values()]
    completed = [_resolve(document, m["$ref"]) for m in by_address["phone.verification.completed"]["messages"].values()]
    # Two services name their messages alike: the document qualifies such names with their module.
    assert [message["name"] for message in requested] == ["topics.phone.VerificationRequested"]
    assert [message["name"] for message in completed] == ["topics.phone.VerificationCompleted"]

    schemas = document["components"]["schemas"]
    requested_schema = schemas["topics.phone.VerificationRequested"]
    assert set(requested_schema["properties"]) == {"request_id", "tenant_id", "environment", "phone_e164"}
    assert set(requested_schema["required"]) == {"request_id", "tenant_id", "environment", "phone_e164"}
    assert requested_schema["properties"]["environment"]["enum"] == ["live", "test"]
    assert _resolve(document, requested[0]["payload"]["$ref"]) == requested_schema
    completed_schema = _resolve(document, completed[0]["payload"]["$ref"])
    assert {"request_id", "tenant_id", "environment", "phone_e164", "result", "failure"} <= set(
        completed_schema["properties"]
    )
    assert "VerifyResult" in schemas
    assert "StoredRequestFailure" in schemas
    for operation in document["operations"].values():
        assert operation["action"] in ("send", "receive")
        assert _resolve(document, operation["channel"]["$ref"]) in channels.values()

    refs = re.findall(r'"\$ref":\s*"([^"]+)"', result.stdout)
    for ref in refs:  # every reference in the document resolves
        _resolve(document, ref)


async def test_asyncapi_addresses_carry_the_topic_prefix(cli: Cli) -> None:
    document = json.loads(ok(await cli("asyncapi", SIGNALYARD_TOPIC_PREFIX="staging.")))
    assert {channel["address"] for channel in document["channels"].values()} == {
        "staging.phone.verification.requested",
        "staging.phone.verification.completed",
        "staging.photo.verification.requested",
        "staging.photo.verification.completed",
        "staging.photo.webhook.events",
        "staging.helpdesk.activity.recorded",
        "staging.helpdesk.webhook.events",
        "staging.helpdesk.inbound.received",
    }
