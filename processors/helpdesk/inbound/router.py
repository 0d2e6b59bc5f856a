"""The FastStream subscriber that feeds stored inbound events to the inbound processors."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from processors.common.consumer import batch_consumer
from processors.helpdesk.inbound.service import InboundProcessor
from topics.helpdesk import INBOUND_GROUP, HelpdeskTopics, InboundReceived


def inbound_router(processor: InboundProcessor, topics: HelpdeskTopics, *, max_records: int = 200) -> KafkaRouter:
    """Members of the group `<prefix>signalyard-helpdesk-inbound` share `helpdesk.inbound.received`'s partitions; add
    members to scale out. A sender's events share a partition, so one member handles them, in order."""
    return batch_consumer(
        "helpdesk",
        topics.inbound,
        InboundReceived,
        processor.handle_batch,
        group_id=topics.prefix + INBOUND_GROUP,
        max_records=max_records,
    )
