"""The shared platform as operators meet it: keys revoked at once on every gateway process, replicas starting on one
database, settings checked at start, and a sweep pass that a broker outage cannot drag out."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from net.guard import tls_context
from processors.common.outbox import Sweeper
from processors.phone.service import PhoneProcessorConfig, phone_outbox
from signalyard.embedded_broker import EmbeddedBroker, free_port
from storage.common.db import SchemaOutOfDate, check_schema
from tests.conftest import PG_URL, fresh_postgres_database, running_stack, stack_settings
from tests.contract.phone.helpers import person
from tests.integration.faults import run_cli
from tests.phone_stack import Stack
from tests.photo_stack import PhotoStack, jpeg
from topics.phone import PhoneTopics


def environment(**settings: str) -> dict[str, str]:
    """This machine's environment with only the given SIGNALYARD_* settings."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith("SIGNALYARD_")}
    return clean | {f"SIGNALYARD_{name.upper()}": value for name, value in settings.items()}


@contextmanager
def gateway_process(stack: Stack | PhotoStack, log: Path, service: str = "phone") -> Iterator[str]:
    """`signalyard gateway SERVICE` as an operator runs a replica, on the stack's broker and database; its base URL."""
    port = free_port()
    env = environment(
        kafka_bootstrap=stack.platform.bootstrap,
        database_url=stack.settings.platform.database_url or "",
        topic_prefix=stack.settings.platform.topic_prefix,
        data_dir=str(log.parent),
        **{f"{service}_port": str(port)},
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "signalyard.cli", "gateway", service],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", verify=tls_context()).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(30)


async def usage(base: str, key: str) -> int:
    async with httpx.AsyncClient(verify=tls_context()) as client:
        response = await client.get(f"{base}/v1/usage", headers={"Authorization": f"Bearer {key}"})
    return response.status_code


async def test_a_revoked_key_is_refused_at_once_by_every_gateway_process(stack: Stack, tmp_path: Path) -> None:
    tenant = await stack.new_tenant()
    with gateway_process(stack, tmp_path / "a.log") as first, gateway_process(stack, tmp_path / "b.log") as second:
        assert [await usage(first, tenant.test_key), await usage(second, tenant.test_key)] == [200, 200]

        revoked = await asyncio.to_thread(
            run_cli, stack.settings.platform.database_url or "", tmp_path, "keys", "revoke", tenant.test_key
        )
        assert revoked.returncode == 0, revoked.stderr

        # the very next request, through either process, with no wait in between
        assert [await usage(second, tenant.test_key), await usage(first, tenant.test_key)] == [401, 401]
        assert await usage(first, tenant.live_key) == 200  # the tenant's other key is untouched


async def test_a_suspended_tenant_is_refused_at_once_by_every_gateway_process(stack: Stack, tmp_path: Path) -> None:
    tenant = await stack.new_tenant()
    with gateway_process(stack, tmp_path / "a.log") as first, gateway_process(stack, tmp_path / "b.log") as second:
        assert await usage(first, tenant.test_key) == 200
        assert await usage(second, tenant.test_key) == 200
        database_url = stack.settings.platform.database_url or ""
        suspended = await asyncio.to_thread(run_cli, database_url, tmp_path, "tenants", "suspend", tenant.id)
        assert suspended.returncode == 0, suspended.stderr
        assert [await usage(second, tenant.test_key), await usage(first, tenant.test_key)] == [403, 403]


async def test_a_revoked_photo_key_is_refused_at_once_by_another_gateway_process(
    photo_stack: PhotoStack, tmp_path: Path
) -> None:
    customer = await photo_stack.new_customer()
    created = (await photo_stack.call(customer.test_key, "POST", "/api/v1/api-keys", json={"name": "ci"})).json()
    with gateway_process(photo_stack, tmp_path / "photo.log", "photo") as replica:
        async with httpx.AsyncClient(base_url=replica, verify=tls_context()) as client:
            keys = await client.get("/api/v1/api-keys", headers={"X-API-Key": created["key"]})
            assert keys.status_code == 200

            revoked = await photo_stack.call(customer.test_key, "DELETE", f"/api/v1/api-keys/{created['id']}")
            assert revoked.status_code == 200

            # the very next request on the other process, with no wait in between
            refused = await client.get("/api/v1/api-keys", headers={"X-API-Key": created["key"]})
            assert (refused.status_code, refused.json()) == (401, {"error": "Invalid API key"})
            other = await client.get("/api/v1/api-keys", headers={"X-API-Key": customer.test_key})
            assert other.status_code == 200  # the account's other keys are untouched


async def test_a_deactivated_photo_subscription_is_refused_at_once_by_another_gateway_process(
    photo_stack: PhotoStack, tmp_path: Path
) -> None:
    customer = await photo_stack.new_customer()
    with gateway_process(photo_stack, tmp_path / "photo.log", "photo") as replica:
        async with httpx.AsyncClient(base_url=replica, verify=tls_context()) as client:
            database_url = photo_stack.settings.platform.database_url or ""
            deactivated = await asyncio.to_thread(
                run_cli, database_url, tmp_path, "customers", "deactivate", customer.id
            )
            assert deactivated.returncode == 0, deactivated.stderr
            image = {"image": ("photo.jpg", jpeg(), "image/jpeg")}
            refused = await client.post(
                "/v1/verify", files=image, data={"policy": "icao"}, headers={"X-API-Key": customer.live_key}
            )
            assert (refused.status_code, refused.json()) == (403, {"error": "This account has no active subscription"})


# ------------------------------------------------------------------------------------ replicas and the schema


@asynccontextmanager
async def empty_database(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
        return
    async with fresh_postgres_database(PG_URL or "") as url:
        yield url


DATABASE_KINDS = ["sqlite"] + (["postgresql"] if PG_URL else [])


@pytest.mark.parametrize("kind", DATABASE_KINDS)
async def test_two_replicas_migrating_together_upgrade_once_and_both_start(kind: str, tmp_path: Path) -> None:
    async with empty_database(kind, tmp_path) as url:
        with pytest.raises(SchemaOutOfDate, match="signalyard migrate"):
            await asyncio.to_thread(check_schema, url)

        env = environment(database_url=url, data_dir=str(tmp_path))
        migrations = [
            subprocess.Popen(
                [sys.executable, "-m", "signalyard.cli", "migrate"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [process.communicate(timeout=120) for process in migrations]
        assert [process.returncode for process in migrations] == [0, 0], outputs
        await asyncio.to_thread(check_schema, url)  # at the newest revision


@pytest.mark.parametrize("command", [["gateway", "phone"], ["processors", "phone"], ["tenants", "list"]])
async def test_a_replica_on_an_old_schema_stops_with_a_message_instead_of_upgrading(
    command: list[str], tmp_path: Path, broker_bootstrap: str
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    done = await asyncio.to_thread(run_cli, url, tmp_path, *command, SIGNALYARD_KAFKA_BOOTSTRAP=broker_bootstrap)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr  # one line, no traceback
    assert "run `signalyard migrate` first" in done.stderr
    with pytest.raises(SchemaOutOfDate):  # and it did not upgrade anything
        await asyncio.to_thread(check_schema, url)


# ----------------------------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SIGNALYARD_PHONE_PORT", "eighty", "a port number (1-65535)"),
        ("SIGNALYARD_PHONE_PORT", "70000", "a port number (1-65535)"),
        ("SIGNALYARD_PHONE_WAIT_MS", "-5", "a whole number of at least 0"),
        (
            "SIGNALYARD_PHONE_RATE_LIMIT",
            "lots",
            "a rate limit such as 50/second, or several such as 100/minute;6000/hour",
        ),
        ("SIGNALYARD_SWEEP_EVERY_S", "0", "a number greater than 0"),
        ("SIGNALYARD_WEBHOOK_LEASE_S", "0", "a number greater than 0"),
        ("SIGNALYARD_TOPIC_PARTITIONS", "1.5", "a whole number greater than 0"),
        ("SIGNALYARD_DATABASE_URL", "mysql://db/x", "a URL starting with sqlite+aiosqlite:// or postgresql+asyncpg://"),
        ("SIGNALYARD_LOG_LEVEL", "loud", "one of debug, info, warning, error"),
    ],
)
def test_a_bad_setting_stops_the_process_with_one_line_naming_it(
    variable: str, value: str, expected: str, tmp_path: Path
) -> None:
    done = run_cli("", tmp_path, "up", **{variable: value})  # an empty database URL is the default
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"signalyard: {variable}={value!r} is not valid: expected {expected}\n"
    assert not (tmp_path / "signalyard.db").exists()  # stopped before touching anything


# ------------------------------------------------------------------------------------------------ the sweeper


async def test_a_sweep_pass_during_a_broker_outage_ends_after_one_publish_timeout(
    database_url: str, tmp_path: Path
) -> None:
    """With the broker down, a pass tries one wave of publishes, sees them time out and stops: the pass takes about
    one publish timeout, not one per pending row (40 rows here)."""
    broker = EmbeddedBroker(log_path=tmp_path / "broker.log")
    broker.start()
    try:
        settings = stack_settings(tmp_path, database_url, None, phone_wait_ms=50, publish_timeout_s=0.5)
        async with running_stack(settings, broker.bootstrap, Stack, with_processor=False) as stack:
            tenant = await stack.new_tenant()
            broker.stop()
            numbers = [f"+1212300{index:04d}" for index in range(40)]
            answers = await asyncio.gather(*(stack.verify(tenant.test_key, person(number)) for number in numbers))
            assert {answer.status_code for answer in answers} == {202}

            attempts = 0

            async def publish(*message: object) -> None:
                nonlocal attempts
                attempts += 1
                await stack.platform.publish(*message)  # type: ignore[arg-type]

            names = PhoneTopics(settings.platform.topic_prefix)
            sweeper = Sweeper(
                stack.db,
                phone_outbox(PhoneProcessorConfig(requested_topic=names.requested, completed_topic=names.completed)),
                publish,
                after=timedelta(0),
                timeout_s=0.5,
                in_flight=4,
            )
            started = time.monotonic()
            assert await sweeper.sweep() == 0
            elapsed = time.monotonic() - started
        assert attempts == 4  # one wave of `in_flight`, then the pass stopped
        assert elapsed < 4 * 0.5, elapsed  # one row at a time would take 40 timeouts (20 s)
    finally:
        broker.stop()
