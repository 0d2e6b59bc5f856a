"""Identifiers our APIs hand out: `<prefix>_<32 hex>`, 128 random bits, so that ids say what they name and can be
neither guessed nor enumerated."""

from __future__ import annotations

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


def is_id(text: str, prefix: str) -> bool:
    """Whether `text` has the form of an id `new_id(prefix)` hands out (a made-up one may still name nothing)."""
    head, _, tail = text.partition("_")
    return head == prefix and len(tail) == 32 and all(char in "0123456789abcdef" for char in tail)
