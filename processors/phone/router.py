"""The FastStream subscriber that feeds accepted verify requests to the phone processor."""

from __future__ import annotations

import asyncio

import structlog
from aiokafka import TopicPartition
from faststream import AckPolicy
from faststream.kafka import KafkaMessage, KafkaRouter

from processors.offsets import OffsetCommitter, records_of
from processors.phone.metrics import FAILED, LAG
from processors.phone.service import PhoneProcessor
from topics.client import batch_subscription
from topics.phone import VerificationRequested

log = structlog.get_logger("signalyard.processors.phone")

GROUP_ID = "signalyard-phone-processors"
REDELIVERY_PAUSE_S = 1.0


def phone_router(processor: PhoneProcessor, *, group_id: str = GROUP_ID, max_records: int = 200) -> KafkaRouter:
    """Consumer-group members share the requested topic's partitions; add members to scale out."""
    router = KafkaRouter()
    committer = OffsetCommitter()

    @router.subscriber(
        processor.config.requested_topic,
        **batch_subscription(VerificationRequested),
        group_id=group_id,
        max_records=max_records,
        auto_offset_reset="earliest",
        ack_policy=AckPolicy.MANUAL,  # redelivered on failure (nack); committed in the background on success
        title="phone-processor",
    )
    async def on_verification_requested(batch: list[VerificationRequested], message: KafkaMessage) -> None:
        try:
            await processor.handle_batch(batch)
        except Exception:
            FAILED.inc()
            log.exception("batch_failed_will_be_redelivered", size=len(batch))
            await asyncio.sleep(REDELIVERY_PAUSE_S)  # a failing dependency is not hammered in a tight loop
            await message.nack()
            return
        committer.processed(message)
        _record_lag(message)

    return router


def _record_lag(message: KafkaMessage) -> None:
    last: dict[TopicPartition, int] = {}
    for record in records_of(message):
        partition = TopicPartition(record.topic, record.partition)
        last[partition] = max(last.get(partition, -1), record.offset)
    for partition, offset in last.items():
        end = message.consumer.highwater(partition)  # type: ignore[attr-defined]
        if end is not None:
            LAG.labels(partition=str(partition.partition)).set(max(end - offset - 1, 0))
