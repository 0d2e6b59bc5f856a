"""Phone enforcement: the rate limit per key (the shared multi-window limits) and the monthly spend cap."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from limits import RateLimitItem
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from gateway.common.limits import RateLimits, seconds_to_next_month
from gateway.phone.errors import PhoneError
from storage.common.db import Database
from storage.phone import requests, tenants
from storage.phone.tenants import KeyOwner
from topics.phone import SKU


def _limited(window: RateLimitItem, retry_after: int) -> PhoneError:
    return PhoneError("rate_limited", f"rate limit of {window} per key reached", retry_after=retry_after)


def _unavailable() -> PhoneError:
    return PhoneError("enforcement_unavailable", "rate limits cannot be checked right now; retry")


def _price_and_spend(connection: Connection, owner: KeyOwner, now: datetime) -> tuple[int, int]:
    price = tenants.unit_price(connection, owner.tenant_id, SKU)
    return price, requests.month_spend(connection, owner.tenant_id, owner.environment, now)


class Enforcement:
    def __init__(self, db: Database, rate_limit: Sequence[RateLimitItem], redis_url: str | None) -> None:
        self.db = db
        self.windows = rate_limit
        self.limits = RateLimits(redis_url, limited=_limited, unavailable=_unavailable)

    async def rate_limit(self, owner: KeyOwner) -> None:
        await self.limits.hit(owner.key_id, self.windows)

    async def spend_cap(self, owner: KeyOwner) -> None:
        if owner.spend_cap_microdollars is None:
            return
        now = datetime.now(UTC)
        try:
            price, spent = await self.db.read(_price_and_spend, owner, now)
        except SQLAlchemyError as error:
            raise PhoneError("enforcement_unavailable", "the spend cap cannot be checked right now") from error
        if spent + price > owner.spend_cap_microdollars:
            raise PhoneError(
                "spend_cap_reached",
                "the tenant's monthly spend cap is reached",
                retry_after=seconds_to_next_month(now),
            )

    async def ping(self) -> None:
        await self.limits.ping()
