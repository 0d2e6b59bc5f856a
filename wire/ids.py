"""Identifiers our APIs hand out: `<prefix>_<32 hex>`, 128 random bits, so that ids say what they name and can be
neither guessed nor enumerated."""

from __future__ import annotations

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"
