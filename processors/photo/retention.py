"""Image retention: an image is deleted `retention` after its verification; the verification keeps its verdict and
its `image_url` becomes null. Blobs that no verification names (a gateway stopped between storing an image and
writing its row) are deleted a day later than that."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import structlog

from storage.common.blobs import BlobStore
from storage.common.db import Database
from storage.photo import verifications

log = structlog.get_logger("signalyard.processors.photo")

BATCH = 500
ORPHAN_MARGIN = timedelta(days=1)
"""Past the retention, every blob is deleted whatever names it: by then no verification still holds its image."""


async def expire_images(db: Database, blobs: BlobStore, retention: timedelta, now: datetime) -> int:
    """One retention pass: the images of verifications created more than `retention` before `now` are deleted and
    forgotten, in batches; then any blob written before `now - retention - ORPHAN_MARGIN`. How many were deleted."""
    deleted = 0
    while True:
        expired = await db.read(verifications.expired_images, now - retention, BATCH)
        for _, image_key in expired:
            await blobs.delete(image_key)
        await db.write(verifications.forget_images, [i for i, _ in expired])
        deleted += len(expired)
        if len(expired) < BATCH:
            break
    return deleted + await blobs.delete_older_than(now - retention - ORPHAN_MARGIN)


async def keep_images_for(db: Database, blobs: BlobStore, retention: timedelta, every_s: float = 3600) -> None:
    """A retention pass every `every_s` seconds, until cancelled."""
    while True:
        try:
            if deleted := await expire_images(db, blobs, retention, datetime.now(UTC)):
                log.info("images_expired", deleted=deleted)
        except Exception:  # retried at the next pass; an image kept a little longer is no loss
            log.exception("image_retention_failed")
        await asyncio.sleep(every_s)
