"""Idempotency keys for every gateway: "same key + same body -> the stored answer, another body -> the service's
conflict, still in flight -> the service's pending answer", scoped per route and owner.

The store is the service's own request row (its outbox row): it carries the owner, the key and the body's canonical
hash under a unique index, so accepting a request and recording its key are one insert, and a replay finds the
original by that index. This module holds what every service does with it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

_canonical = msgspec.json.Encoder(order="sorted").encode


def body_hash(body: Any) -> str:
    """SHA-256 of the decoded body re-encoded with sorted keys: key order, whitespace and an explicit `null` for an
    absent optional field do not make two bodies differ (decode into a Struct with defaults first)."""
    return hashlib.sha256(_canonical(body)).hexdigest()


class Record(Protocol):
    """What a stored request must show to be replayed."""

    id: str
    body_hash: str


@dataclass(frozen=True, slots=True)
class IdempotencyRules:
    """A service's rules: whether the header is required, its longest value, and the service's own errors."""

    required: bool
    missing: Callable[[], Exception]
    """No key where one is required."""
    malformed: Callable[[str], Exception]
    """A key that is not 1..max_length printable ASCII characters; gets the reason."""
    conflict: Callable[[Record], Exception]
    """The key was used with another body; gets the original."""
    header: str = "idempotency-key"
    max_length: int = 128

    def key_in(self, headers: Mapping[str, str]) -> str | None:
        key = headers.get(self.header)
        if key is None:
            if self.required:
                raise self.missing()
            return None
        if not 1 <= len(key) <= self.max_length or not all(" " <= char <= "~" for char in key):
            raise self.malformed(f"Idempotency-Key must be 1 to {self.max_length} printable characters")
        return key

    def check(self, original: Record, body_hash: str) -> None:
        """A replay is the same request or a conflict: raise the service's conflict for a different body."""
        if original.body_hash != body_hash:
            raise self.conflict(original)
