"""Request and response bodies of the phone API that are the gateway's own (results live in `topics.phone`)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
ReferenceId = Annotated[str, msgspec.Meta(max_length=128)]
AddOns = Annotated[list[Literal["core_phone"]], msgspec.Meta(max_length=1)]


class VerifyRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of `POST /verify` (section 2.1). No properties other than these are allowed."""

    phone: str
    name: Name
    subject_type: Literal["person", "business"]
    reference_id: ReferenceId | None = None
    add_ons: AddOns = []


class Pending(msgspec.Struct):
    request_id: str
    status: Literal["pending"] = "pending"


class Period(msgspec.Struct):
    from_: str = msgspec.field(name="from")
    to: str


class SkuUsage(msgspec.Struct):
    sku: str
    billable_requests: int
    cache_hits: int
    amount_microdollars: int


class UsageSummary(msgspec.Struct):
    tenant_id: str
    environment: Literal["live", "test"]
    period: Period
    by_sku: list[SkuUsage]
    total_amount_microdollars: int
