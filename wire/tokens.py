"""Opaque tokens (refresh tokens, sign-in, reset and invitation links): made random, stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import secrets


def opaque(kind: str, service: str = "hd") -> str:
    """A new random token, `<service>_<kind>_<43 characters>` (256 bits): the helpdesk's `hd_`, photo's `pc_`, which
    the log redaction knows."""
    return f"{service}_{kind}_{secrets.token_urlsafe(32)}"


def digest(token: str) -> str:
    """What is stored of an opaque token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()
