"""Phone verification topics, their partition key and the message types that cross them."""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from topics.common.asyncapi import Channel
from topics.common.environment import Environment

VERIFICATION_REQUESTED = "phone.verification.requested"
"""A gateway accepted a verify request and stored it as `pending`; a processor must look it up."""
VERIFICATION_COMPLETED = "phone.verification.completed"
"""A request reached a terminal state; carries the stored result or failure for stream consumers."""

SubjectType = Literal["person", "business"]
ResultState = Literal["completed", "unavailable", "error"]
FailureStatus = Literal["failed", "rejected", "pending_reconciliation"]
Disposition = Literal["billable", "not_billable", "pending_reconciliation"]
LineType = Literal["mobile", "landline", "voip", "toll_free", "premium", "pager", "unknown"]
CarrierType = Literal["wireless", "landline", "voip", "unknown"]
CallerIdState = Literal["available", "placeholder", "unavailable", "error"]
NameMatchState = Literal["match", "partial_match", "mismatch", "ambiguous", "unavailable"]
ProviderName = Literal["carrier_lookup", "sandbox"]
SKU: Final = "core_phone"

RequestId = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "uuid", "examples": ["3f6c2a4e-8d1b-4c7a-9e2f-5b0d7a9c1e44"]})
]
"""A request's id: a UUID (documentation only: no validation)."""
Timestamp = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "date-time", "examples": ["2026-11-23T14:02:11.482913Z"]})
]
"""An instant in ISO 8601 / RFC 3339, in UTC with a `Z` (documentation only: no validation)."""


class PhoneTopics(msgspec.Struct, frozen=True):
    """The phone topics' names under an optional prefix (one deployment, or one test, per prefix)."""

    prefix: str = ""

    @property
    def requested(self) -> str:
        return self.prefix + VERIFICATION_REQUESTED

    @property
    def completed(self) -> str:
        return self.prefix + VERIFICATION_COMPLETED


def partition_key(phone_e164: str) -> bytes:
    """One number's checks share a partition, so they are processed in the order they were accepted."""
    return phone_e164.encode()


class VerificationRequested(msgspec.Struct, frozen=True, kw_only=True):
    """Work order for one accepted request; the request row in storage is the source of truth."""

    request_id: str
    tenant_id: str
    environment: Environment
    phone_e164: str


class Subject(msgspec.Struct, kw_only=True):
    phone_e164: str
    phone_national: str
    subject_type: SubjectType
    supplied_name: str
    reference_id: str | None


class Checks(msgspec.Struct, kw_only=True):
    requested: list[Literal["core_phone"]]
    completed: list[Literal["core_phone"]]


class RateCenter(msgspec.Struct, kw_only=True):
    city: str | None
    state: str | None


class Phone(msgspec.Struct, kw_only=True):
    valid: bool | None
    country: Literal["US"]
    line_type: LineType
    line_type_raw: str | None
    carrier_name: str | None
    carrier_type: CarrierType
    ported: bool | None
    rate_center: RateCenter | None


class CallerIdView(msgspec.Struct, kw_only=True):
    state: CallerIdState
    name: str | None
    error_code: str | None


class NameMatchView(msgspec.Struct, kw_only=True):
    state: NameMatchState
    score: Annotated[int, msgspec.Meta(ge=0, le=100)] | None
    reasons: list[str]


class Signals(msgspec.Struct, kw_only=True):
    voip_or_virtual: bool | None
    toll_free: bool | None


class Provenance(msgspec.Struct, kw_only=True):
    provider: ProviderName
    sku: str
    cache_hit: bool
    attempted_at: Timestamp


class Billing(msgspec.Struct, kw_only=True):
    disposition: Disposition
    sku: str
    unit_price_microdollars: int
    cache_hit: bool


class VerifyResult(msgspec.Struct, kw_only=True):
    """The contract's VerifyResult (section 2.2), exactly as the API returns it."""

    request_id: RequestId
    environment: Environment
    created_at: Timestamp
    completed_at: Timestamp | None
    product_version: str
    rule_version: str
    result_state: ResultState
    subject: Subject
    checks: Checks
    phone: Phone
    caller_id: CallerIdView
    name_match: NameMatchView
    signals: Signals
    provenance: list[Provenance]
    billing: Billing
    warnings: list[str]


class ErrorDetail(msgspec.Struct, kw_only=True):
    code: str
    message: str


class StoredRequestFailure(msgspec.Struct, kw_only=True):
    """The contract's StoredRequestFailure (section 2.3)."""

    request_id: RequestId
    status: FailureStatus
    error: ErrorDetail
    billing_disposition: Disposition | None


class VerificationCompleted(msgspec.Struct, frozen=True, kw_only=True):
    """A request reached a terminal (or operator-bound) state. Exactly one of `result` and `failure` is set."""

    request_id: str
    tenant_id: str
    environment: Environment
    phone_e164: str
    result: VerifyResult | None = None
    failure: StoredRequestFailure | None = None


def channels(prefix: str = "") -> dict[str, Channel]:
    """Every phone topic under `prefix`, and the one message type it carries."""
    key = "the phone number in E.164, so one number's messages stay in order"
    return {
        prefix + VERIFICATION_REQUESTED: Channel(
            VerificationRequested,
            "A gateway accepted a verify request (stored as pending); processors consume it.",
            key,
        ),
        prefix + VERIFICATION_COMPLETED: Channel(
            VerificationCompleted, "A request reached its outcome; stream consumers may subscribe.", key
        ),
    }
