"""The image-check processor: load a pending verification and its image, judge it against its policy, store the
verdict with its `verification.completed` webhook event, announce it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog
from sqlalchemy.engine import Connection

from operations.common.changes import PublishEvent, announce
from processors.common.metrics import PROCESSED
from processors.common.outbox import Outbox, Publish
from processors.photo.checks import CheckPool
from storage.common.blobs import BlobNotFound, BlobStore
from storage.common.db import Database
from storage.common.webhooks.events import record_event
from storage.photo import verifications
from topics.photo import WEBHOOKS, Verdict, VerificationCompleted, VerificationRequested, partition_key
from wire.signed_urls import SignedUrls

log = structlog.get_logger("signalyard.processors.photo")


@dataclass(frozen=True, slots=True)
class PhotoProcessorConfig:
    requested_topic: str
    completed_topic: str


@dataclass(frozen=True, slots=True)
class Judged:
    row: Any
    verdict: Verdict | None
    error: str | None


class PhotoProcessor:
    """Judges stored images. Every state change is conditional (`pending` -> terminal once): redelivery is harmless."""

    def __init__(
        self,
        db: Database,
        *,
        blobs: BlobStore,
        checks: CheckPool,
        urls: SignedUrls,
        publish: Publish,
        publish_event: PublishEvent,
        config: PhotoProcessorConfig,
    ) -> None:
        self.db = db
        self.blobs = blobs
        self.checks = checks
        self.urls = urls
        self.publish = publish
        self.publish_event = publish_event
        self.config = config

    async def handle_batch(self, batch: list[VerificationRequested]) -> None:
        ids = list(dict.fromkeys(message.verification_id for message in batch))
        rows = await self.db.read(verifications.load, ids)
        pending = [rows[i] for i in ids if i in rows and rows[i].state == "pending"]
        if not pending:
            return
        judged = await asyncio.gather(*(self._judge(row) for row in pending))
        now = datetime.now(UTC)
        stored = await self.db.write(self._store, judged, now)
        await asyncio.gather(*(self._announce(message, event_id) for message, event_id in stored))

    async def _judge(self, row: Any) -> Judged:
        try:
            image = await self.blobs.get(row.image_key)
        except BlobNotFound:
            return Judged(row, None, "the stored image is missing")
        try:
            verdict = await self.checks.evaluate(image, row.policy)
        except Exception:  # a bug or a broken worker: the verification fails (5xx), and a retry runs it again
            log.exception("check_failed", verification_id=row.id)
            return Judged(row, None, "the image checks failed")
        return Judged(row, msgspec.convert(msgspec.to_builtins(verdict), Verdict), None)

    def _store(
        self, connection: Connection, judged: list[Judged], now: datetime
    ) -> list[tuple[VerificationCompleted, str | None]]:
        """Each verdict (or failure) once, with its webhook event in the same transaction."""
        stored: list[tuple[VerificationCompleted, str | None]] = []
        for item in judged:
            row, event_id = item.row, None
            if item.verdict is None:
                if not verifications.fail(connection, row, item.error or "failed", now):
                    continue
            elif (completed := verifications.complete(connection, row.id, item.verdict, now)) is None:
                continue
            elif not row.preview:  # the event carries the verification as the API shows it
                data = msgspec.to_builtins(verifications.verification_of(completed, self.urls))
                event_id = record_event(connection, WEBHOOKS, row.customer_id, "verification.completed", data)
            message = VerificationCompleted(
                verification_id=row.id,
                customer_id=row.customer_id,
                environment=row.environment,
                policy=row.policy,
                status="completed" if item.verdict is not None else "failed",
                verdict=item.verdict,
                error=item.error,
                preview=row.preview,
            )
            stored.append((message, event_id))
        return stored

    async def _announce(self, message: VerificationCompleted, event_id: str | None) -> None:
        PROCESSED.labels("photo", message.status).inc()
        try:
            await self.publish(message, self.config.completed_topic, partition_key(message.verification_id))
        except Exception:  # a waiting gateway confirms from storage once its wait ends
            log.exception("publish_completed_failed", verification_id=message.verification_id)
        if event_id is not None:
            await announce(self.publish_event, message.customer_id, [event_id])


def photo_outbox(config: PhotoProcessorConfig) -> Outbox:
    """Verifications left `pending` past the deadline are published again (a lost message delays, never loses)."""
    table = verifications.VERIFICATIONS
    return Outbox(
        service="photo",
        table=table,
        columns=[table.c.id, table.c.customer_id, table.c.environment, table.c.policy, table.c.image_key],
        message=lambda row: (
            VerificationRequested(
                verification_id=row.id,
                customer_id=row.customer_id,
                environment=row.environment,
                policy=row.policy,
                image_key=row.image_key,
            ),
            config.requested_topic,
            partition_key(row.id),
        ),
    )
