"""What every photo route is given: the gateway's parts, wired once by the launcher."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.common.waiter import ResultWaiter
from operations.common.changes import PublishEvent
from operations.common.webhooks import Endpoints
from operations.photo.account import Photo
from storage.common.blobs import BlobStore
from storage.common.db import Database
from topics.photo import VerificationRequested
from wire.signed_urls import SignedUrls

Publish = Callable[[VerificationRequested], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class PhotoGateway:
    db: Database
    blobs: BlobStore
    waiter: ResultWaiter
    publish: Publish
    publish_event: PublishEvent
    urls: SignedUrls
    webhooks: Endpoints
    wait_s: float
    """How long `POST /v1/verify` waits for its verdict before answering 503 (SIGNALYARD_PHOTO_WAIT_MS)."""

    @property
    def operations(self) -> Photo:
        """What the operations (operations/photo) are given."""
        return Photo(self.db, self.urls, self.publish_event)
