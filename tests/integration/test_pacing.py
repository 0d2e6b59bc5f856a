"""Subscribers fetch less while nothing happens, and nothing is late or lost because of it (topics/common/pacing.py).

These tests also fail if a FastStream or aiokafka upgrade removes what `pace` relies on: the subscriber loop calling
`get_msg`, and the fetcher reading `_fetch_max_wait_ms` each time it builds a fetch request."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from aiokafka.protocol.fetch import FetchRequest
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker

from tests.contract.phone.helpers import person, sandbox
from tests.helpers import until
from tests.phone_stack import Stack
from topics.common.admin import ensure_topics
from topics.common.client import batch_subscription
from topics.common.pacing import IDLE_WAIT_MS, QuietPacer, pace


class Note(msgspec.Struct):
    text: str


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record_fetch_waits(consumer: Any) -> list[int]:
    """The `max_wait_ms` of every fetch request `consumer` sends from now on, as the broker receives it."""
    waits: list[int] = []
    client = consumer._client
    send: Callable[..., Awaitable[Any]] = client.send

    async def recording(node_id: int, request: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(request, FetchRequest):
            waits.append(request._max_wait_ms)
        return await send(node_id, request, *args, **kwargs)

    client.send = recording
    return waits


async def test_a_quiet_group_member_waits_long_at_the_broker_and_short_again_once_a_message_comes(
    broker_bootstrap: str,
) -> None:
    topic = f"pacing.{uuid.uuid4().hex[:8]}"
    await ensure_topics(broker_bootstrap, [topic], 1)
    clock = FakeClock()
    pacer = QuietPacer(5, clock=clock)
    received: list[str] = []
    broker = KafkaBroker(broker_bootstrap, serializer=MsgSpecSerializer(), logger=None)
    subscriber = broker.subscriber(
        topic, **batch_subscription(Note), group_id=f"{topic}.group", auto_offset_reset="earliest"
    )
    pace(subscriber, pacer)

    @subscriber
    async def handle(batch: list[Note]) -> None:
        received.extend(note.text for note in batch)

    async with broker:
        await broker.start()
        await until(lambda: bool(subscriber.consumer and subscriber.consumer.assignment()), "joined its group")
        waits = record_fetch_waits(subscriber.consumer)
        await until(lambda: 5 in waits, "fetches with the busy wait while it has just started")

        clock.now += 3600  # an hour without a record
        await until(lambda: IDLE_WAIT_MS in waits, "fetches with the idle wait once its topic is quiet")

        await broker.publish(Note("after an hour"), topic)
        await until(lambda: received == ["after an hour"], "the message is handled")
        seen = len(waits)
        await until(lambda: 5 in waits[seen:], "fetches with the busy wait again right after the message")


async def test_the_gateway_stops_fetching_results_while_nobody_waits_and_still_answers_with_the_result(
    stack: Stack,
) -> None:
    (waiter,) = [
        subscriber
        for subscriber in stack.platform.broker.subscribers
        if subscriber.topic_names == [stack.topics.completed]  # type: ignore[attr-defined]
    ]
    consumer = waiter.consumer  # type: ignore[attr-defined]
    await until(lambda: bool(consumer.assignment()), "the result subscription has its partitions")
    keys = await stack.new_tenant()

    for last4 in ("0100", "0101", "0102"):
        await until(lambda: consumer.paused() == consumer.assignment(), "nothing fetched while nobody waits")
        response = await stack.verify(keys.test_key, person(phone=sandbox(last4)))
        assert response.status_code == 200, response.text
        assert response.json()["result_state"] == "completed"
    assert consumer.paused() == consumer.assignment()
