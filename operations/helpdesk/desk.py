"""What the helpdesk's operations are given, wired once by the launcher for a gateway or a processors process: the
database, the changes runner (which announces webhook events), the cipher of channel and webhook secrets, the clock."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cryptography.fernet import MultiFernet

from operations.common.changes import Changes, PublishEvent
from operations.common.mail import Mailer
from operations.common.webhooks import Endpoints, Words
from operations.helpdesk.billing import Billing
from operations.helpdesk.commerce_app import CommerceApp
from storage.common.blobs import BlobStore
from storage.common.db import Database
from topics.helpdesk import WEBHOOKS
from wire.signed_urls import SignedUrls

WORDS = Words(
    not_found="No webhook subscription with that id in this organization",
    limit_reached="An organization can have at most {limit} webhook subscriptions; delete one first",
    inactive="This webhook subscription is disabled: enable it to send it a test event",
)


@dataclass(frozen=True)
class Helpdesk:
    db: Database
    publish_event: PublishEvent
    """Announces a recorded webhook event to the fan-out (operations.common.changes)."""
    cipher: MultiFernet
    allow_private_targets: bool = False
    """Webhook targets may be private addresses (development and tests only)."""
    mailer: Mailer | None = None
    """Mails invitations (the sign-in mail's path: SMTP, or the kept-mail outbox); None: nothing can be mailed."""
    public_url: str = ""
    """Where people reach the gateway: the links mailed to them start with it."""
    blobs: BlobStore | None = None
    """Where attachments are kept."""
    files: SignedUrls | None = None
    """Signs attachment URLs (operations/helpdesk/attachments.py)."""
    commerce: CommerceApp | None = None
    """The helpdesk's app at the commerce platform, by which admins connect their stores (operations/helpdesk/
    stores.py); None: not configured, stores are added by hand."""
    billing: Billing | None = None
    """The payment provider of paid plans (Stripe), by which admins change their organization's plan (operations/
    helpdesk/plans.py); None: not configured, plans stay as signup made them."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @functools.cached_property
    def changes(self) -> Changes:
        return Changes(self.db, self.publish_event, self.clock)

    @functools.cached_property
    def webhooks(self) -> Endpoints:
        return Endpoints(self.db, WEBHOOKS, self.cipher, WORDS, self.allow_private_targets)
