"""Rate limit per key (the `limits` library: in memory, or Redis when configured) and the monthly spend cap."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import cast

from limits import parse
from limits.aio.storage import Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string
from sqlalchemy.exc import SQLAlchemyError

from gateway.phone.errors import PhoneError
from storage import phone as requests
from storage import tenants
from storage.db import Database
from storage.tenants import KeyOwner
from topics.phone import SKU


class Enforcement:
    def __init__(self, db: Database, rate_limit: str, storage_url: str | None) -> None:
        self.db = db
        self.item = parse(rate_limit)
        self.storage = cast(Storage, storage_from_string(storage_url or "async+memory://"))
        self.limiter = MovingWindowRateLimiter(self.storage)

    async def rate_limit(self, owner: KeyOwner) -> None:
        try:
            if await self.limiter.hit(self.item, owner.key_id):
                return
            reset_at, _ = await self.limiter.get_window_stats(self.item, owner.key_id)
        except Exception as error:  # the store is down: refuse rather than serve unmetered (fail closed)
            raise PhoneError("enforcement_unavailable", "rate limits cannot be checked right now; retry") from error
        retry_after = max(1, math.ceil(reset_at - time.time()))
        raise PhoneError("rate_limited", f"rate limit of {self.item} per key reached", retry_after=retry_after)

    async def spend_cap(self, owner: KeyOwner) -> None:
        if owner.spend_cap_microdollars is None:
            return
        now = datetime.now(UTC)
        try:
            async with self.db.read() as session:
                price = await tenants.unit_price(session, owner.tenant_id, SKU)
                spent = await requests.month_spend(session, owner.tenant_id, owner.environment, now)
        except SQLAlchemyError as error:
            raise PhoneError("enforcement_unavailable", "the spend cap cannot be checked right now") from error
        if spent + price > owner.spend_cap_microdollars:
            raise PhoneError(
                "spend_cap_reached",
                "the tenant's monthly spend cap is reached",
                retry_after=seconds_to_next_month(now),
            )

    async def ping(self) -> None:
        if not await self.storage.check():
            raise ConnectionError("rate limit store unreachable")


def seconds_to_next_month(now: datetime) -> int:
    following = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    return max(1, math.ceil((following - now).total_seconds()))
