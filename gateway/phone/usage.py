"""`GET /v1/usage`: the ledger's totals for the calling key's tenant and environment over a period of UTC dates."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency

from gateway.common.auth import requires
from gateway.phone import docs
from gateway.phone.auth import USAGE_READ, PhonePrincipal
from gateway.phone.deps import PhoneGateway
from gateway.phone.errors import PhoneError
from gateway.phone.schemas import Period, SkuUsage, UsageSummary
from storage.phone import requests
from wire.timestamps import iso


class UsageController(Controller):
    path = "/v1/usage"

    @get("/", guards=[requires(USAGE_READ)], **docs.GET_USAGE)
    async def get_usage(
        self, request: Request[PhonePrincipal, Any, Any], phone: NamedDependency[PhoneGateway]
    ) -> Response[UsageSummary]:
        principal = request.user
        start, end = usage_period(request.query_params.get("from"), request.query_params.get("to"), datetime.now(UTC))
        rows = await phone.db.read(requests.usage, principal.owner_id, principal.account.environment, start, end)
        by_sku = [SkuUsage(r.sku, r.billable_requests, r.cache_hits, r.amount_microdollars) for r in rows]
        return Response(
            UsageSummary(
                tenant_id=principal.owner_id,
                environment=principal.account.environment,
                period=Period(from_=iso(start), to=iso(_last_instant_before(end))),
                by_sku=by_sku,
                total_amount_microdollars=sum(usage.amount_microdollars for usage in by_sku),
            )
        )


def usage_period(from_text: str | None, to_text: str | None, now: datetime) -> tuple[datetime, datetime]:
    """Section 4.3: inclusive UTC dates; `to` defaults to today, `from` to the first day of `to`'s month. A parameter
    given empty (`?to=`) is not a date: only an absent one takes its default."""
    to_day = _date_param("to", to_text) if to_text is not None else now.date()
    from_day = _date_param("from", from_text) if from_text is not None else to_day.replace(day=1)
    if from_day > to_day:
        raise PhoneError("invalid_request", "`from` is after `to`", details={"field": "from"})
    start = datetime.combine(from_day, datetime.min.time(), tzinfo=UTC)
    return start, _midnight_after(to_day)


_END_OF_TIME = datetime.max.replace(tzinfo=UTC)
_CALENDAR_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _midnight_after(day: date) -> datetime:
    """The exclusive end of a UTC day. The last day Python can name (9999-12-31) has no midnight after it: its
    period ends at the last instant Python can name, leaving out that instant alone."""
    if day == date.max:
        return _END_OF_TIME
    return datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=UTC)


def _last_instant_before(end: datetime) -> datetime:
    """The inclusive end of a period shown to the caller (its last microsecond)."""
    return end if end == _END_OF_TIME else end - timedelta(microseconds=1)


def _date_param(name: str, text: str) -> date:
    """A calendar date in the strict YYYY-MM-DD form (fromisoformat alone also takes 20261101 and 2026-W44-1)."""
    try:
        day = date.fromisoformat(text) if _CALENDAR_DATE.fullmatch(text) else None
    except ValueError:
        day = None
    if day is None:
        raise PhoneError("invalid_request", f"`{name}` must be a date like 2026-11-01", details={"field": name})
    return day
