"""Kafka client settings shared by every producer and consumer of our topics (gateways, processors, benchmarks)."""

from __future__ import annotations

from typing import Final

LINGER_MS: Final = 1
"""How long the producer gathers messages into one produce request."""
FETCH_MAX_WAIT_MS: Final = 5
"""How long a fetch waits at the broker. The embedded broker (Tansu) holds every fetch this long, even when it has
data, so this is the consume latency; longer waits poll less but add latency (measured in bench/README.md)."""
BATCH_TIMEOUT_MS: Final = 5
"""How long a batch subscriber waits for its first message before polling again."""
