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
"""How long a fetch waits at the broker. The embedded broker (Tansu) holds every fetch this long, even when it has
data, so this is the consume latency; longer waits poll less but add latency (measured in bench/README.md)."""
BATCH_TIMEOUT_MS: Final = 5
"""How long a batch subscriber waits for its first message before polling again."""


def _batch_decoder(message_type: type[T]) -> Callable[[Any], list[T]]:
    """A batch subscriber's `decoder`: each record's JSON straight into `message_type` with msgspec. FastStream's
    own decoder builds a message object per record and goes through `json.loads` and a dict."""
    decode = msgspec.json.Decoder(message_type).decode

    def decoder(batch: Any) -> list[T]:
        return [decode(record.value) for record in batch.raw_message]

    return decoder


def batch_subscription(message_type: type[T], *, wait_ms: int = FETCH_MAX_WAIT_MS) -> dict[str, Any]:
    """What every batch subscriber of ours shares (`subscriber(topic, **batch_subscription(T), ...)`): the fetch
    and batch waits above, and msgspec decoding into `message_type`. A subscriber that is not on a caller's path
    may wait longer (`wait_ms`): its consume latency grows, and it polls the broker that many times less."""
    return {
        "batch": True,
        "fetch_max_wait_ms": wait_ms,
        "batch_timeout_ms": max(BATCH_TIMEOUT_MS, wait_ms),
        "decoder": _batch_decoder(message_type),
    }
