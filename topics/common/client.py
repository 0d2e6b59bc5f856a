"""Kafka client settings shared by every producer and consumer of our topics (gateways, processors, benchmarks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgspec

T = TypeVar("T")

LINGER_MS: Final = 0
"""How long the producer waits to gather messages into one produce request. Not at all: messages that come while a
request is in flight still go out together, and each hop is a millisecond shorter (measured, bench/README.md)."""
FETCH_MAX_WAIT_MS: Final = 5
"""How long a busy subscriber's fetch waits at the broker when no record is there yet. The embedded broker (Tansu)
answers at once when records are there, and otherwise looks again at half the wait, then at three quarters, and so
on: a record that comes meanwhile waits for the next look, a sixth of the wait on average. A longer wait polls less
but adds latency to each hop (docs/operations.md, "Fetch waits"); a quiet subscriber waits longer (`pacing`)."""


def _batch_decoder(message_type: type[T]) -> Callable[[Any], list[T]]:
    """A batch subscriber's `decoder`: each record's JSON straight into `message_type` with msgspec. FastStream's
    own decoder builds a message object per record and goes through `json.loads` and a dict."""
    decode = msgspec.json.Decoder(message_type).decode

    def decoder(batch: Any) -> list[T]:
        return [decode(record.value) for record in batch.raw_message]

    return decoder


def batch_subscription(message_type: type[T], *, wait_ms: int = FETCH_MAX_WAIT_MS) -> dict[str, Any]:
    """What every batch subscriber of ours shares (`subscriber(topic, **batch_subscription(T), ...)`, then
    `pacing.pace(subscriber, ...)`): the fetch wait above while busy, and msgspec decoding into `message_type`. A
    subscriber that is not on a caller's path may wait longer (`wait_ms`): its consume latency grows, and it polls
    the broker that many times less."""
    return {
        "batch": True,
        "fetch_max_wait_ms": wait_ms,
        "decoder": _batch_decoder(message_type),
    }
