"""Committing what a consumer-group member has processed, in the background."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError
from faststream.kafka import KafkaMessage

log = structlog.get_logger("signalyard.processors")


def records_of(message: KafkaMessage) -> tuple[Any, ...]:
    """The Kafka records behind a message: several for a batch subscriber, one otherwise."""
    raw = message.raw_message
    return raw if isinstance(raw, tuple) else (raw,)


class OffsetCommitter:
    """Commits each processed batch's offsets without making the next batch wait for the broker.

    At most one commit is in flight; what is processed meanwhile goes into the next one, `interval_s` later. Only
    processed records are committed, so a crash or a restart redelivers at most the last moments of work (which
    processing takes idempotently) and never skips a record.
    """

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self._due: dict[Any, dict[TopicPartition, int]] = {}
        self._task: asyncio.Task[None] | None = None

    def processed(self, message: KafkaMessage) -> None:
        due = self._due.setdefault(message.consumer, {})
        for record in records_of(message):
            partition = TopicPartition(record.topic, record.partition)
            due[partition] = max(due.get(partition, 0), record.offset + 1)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._commit())

    async def _commit(self) -> None:
        while self._due:
            due, self._due = self._due, {}
            for consumer, offsets in due.items():
                try:
                    await consumer.commit(offsets)
                except KafkaError as error:  # e.g. a rebalance moved the partitions: their new owner redelivers
                    log.warning("offset_commit_failed", error=repr(error))
            await asyncio.sleep(self.interval_s)
