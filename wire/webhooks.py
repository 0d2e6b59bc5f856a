"""What a service's outgoing webhooks look like: the body every endpoint receives, the secret, the headers, the retry
schedule and what a failing endpoint becomes, the request timeout, the target URLs allowed and the endpoint
operations its API offers. The delivery engine, the endpoint store and the endpoint routes all read one profile, so
that nothing branches on a service's name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec

from wire.addresses import check_target_url
from wire.signatures import hex_hmac_sha256
from wire.timestamps import iso

Operation = Literal["create", "list", "update", "delete", "test"]
"""Endpoint operations an API may offer: update changes `events` and `enabled`; test sends one endpoint a test event."""
SecretPolicy = Literal["generated", "optional"]
"""`generated`: the service makes each endpoint's secret (shown once at creation) and every delivery is signed.
`optional`: the user may give a secret at creation; deliveries to an endpoint without one carry no signature."""
Envelope = Callable[[str, str, datetime, Any], bytes]
"""(event id, event type, created at, data) -> the exact bytes every endpoint receives and that are signed."""
Signature = Callable[[bytes, bytes, int], str]
"""(secret, body, timestamp sent) -> the signature header's value."""

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
"""Waits between attempts: ten attempts over 71 h 36 min."""
FIVE_RETRIES_OVER_A_DAY = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=24),
)
"""Waits between attempts: the first delivery, then retries 1 min, 5 min, 30 min, 2 h and 24 h apart."""


class _IdTypeCreatedAt(msgspec.Struct):
    id: str
    type: str
    created_at: str
    data: Any


class _EventTimestamp(msgspec.Struct):
    event: str
    timestamp: str
    data: Any


_encode = msgspec.json.Encoder().encode


def id_type_created_at(event_id: str, event_type: str, created_at: datetime, data: Any) -> bytes:
    """`{"id", "type", "created_at", "data"}`: the event's id travels in the body."""
    return _encode(_IdTypeCreatedAt(event_id, event_type, iso(created_at, "microseconds"), data))


def event_timestamp(event_id: str, event_type: str, created_at: datetime, data: Any) -> bytes:
    """`{"event", "timestamp", "data"}`: the event's id travels in the delivery-id header only."""
    return _encode(_EventTimestamp(event_type, iso(created_at, "microseconds"), data))


def body_hmac(secret: bytes, body: bytes, _timestamp: int) -> str:
    """Lowercase hex HMAC-SHA256 of the raw body, keyed by the secret (the timestamp is sent, not signed)."""
    return hex_hmac_sha256(secret, body)


@dataclass(frozen=True, slots=True)
class WebhookProfile:
    """One service's webhooks."""

    service: str
    """The service name endpoints, events and deliveries are stored under."""
    events: tuple[str, ...]
    """Event types an endpoint may subscribe to."""
    envelope: Envelope
    signature_header: str
    """Carries `signature(secret, body, timestamp)`; sent only when the endpoint has a secret."""
    schedule: tuple[timedelta, ...]
    """The wait after each failed attempt before the next; when they are used up the delivery has failed."""
    timestamp_header: str | None = None
    """Carries the UNIX seconds of the send; None: not sent."""
    delivery_id_header: str | None = None
    """Carries the event's id, the same on every attempt: receivers de-duplicate on it. None: not sent."""
    secret: SecretPolicy = "generated"
    secret_prefix: str = "whsec_"
    """Of the secrets a `generated` policy makes."""
    id_prefix: str = "whk"
    """Of endpoint ids."""
    disabled_status: str = "disabled"
    """The endpoint status written when a delivery's whole schedule failed."""
    spare_recently_delivered: bool = True
    """An endpoint that got any delivery through since the failed delivery was created stays active; False: the
    last failed retry disables it whatever succeeded before."""
    timeout_s: float = 10.0
    """How long one attempt may take, from dialling to the end of the receiver's answer."""
    url_schemes: tuple[str, ...] = ("https",)
    """Schemes a target URL may have (checked at creation; the address is checked at every delivery)."""
    max_endpoints: int = 16
    """Endpoints per owner (deleted ones not counted): enough for every environment and team, few enough that one
    event's fan-out stays small."""
    operations: frozenset[Operation] = frozenset({"create", "list", "delete"})
    test_event: str = "webhook.test"
    """The event type of a test delivery (operation `test`)."""
    signature: Signature = body_hmac
    user_agent: str = "signalyard-webhooks/1.0"

    def __post_init__(self) -> None:
        if any(wait <= timedelta(0) for wait in self.schedule):
            raise ValueError("every wait of a retry schedule must be positive")
        if self.test_event in self.events:
            raise ValueError("the test event is sent on request, never subscribed to")

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

    def check_url(self, url: str, *, allow_private: bool) -> str:
        """`url` if an endpoint may have it: one of `url_schemes`, a host, and no literal address the address policy
        refuses (raises `wire.addresses.TargetUrlRefused`, whose message is for the user)."""
        return check_target_url(url, schemes=self.url_schemes, allow_private=allow_private)

    def headers(self, secret: str | None, body: bytes, timestamp: int, event_id: str) -> dict[str, str]:
        """Every header of a delivery: content type, user agent, and the profile's signature (when the endpoint has
        a secret), timestamp and delivery id."""
        headers = {"Content-Type": "application/json", "User-Agent": self.user_agent}
        if secret is not None:
            headers[self.signature_header] = self.signature(secret.encode(), body, timestamp)
        if self.timestamp_header is not None:
            headers[self.timestamp_header] = str(timestamp)
        if self.delivery_id_header is not None:
            headers[self.delivery_id_header] = event_id
        return headers
