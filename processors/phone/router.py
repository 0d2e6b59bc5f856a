"""The FastStream subscriber that feeds accepted verify requests to the phone processor."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from processors.common.consumer import batch_consumer
from processors.phone.service import PhoneProcessor
from topics.phone import VerificationRequested

GROUP_ID = "signalyard-phone-processors"


def phone_router(processor: PhoneProcessor, *, group_id: str = GROUP_ID, max_records: int = 200) -> KafkaRouter:
    """Consumer-group members share the requested topic's partitions; add members to scale out."""
    return batch_consumer(
        "phone",
        processor.config.requested_topic,
        VerificationRequested,
        processor.handle_batch,
        group_id=group_id,
        max_records=max_records,
    )
