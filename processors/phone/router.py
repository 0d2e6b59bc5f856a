"""The FastStream subscriber that feeds accepted verify requests to the phone processor."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from processors.common.consumer import batch_consumer
from processors.phone.service import PhoneProcessor
from topics.phone import VerificationRequested

GROUP_ID = "signalyard-phone-processors"


def phone_router(processor: PhoneProcessor, *, prefix: str = "", max_records: int = 200) -> KafkaRouter:
    """Members of the group `<prefix>{GROUP_ID}` share the requested topic's partitions; add members to scale out.
    The group carries the topic prefix, so deployments sharing a cluster never rebalance each other."""
    return batch_consumer(
        "phone",
        processor.config.requested_topic,
        VerificationRequested,
        processor.handle_batch,
        group_id=prefix + GROUP_ID,
        max_records=max_records,
    )
