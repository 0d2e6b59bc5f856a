"""What every photo route is given: the gateway's parts, wired once by the launcher."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.common.waiter import ResultWaiter
from gateway.common.webhooks import WebhookStore
from storage.common.blobs import BlobStore
from storage.common.db import Database
from topics.photo import VerificationRequested
from wire.signed_urls import SignedUrls

Publish = Callable[[VerificationRequested], Awaitable[None]]
PublishEvent = Callable[[str, str], Awaitable[None]]
"""publish_event(customer id, event id): announce a recorded webhook event to the fan-out (its row is the outbox)."""


@dataclass(frozen=True, slots=True)
class PhotoGateway:
    db: Database
    blobs: BlobStore
    waiter: ResultWaiter
    publish: Publish
    publish_event: PublishEvent
    urls: SignedUrls
    webhooks: WebhookStore
    wait_s: float
    """How long `POST /v1/verify` waits for its verdict before answering 503 (SIGNALYARD_PHOTO_WAIT_MS)."""
