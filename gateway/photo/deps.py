"""What every photo route is given: the gateway's parts, wired once by the launcher."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.common.limits import RateLimits
from gateway.common.waiter import ResultWaiter
from gateway.photo.pages.sessions import DashboardSessions
from operations.common.changes import PublishEvent
from operations.common.links import MailedLinks
from operations.common.webhooks import Endpoints
from operations.photo.account import Photo
from storage.common.blobs import BlobStore
from storage.common.db import Database
from topics.photo import VerificationRequested
from wire.signed_urls import SignedUrls

Publish = Callable[[VerificationRequested], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Dashboard:
    """What the dashboard's pages need beyond the API's parts (gateway/photo/pages)."""

    sessions: DashboardSessions
    links: MailedLinks
    """The sign-in links it mails (a first sign-in makes the account)."""
    limits: RateLimits
    """Sign-in attempts: links per address, keys per client address."""
    csrf_secret: str


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
    dashboard: Dashboard
    public_url: str

    @property
    def operations(self) -> Photo:
        """What the operations (operations/photo) are given."""
        return Photo(self.db, self.urls, self.publish_event, self.public_url)
