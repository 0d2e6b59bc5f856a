"""A page of a listing, newest first: its items and whether more follow after the last of them (its id is the next
page's cursor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class Identified(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=Identified)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool

    @property
    def next_cursor(self) -> str | None:
        return self.items[-1].id if self.has_more and self.items else None
