"""The gateways' per-key rate limit in memory (gateway/common/limits.py without Redis)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from limits import RateLimitItem
from limits.storage import MemoryStorage

from gateway.common import limits
from gateway.common.limits import RateLimits, windows


class Limited(Exception):
    def __init__(self, window: RateLimitItem, retry_after_s: int) -> None:
        self.window = window
        self.retry_after_s = retry_after_s


def in_memory() -> RateLimits:
    return RateLimits(None, limited=Limited, unavailable=RuntimeError)


async def test_a_key_is_refused_past_its_window_with_the_seconds_to_wait() -> None:
    rate_limits = in_memory()
    for _ in range(3):
        await rate_limits.hit("key", windows("3/minute;100/hour"))
    with pytest.raises(Limited) as refused:
        await rate_limits.hit("key", windows("3/minute;100/hour"))
    # the full window is the minute, and it frees its first entry a minute after the first hit, under a second ago
    assert (refused.value.window.amount, refused.value.window.get_expiry()) == (3, 60)
    assert refused.value.retry_after_s in (59, 60)
    await rate_limits.hit("another key", windows("3/minute;100/hour"))


async def test_busy_keys_start_no_thread() -> None:
    """`limits`' own storage starts a timer thread 10 ms after its last one ended, at the next hit."""
    rate_limits = in_memory()
    await rate_limits.hit("key", windows("1000/minute"))
    await asyncio.sleep(0.05)  # the one timer the library starts with its storage has run
    threads = threading.active_count()
    for _ in range(10):
        await asyncio.sleep(0.015)
        await rate_limits.hit("key", windows("1000/minute"))
        assert threading.active_count() == threads


async def test_entries_older_than_their_window_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "EXPIRY_EVERY_S", 0.0)
    rate_limits = in_memory()
    for _ in range(5):
        await rate_limits.hit("key", windows("5/second"))
    time.sleep(1.05)  # the window's own length: its five entries expire
    await rate_limits.hit("key", windows("5/second"))
    storage = rate_limits.limiter.limiter.storage  # type: ignore[union-attr]
    assert isinstance(storage, MemoryStorage)
    assert [len(entries) for entries in storage.events.values()] == [1]
