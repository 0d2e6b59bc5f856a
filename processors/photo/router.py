"""The FastStream subscriber that feeds stored images to the image-check processor."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from processors.common.consumer import batch_consumer
from processors.photo.service import PhotoProcessor
from topics.photo import CONSUME_WAIT_MS, VerificationRequested

GROUP_ID = "signalyard-photo-processors"


def photo_router(processor: PhotoProcessor, *, prefix: str = "", max_records: int = 64) -> KafkaRouter:
    """Members of the group `<prefix>{GROUP_ID}` share the requested topic's partitions; add members to scale out.
    The group carries the topic prefix, so deployments sharing a cluster never rebalance each other."""
    return batch_consumer(
        "photo",
        processor.config.requested_topic,
        VerificationRequested,
        processor.handle_batch,
        group_id=prefix + GROUP_ID,
        max_records=max_records,
        wait_ms=CONSUME_WAIT_MS,
    )
