"""The two environments every key, request and message belongs to: `live` (real, billed) and `test` (the sandbox)."""

from __future__ import annotations

from typing import Literal, TypeGuard

Environment = Literal["live", "test"]
ENVIRONMENTS: tuple[Environment, ...] = ("live", "test")


def is_environment(text: str) -> TypeGuard[Environment]:
    return text in ENVIRONMENTS
