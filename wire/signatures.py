"""Signature schemes: how outgoing deliveries are signed, and the constant-time comparison every check uses."""

from __future__ import annotations

import hashlib
import hmac


def hex_hmac_sha256(secret: bytes, body: bytes) -> str:
    """Lowercase hex HMAC-SHA256 of the raw body, keyed by the secret."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def same(expected: str | bytes, given: str | bytes) -> bool:
    """Whether two signatures are equal, in time that does not depend on where they differ."""
    if isinstance(expected, str):
        expected = expected.encode()
    if isinstance(given, str):
        given = given.encode()
    return hmac.compare_digest(expected, given)
