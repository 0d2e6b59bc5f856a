"""Opaque tokens (refresh tokens, sign-in, reset and invitation links): made random, stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import secrets


def opaque(kind: str) -> str:
    """A new random token, `hd_<kind>_<43 characters>` (256 bits): the log redaction knows the `hd_` prefix."""
    return f"hd_{kind}_{secrets.token_urlsafe(32)}"


def digest(token: str) -> str:
    """What is stored of an opaque token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()
