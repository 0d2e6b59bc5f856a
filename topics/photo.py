"""Photo compliance topics, their partition key and the message types that cross them; its webhook event types and
webhook profile."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from topics.common.asyncapi import Channel
from topics.common.environment import Environment
from wire.webhooks import BACKOFF_OVER_3_DAYS, WebhookProfile, id_type_created_at

VERIFICATION_REQUESTED = "photo.verification.requested"
"""A gateway stored an image and a `pending` verification; an image-check processor must judge it."""
VERIFICATION_COMPLETED = "photo.verification.completed"
"""A verification reached its verdict (or failed); carries the verdict for stream consumers."""
CONSUME_WAIT_MS = 10
"""How long the photo topics' subscribers (the image-check processors, the gateways' waiters) let a fetch wait while
busy, which on the embedded broker bounds a caught-up hop's latency. Judging an image takes about 10 ms of CPU, so
the platform's 5 ms would buy little latency for twice the polling (docs/photo.md, "Performance": 90
verifications/s at 5 ms, 103-105 at 10)."""

POLICIES = ("us_passport", "icao", "profile_photo")
"""The policy identifiers the verify call accepts; the processors' catalogue holds exactly these."""
EVENTS = ("verification.completed", "verification.reviewed", "inspection.submitted")
"""Event types a webhook endpoint may subscribe to (section 6); `inspection.submitted` fires when a self-inspection's
recipient submits their photo."""
WEBHOOKS = WebhookProfile(
    service="photo",
    events=EVENTS,
    envelope=id_type_created_at,
    signature_header="X-Verify-Signature",
    timestamp_header="X-Verify-Timestamp",
    delivery_id_header="X-Verify-Delivery-Id",
    schedule=BACKOFF_OVER_3_DAYS,
    secret="generated",
    secret_prefix="whsec_",
    id_prefix="whk",
    disabled_status="disabled",
    spare_recently_delivered=True,
    timeout_s=10.0,
    url_schemes=("https",),
    max_endpoints=16,
    operations=frozenset({"create", "list", "delete"}),
)
"""Photo's webhooks (docs/photo.md, "Webhook endpoints"): `{id, type, created_at, data}` signed with a generated
`whsec_` secret shown once, `X-Verify-Signature` (hex HMAC-SHA256 of the raw body), `X-Verify-Timestamp` and
`X-Verify-Delivery-Id` (the event id); ten attempts over about 3 days, then `disabled` unless the endpoint got a
delivery through since the failed one was created; HTTPS only; create, list and delete."""

Status = Literal["pending", "completed", "failed"]

VerificationId = Annotated[str, msgspec.Meta(extra_json_schema={"examples": ["ver_4f1c9a0b7d2e4e8a9c3b5d6f7a8e9b0c"]})]
Timestamp = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "date-time", "examples": ["2026-11-24T10:15:02.118Z"]})
]


class PhotoTopics(msgspec.Struct, frozen=True):
    """The photo topics' names under an optional prefix (one deployment, or one test, per prefix)."""

    prefix: str = ""

    @property
    def requested(self) -> str:
        return self.prefix + VERIFICATION_REQUESTED

    @property
    def completed(self) -> str:
        return self.prefix + VERIFICATION_COMPLETED


def partition_key(verification_id: str) -> bytes:
    """Verifications are independent of each other: spread them over every partition."""
    return verification_id.encode()


class VerificationRequested(msgspec.Struct, frozen=True, kw_only=True):
    """Work order for one stored image; the verification row is the source of truth, the image is in the blob
    store under `image_key` (images never cross the broker)."""

    verification_id: str
    customer_id: str
    environment: Environment
    policy: str
    image_key: str


class Check(msgspec.Struct, kw_only=True):
    """One measurable check of the policy: what was measured against which threshold."""

    code: str
    passed: bool
    measured: float | str | None
    threshold: str


class Review(msgspec.Struct, kw_only=True):
    """A human review that changed the verdict."""

    is_compliant: bool
    note: str | None
    reviewed_at: Timestamp
    original_is_compliant: bool


class Verdict(msgspec.Struct, kw_only=True):
    """The judgement of an image against a policy, as stored and as announced."""

    is_compliant: bool
    confidence: Annotated[float, msgspec.Meta(ge=0, le=1)]
    category: str
    violation_reasons: list[str]
    feedback: str
    checks: list[Check]


class VerificationCompleted(msgspec.Struct, frozen=True, kw_only=True):
    """A verification reached its verdict (`completed`) or could not be judged (`failed`, with `error`)."""

    verification_id: str
    customer_id: str
    environment: Environment
    policy: str
    status: Status
    verdict: Verdict | None = None
    error: str | None = None
    preview: bool = False
    """A self-inspection's preview: judged for its recipient's feedback, never billed, listed or announced."""


class Verification(msgspec.Struct, kw_only=True):
    """Section 2.3, plus what the contract leaves open: when, which environment, the checks behind the verdict, the
    caller's metadata and a review. `image_url` is null once the image has been deleted by retention."""

    id: VerificationId
    status: Status
    is_compliant: bool | None
    confidence: float | None
    policy: str
    category: str | None
    violation_reasons: list[str]
    feedback: str | None
    image_url: str | None
    environment: Literal["live", "test"]
    created_at: Timestamp
    completed_at: Timestamp | None
    checks: list[Check]
    metadata: dict[str, Any] | None
    review: Review | None


InspectionStatus = Literal["open", "submitted", "cancelled", "expired"]


class Inspection(msgspec.Struct, kw_only=True):
    """A self-inspection session: one recipient asked, by a single-use link, for a photo against a policy. `url` is the
    link, in the answer to its creation only; `verification` is the verify its submission ran."""

    id: Annotated[str, msgspec.Meta(extra_json_schema={"examples": ["ins_4f1c9a0b7d2e4e8a9c3b5d6f7a8e9b0c"]})]
    status: InspectionStatus
    policy: str
    reference: str | None
    metadata: dict[str, Any] | None
    environment: Literal["live", "test"]
    created_at: Timestamp
    expires_at: Timestamp
    submitted_at: Timestamp | None
    cancelled_at: Timestamp | None
    verification: Verification | None


def channels(prefix: str = "") -> dict[str, Channel]:
    """Every photo topic under `prefix`, and the one message type it carries."""
    key = "the verification id (verifications are independent)"
    return {
        prefix + VERIFICATION_REQUESTED: Channel(
            VerificationRequested, "A gateway stored an image and a pending verification; processors judge it.", key
        ),
        prefix + VERIFICATION_COMPLETED: Channel(
            VerificationCompleted, "A verification has its verdict; stream consumers may subscribe.", key
        ),
    }
