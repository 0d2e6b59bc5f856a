"""What differs between services' webhooks: signature and timestamp headers, how a body is signed, the retry schedule
and what a failed endpoint becomes."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

BACKOFF_OVER_3_DAYS = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=12),
    timedelta(hours=18),
    timedelta(hours=24),
)
"""Waits between attempts: ten attempts over 71 h 36 min (photo)."""
FIVE_RETRIES_OVER_A_DAY = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=24),
)
"""Waits between attempts: the first delivery, then retries 1 min, 5 min, 30 min, 2 h and 24 h apart (helpdesk)."""


def hex_hmac_sha256(secret: bytes, body: bytes, _timestamp: int) -> str:
    """Lowercase hex HMAC-SHA256 of the raw body, keyed by the secret."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class WebhookProfile:
    """One service's webhooks. The secret is the whole `whsec_…` string, as the endpoint's owner was shown it."""

    service: str
    signature_header: str
    timestamp_header: str | None
    """Carries the UNIX seconds of the send; None: not sent."""
    schedule: tuple[timedelta, ...]
    """The wait after each failed attempt before the next; when they are used up the delivery has failed."""
    id_prefix: str = "whk"
    """Of the endpoint ids the service's gateway creates (`create_endpoint(..., id_prefix=)`)."""
    disabled_status: str = "disabled"
    """The endpoint status written when a delivery's whole schedule failed."""
    spare_recently_delivered: bool = True
    """An endpoint that got any delivery through since the failed delivery was created stays active."""
    signature: Callable[[bytes, bytes, int], str] = hex_hmac_sha256
    """(secret, body, timestamp) -> the signature header's value."""
    user_agent: str = "signalyard-webhooks/1.0"

    def __post_init__(self) -> None:
        if any(wait <= timedelta(0) for wait in self.schedule):
            raise ValueError("every wait of a retry schedule must be positive")

    @property
    def max_attempts(self) -> int:
        return len(self.schedule) + 1

    @property
    def window(self) -> timedelta:
        """From the first attempt to the last."""
        return sum(self.schedule, timedelta())

    def next_attempt(self, attempt: int, attempted_at: datetime) -> datetime | None:
        """When attempt number `attempt` (1 for the first) failed at `attempted_at`: when to try again, or None when
        the schedule is used up."""
        if attempt > len(self.schedule):
            return None
        return attempted_at + self.schedule[max(attempt, 1) - 1]

    def sign(self, secret: str, body: bytes, timestamp: int) -> dict[str, str]:
        """Every header of a delivery: signature, timestamp, content type, user agent."""
        headers = {
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
            self.signature_header: self.signature(secret.encode(), body, timestamp),
        }
        if self.timestamp_header is not None:
            headers[self.timestamp_header] = str(timestamp)
        return headers
