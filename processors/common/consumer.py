"""The batch consumer every service's processors use: a consumer-group member that hands whole fetched batches to a
handler, redelivers a batch whose handler raised, commits processed offsets in the background, reports lag, and
fetches less often while its topic is quiet."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog
from aiokafka import TopicPartition
from faststream import AckPolicy
from faststream.kafka import KafkaMessage, KafkaRouter

from processors.common.metrics import FAILED_BATCHES, LAG
from processors.common.offsets import OffsetCommitter, records_of
from topics.common.client import FETCH_MAX_WAIT_MS, batch_subscription
from topics.common.pacing import IDLE_WAIT_MS, QuietPacer, pace

log = structlog.get_logger("signalyard.processors")

T = TypeVar("T")
REDELIVERY_PAUSE_S = 1.0
"""After a failed batch: a failing dependency is not hammered in a tight loop."""


def batch_consumer(
    service: str,
    topic: str,
    message_type: type[T],
    handle: Callable[[list[T]], Awaitable[None]],
    *,
    group_id: str,
    max_records: int = 200,
    wait_ms: int = FETCH_MAX_WAIT_MS,
    idle_wait_ms: int = IDLE_WAIT_MS,
) -> KafkaRouter:
    """Members of `group_id` share `topic`'s partitions (add members to scale out); each batch is decoded into
    `message_type` and handled whole. A batch is committed only once handled, so nothing is skipped. Fetches wait
    `wait_ms` while records come, longer while the topic is quiet, up to `idle_wait_ms` (`QuietPacer`)."""
    router = KafkaRouter()
    committer = OffsetCommitter()

    subscriber = router.subscriber(
        topic,
        **batch_subscription(message_type, wait_ms=wait_ms),
        group_id=group_id,
        max_records=max_records,
        auto_offset_reset="earliest",
        ack_policy=AckPolicy.MANUAL,  # redelivered on failure (nack); committed in the background on success
        title=group_id,
    )
    pace(subscriber, QuietPacer(wait_ms, idle_wait_ms))

    @subscriber
    async def on_batch(batch: list[Any], message: KafkaMessage) -> None:
        try:
            await handle(batch)
        except Exception:
            FAILED_BATCHES.labels(service).inc()
            log.exception("batch_failed_will_be_redelivered", service=service, size=len(batch))
            await asyncio.sleep(REDELIVERY_PAUSE_S)
            await message.nack()
            return
        committer.processed(message)
        _record_lag(service, message)

    return router


def _record_lag(service: str, message: KafkaMessage) -> None:
    last: dict[TopicPartition, int] = {}
    for record in records_of(message):
        partition = TopicPartition(record.topic, record.partition)
        last[partition] = max(last.get(partition, -1), record.offset)
    for partition, offset in last.items():
        end = message.consumer.highwater(partition)  # type: ignore[attr-defined]
        if end is not None:
            LAG.labels(service, partition.topic, str(partition.partition)).set(max(end - offset - 1, 0))
