"""Identifiers our APIs hand out: the contracts' uuid strings, and `<prefix>_<32 hex>` ids."""

from __future__ import annotations

import secrets

import uuid_utils


def new_uuid() -> str:
    """A row's id where a contract says "string (uuid)": a UUID of version 7 (RFC 9562), its creation's millisecond
    then random bits (`uuid-utils`). Rows made one after the other get ids that sort one after the other, so a
    table's primary-key index grows at its right edge, as its rows do; with random (version 4) ids each insert wrote
    an index page of its own, somewhere in the index (measured: docs/operations.md, "Ids that sort")."""
    return str(uuid_utils.uuid7())


def new_id(prefix: str) -> str:
    """128 random bits, so that an id says what it names and can be neither guessed nor enumerated."""
    return f"{prefix}_{secrets.token_hex(16)}"


def is_id(text: str, prefix: str) -> bool:
    """Whether `text` has the form of an id `new_id(prefix)` hands out (a made-up one may still name nothing)."""
    head, _, tail = text.partition("_")
    return head == prefix and len(tail) == 32 and all(char in "0123456789abcdef" for char in tail)
