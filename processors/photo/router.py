"""The FastStream subscriber that feeds stored images to the image-check processor."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from processors.common.consumer import batch_consumer
from processors.photo.service import PhotoProcessor
from topics.photo import CONSUME_WAIT_MS, VerificationRequested

GROUP_ID = "signalyard-photo-processors"


def photo_router(processor: PhotoProcessor, *, group_id: str = GROUP_ID, max_records: int = 64) -> KafkaRouter:
    """Consumer-group members share the requested topic's partitions; add members to scale out."""
    return batch_consumer(
        "photo",
        processor.config.requested_topic,
        VerificationRequested,
        processor.handle_batch,
        group_id=group_id,
        max_records=max_records,
        wait_ms=CONSUME_WAIT_MS,
    )
