"""Per-key rate limits through `limits`, with any number of windows per key (per second, per minute, per hour...).

In memory by default; in Redis when configured, so that several gateways share one budget. Only a failure of that
store gives the service's "enforcement unavailable" answer (fail closed); anything else is a bug and a 500."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import cast

from limits import RateLimitItem, WindowStats, parse_many, strategies
from limits.aio.storage import Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.errors import StorageError
from limits.storage import MemoryStorage, storage_from_string


def windows(text: str) -> list[RateLimitItem]:
    """`limits` notation, one or more windows: "100/minute;6000/hour". Raises ValueError on anything else."""
    return parse_many(text)


def storage_url(redis_url: str) -> str:
    return redis_url if redis_url.startswith("async+") else "async+" + redis_url


EXPIRY_EVERY_S = 1.0
"""How often, at most, the in-memory windows drop their expired entries (`_Memory`)."""


class _Memory(MemoryStorage):
    """`limits`' in-memory storage, its expired entries dropped by the caller, at most every EXPIRY_EVERY_S. The
    library drops them on a timer thread that it starts 10 ms after the last ended, at the next request: under load a
    new thread every 10 ms, each start blocking the event loop until the thread runs (3% of a busy gateway's time,
    py-spy). A window's verdict does not depend on the pass: it only frees the memory of entries older than it."""

    def __init__(self) -> None:
        super().__init__()
        self._expired_at = time.monotonic()

    def _MemoryStorage__schedule_expiry(self) -> None:  # the library calls it at every hit
        if time.monotonic() - self._expired_at >= EXPIRY_EVERY_S:
            self._expired_at = time.monotonic()
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]


class _InProcess:
    """`limits`' moving window in this process's memory, called as it is, behind the asynchronous limiter's methods:
    its asynchronous flavour hands each pass over the expired entries, which it starts at nearly every request, to a
    thread (bench/rate_limits.py: 85-91 us of CPU a request against 42-46; docs/operations.md, "Rate limits in
    memory")."""

    def __init__(self) -> None:
        self.limiter = strategies.MovingWindowRateLimiter(_Memory())

    async def hit(self, window: RateLimitItem, key: str) -> bool:
        return self.limiter.hit(window, key)

    async def get_window_stats(self, window: RateLimitItem, key: str) -> WindowStats:
        return self.limiter.get_window_stats(window, key)


class RateLimits:
    def __init__(
        self,
        redis_url: str | None,
        *,
        limited: Callable[[RateLimitItem, int], Exception],
        unavailable: Callable[[], Exception],
    ) -> None:
        """`limited(window, retry_after_s)` and `unavailable()` build the service's own errors."""
        self.storage: Storage | None = None
        """Redis's, shared by the gateways; None in memory."""
        self.limiter: MovingWindowRateLimiter | _InProcess
        if redis_url:
            self.storage = cast(Storage, storage_from_string(storage_url(redis_url), wrap_exceptions=True))
            self.limiter = MovingWindowRateLimiter(self.storage)
        else:
            self.limiter = _InProcess()
        self.limited = limited
        self.unavailable = unavailable

    async def hit(self, key: str, limits: Sequence[RateLimitItem]) -> None:
        """Count one request of `key` in every window; raise the service's error when one of them is full. The
        windows are counted in order and the first full one refuses, so a refusal never costs the later ones."""
        try:
            for window in limits:
                if not await self.limiter.hit(window, key):
                    reset_at, _ = await self.limiter.get_window_stats(window, key)
                    raise self.limited(window, max(1, math.ceil(reset_at - time.time())))
        except StorageError as error:
            raise self.unavailable() from error

    async def ping(self) -> None:
        if self.storage is not None and not await self.storage.check():
            raise ConnectionError("rate limit store unreachable")


def seconds_to_next_month(now: datetime) -> int:
    """Retry-After for a monthly cap: until the next calendar month (UTC) begins."""
    following = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    return max(1, math.ceil((following - now).total_seconds()))
