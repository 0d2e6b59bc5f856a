"""No loss, no double charge: concurrency, a processor killed mid-stream, and a broker that loses its memory."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from sqlalchemy import func, select

from processors.phone.router import GROUP_ID
from signalyard.embedded_broker import EmbeddedBroker
from storage.common.db import Database
from storage.phone.models import LedgerEntry, PhoneRequest
from tests.conftest import running_stack, stack_settings
from tests.contract.phone.helpers import person
from tests.helpers import until
from tests.phone_stack import Stack

pytestmark = pytest.mark.waits  # started early: tests/conftest.py


def distinct_numbers(count: int) -> Iterator[str]:
    """Valid US numbers outside the sandbox's magic 555-01XX range, one per request."""
    for index in range(count):
        yield f"+1212{200 + index // 10000:03d}{index % 10000:04d}"


async def states(db: Database, tenant_id: str) -> dict[str, int]:
    counts = (
        select(PhoneRequest.state, func.count().label("requests"))
        .where(PhoneRequest.tenant_id == tenant_id)
        .group_by(PhoneRequest.state)
    )
    return await db.read(lambda connection: {row.state: row.requests for row in connection.execute(counts)})


async def ledger_rows(db: Database, tenant_id: str) -> list[Any]:
    entries = select(LedgerEntry).where(LedgerEntry.tenant_id == tenant_id)
    return await db.read(lambda connection: list(connection.execute(entries)))


async def test_fifty_concurrent_identical_requests_get_identical_answers_and_one_ledger_row(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    key = str(uuid.uuid4())
    body = person("+12125550100")
    responses = await asyncio.gather(*(stack.verify(tenant.test_key, body, idempotency_key=key) for _ in range(50)))

    assert {response.status_code for response in responses} == {200}
    assert len({response.content for response in responses}) == 1
    ledger = await ledger_rows(stack.db, tenant.id)
    assert [(row.disposition, row.unit_price_microdollars) for row in ledger] == [("billable", 15000)]


def start_processor(settings_env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "signalyard.cli", "processors", "phone"],
        env={**os.environ, **settings_env},
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


async def test_the_processors_commit_what_they_processed_so_a_restart_does_not_redo_it(stack: Stack) -> None:
    """Offsets are committed in the background after each batch: soon after the answers, the consumer group's
    committed offsets reach the end of every partition of the requested topic."""
    tenant = await stack.new_tenant()
    answers = await asyncio.gather(*(stack.verify(tenant.test_key, person(number)) for number in distinct_numbers(20)))
    assert [answer.status_code for answer in answers] == [200] * 20
    topic = stack.topics.requested
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.platform.bootstrap)
    reader = AIOKafkaConsumer(bootstrap_servers=stack.platform.bootstrap)
    await admin.start()
    await reader.start()
    try:
        partitions = [TopicPartition(topic, index) for index in range(stack.platform.partitions)]
        ends = await reader.end_offsets(partitions)

        async def caught_up() -> bool:
            group = stack.settings.platform.topic_prefix + GROUP_ID
            committed = await admin.list_consumer_group_offsets(group, partitions=partitions)
            return all(committed.get(tp) is not None and committed[tp].offset >= ends[tp] for tp in partitions)

        await until(caught_up, "the processors' group committed every offset", timeout_s=5)
    finally:
        await reader.stop()
        await admin.close()


async def test_processor_killed_mid_stream_every_request_finishes_and_none_is_billed_twice(
    broker_bootstrap: str, database_url: str, tmp_path: Path
) -> None:
    settings = stack_settings(tmp_path, database_url, None, phone_wait_ms=50, sweep_after_s=3, sweep_every_s=1)
    env = {
        "SIGNALYARD_KAFKA_BOOTSTRAP": broker_bootstrap,
        "SIGNALYARD_DATABASE_URL": database_url,
        "SIGNALYARD_TOPIC_PREFIX": settings.platform.topic_prefix,
        "SIGNALYARD_SWEEP_AFTER_S": "3",
        "SIGNALYARD_SWEEP_EVERY_S": "1",
        "SIGNALYARD_DATA_DIR": str(tmp_path),
    }
    log = tmp_path / "processors.log"
    async with running_stack(settings, broker_bootstrap, Stack, with_processor=False) as gateway:
        tenant = await gateway.new_tenant()
        first = start_processor(env, log)
        total = 600
        numbers = list(distinct_numbers(total + 1))
        warm_up = await gateway.verify(tenant.test_key, person(numbers.pop()))

        async def joined() -> bool:  # the first member has joined the group and is consuming
            return (await states(gateway.db, tenant.id)) == {"completed": 1}

        await until(joined, "the first processor joined its group", timeout_s=60)

        async def send_all() -> None:
            for chunk in range(0, total, 30):
                responses = await asyncio.gather(
                    *(gateway.verify(tenant.test_key, person(number)) for number in numbers[chunk : chunk + 30])
                )
                assert {response.status_code for response in responses} <= {200, 202}

        sending = asyncio.create_task(send_all())
        try:

            async def some_done() -> bool:
                return (await states(gateway.db, tenant.id)).get("completed", 0) >= 31

            await until(some_done, "31 requests completed", timeout_s=60, every_s=0.02)
            first.send_signal(signal.SIGKILL)  # mid-stream: requests are still arriving and being processed
            first.wait()
            assert not sending.done(), "the kill came too late to interrupt anything"
            await sending
            second = start_processor(env, log)
            try:

                async def all_done() -> bool:
                    return (await states(gateway.db, tenant.id)) == {"completed": total + 1}

                await until(all_done, f"all {total + 1} requests completed", timeout_s=120)
            finally:
                second.terminate()
                second.wait(15)
        finally:
            if first.poll() is None:
                first.kill()
            sending.cancel()
        assert warm_up.status_code in (200, 202)
        ledger = await ledger_rows(gateway.db, tenant.id)
        assert len(ledger) == total + 1
        assert {row.disposition for row in ledger} == {"billable"}


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    broker = EmbeddedBroker(log_path=tmp_path / "broker.log")
    broker.start()
    yield broker
    broker.stop()


async def test_broker_restarted_with_its_memory_lost_the_sweeper_completes_every_pending_request(
    own_broker: EmbeddedBroker, database_url: str, tmp_path: Path
) -> None:
    settings = stack_settings(
        tmp_path, database_url, None, phone_wait_ms=200, sweep_after_s=2, sweep_every_s=0.5, publish_timeout_s=0.5
    )
    async with running_stack(settings, own_broker.bootstrap, Stack) as stack:
        tenant = await stack.new_tenant()
        own_broker.stop()
        numbers = list(distinct_numbers(20))
        responses = await asyncio.gather(*(stack.verify(tenant.test_key, person(n)) for n in numbers))
        assert {response.status_code for response in responses} == {202}
        assert await states(stack.db, tenant.id) == {"pending": 20}

        own_broker.start()  # same port, empty memory: no topics, no offsets, no groups

        async def all_done() -> bool:
            return (await states(stack.db, tenant.id)) == {"completed": 20}

        await until(all_done, "all 20 requests completed", timeout_s=90)
        for response in responses:
            settled = await stack.settle(tenant.test_key, response.json()["request_id"])
            assert settled.status_code == 200
            assert settled.json()["result_state"] == "completed"
        ledger = await ledger_rows(stack.db, tenant.id)
        assert len(ledger) == 20
