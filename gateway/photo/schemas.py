"""Request and response bodies of the photo API (sections 2 and 4), exactly as the contract names their fields."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar.params import Parameter

from operations.photo.verifications import MAX_NOTE
from topics.photo import Inspection, Timestamp, Verification
from wire.text import LINE

Scope = Literal["full", "verify_only"]
PageSize = Annotated[int, Parameter(ge=1, le=100, description="Page size, 1 to 100")]


_AFTER = "The `next_cursor` of the previous page ({} id): the page starts after it"
VerificationCursor = Annotated[
    str | None, Parameter(description=_AFTER.format("a verification"), pattern=r"^ver_[0-9a-f]{32}$")
]
InspectionCursor = Annotated[
    str | None, Parameter(description=_AFTER.format("an inspection"), pattern=r"^ins_[0-9a-f]{32}$")
]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=LINE, examples=["Checkout app"])]
KeyId = Annotated[str, msgspec.Meta(examples=["key_0b6f8a3c9d2e4f1a8b7c6d5e4f3a2b1c"])]
WebhookId = Annotated[str, msgspec.Meta(examples=["whk_5d2c1b0a9f8e4d7c6b5a4f3e2d1c0b9a"])]


class CreateKeyRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: Name
    scope: Scope = "full"
    expires_at: (
        Annotated[
            str,
            msgspec.Meta(
                description="An ISO 8601 time in the future (UTC when it has no zone); omitted: never expires",
                examples=["2027-06-30T00:00:00Z"],
                extra_json_schema={"format": "future-date-time"},
            ),
        ]
        | None
    ) = None


class KeyObject(msgspec.Struct, kw_only=True):
    """Section 2.1, as listed: no secret, no `customer_id`."""

    id: KeyId
    name: str
    key_prefix: Annotated[str, msgspec.Meta(examples=["pc_test_3f9a…"])]
    scope: Scope
    active: bool
    rate_limit_per_minute: int
    rate_limit_per_hour: int
    last_used_at: Timestamp | None
    created_at: Timestamp
    expires_at: Timestamp | None


class KeyCreated(msgspec.Struct, kw_only=True):
    """Section 2.1 on create: the key object without `last_used_at` and `customer_id`, plus `key`, shown this once."""

    id: KeyId
    name: str
    key_prefix: str
    scope: Scope
    active: bool
    rate_limit_per_minute: int
    rate_limit_per_hour: int
    created_at: Timestamp
    expires_at: Timestamp | None
    key: Annotated[str, msgspec.Meta(examples=["pc_test_3f9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b"])]


class KeyList(msgspec.Struct):
    data: list[KeyObject]


class KeyRevoked(msgspec.Struct, kw_only=True):
    id: KeyId
    active: Literal[False]
    revoked_at: Timestamp


EventType = Literal["verification.completed", "verification.reviewed", "inspection.submitted"]


class CreateWebhookRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=2048,
            pattern=r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[!-~]*)?$",
            description="An HTTPS URL on a public host",
            examples=["https://hooks.example.com/photo-verifications"],
        ),
    ]
    events: Annotated[list[EventType], msgspec.Meta(min_length=1)]


class WebhookEndpoint(msgspec.Struct, kw_only=True):
    """Section 2.2, as listed: without `signing_secret`."""

    id: WebhookId
    url: str
    events: list[EventType]
    status: Literal["active", "disabled"]
    created_at: Timestamp


class WebhookCreated(msgspec.Struct, kw_only=True):
    id: WebhookId
    url: str
    events: list[EventType]
    status: Literal["active", "disabled"]
    created_at: Timestamp
    signing_secret: Annotated[str, msgspec.Meta(examples=["whsec_9b1f4c2a7d3e8f6a0b5c9d2e1f7a4b8c"])]


class WebhookList(msgspec.Struct):
    data: list[WebhookEndpoint]


class WebhookDeleted(msgspec.Struct, kw_only=True):
    id: WebhookId
    deleted: Literal[True]


Policy = Literal["us_passport", "icao", "profile_photo"]


class VerifyJson(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The JSON form of section 4.3."""

    image: Annotated[str, msgspec.Meta(min_length=1, description="Raw base64, or a data URL `data:image/...;base64,`")]
    policy: str
    metadata: dict[str, Any] | None = None


class VerificationList(msgspec.Struct, kw_only=True):
    data: list[Verification]
    has_more: bool
    next_cursor: str | None
    """Pass as `starting_after` for the next (older) page; null on the last page."""


class ReviewRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    is_compliant: bool
    note: Annotated[str, msgspec.Meta(max_length=MAX_NOTE)] | None = None


class CreateInspectionRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A self-inspection for one recipient."""

    policy: Policy
    reference: Annotated[str, msgspec.Meta(max_length=255, pattern=LINE, examples=["order-7731"])] | None = None
    """Yours, to tell inspections apart (an order, a customer); echoed back."""
    metadata: dict[str, Any] | None = None
    """Free-form, at most 16 KiB as JSON; echoed back in the inspection and its event."""
    expires_in: (
        Annotated[
            float,
            msgspec.Meta(
                ge=300,
                le=2_592_000,
                multiple_of=1,
                description="Whole seconds the link stays usable: 5 minutes to 30 days",
                extra_json_schema={"type": "integer"},
            ),
        ]
        | None
    ) = None
    """Default 7 days. (Read as a float that must be whole: JSON says 600.0 is the integer 600.)"""


class InspectionCreated(Inspection, kw_only=True):
    url: Annotated[
        str,
        msgspec.Meta(
            examples=["https://photo.example.com/inspect/pc_inspect_kL2mN3oP4qR5sT6uV7wX8yZ9aB0cD1eF2gH3iJ4kL5m"]
        ),
    ]
    """The recipient's single-use link: shown in this answer only."""


class InspectionList(msgspec.Struct, kw_only=True):
    data: list[Inspection]
    has_more: bool
    next_cursor: str | None
    """Pass as `starting_after` for the next (older) page; null on the last page."""
