"""Timestamps on the wire: how our APIs and deliveries write an instant, and how old a signed timestamp may be."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

TimeSpec = Literal["auto", "milliseconds", "microseconds"]


def iso(at: datetime, timespec: TimeSpec = "auto") -> str:
    """`at` in ISO 8601, in UTC, with a `Z`: `auto` drops a zero fraction, the others always write theirs."""
    return at.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def is_fresh(sent_at: str | int, now: float, tolerance_s: float) -> bool:
    """Whether a signed timestamp (UNIX seconds, as a header carries it) is within `tolerance_s` of `now`, on either
    side: an older one is a replay, a later one a clock far off. Anything that is not a whole number is not fresh."""
    try:
        seconds = int(sent_at)
    except ValueError:
        return False
    return abs(now - seconds) <= tolerance_s
