"""The declarative base every service's tables share, and its column types."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, DateTime, func, literal, literal_column, select
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite keeps no zone, so it is stored naive and read back as UTC).

    A naive datetime is refused: its zone is a guess, and a guess in a billing window or an expiry is a bug."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} given for a UTC column; pass an aware datetime")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None else None


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UtcDateTime()}


def json_list_has(dialect: str, array: ColumnElement[Any], value: Any) -> ColumnElement[bool]:
    """`value` is an element of the JSON list in `array` (SQLite and PostgreSQL)."""
    elements = "json_each" if dialect == "sqlite" else "json_array_elements_text"
    values = getattr(func, elements)(array).table_valued("value")
    return select(literal(1)).select_from(values).where(values.c.value == value).exists()


def among(column: ColumnElement[Any], words: Sequence[str]) -> ColumnElement[bool]:
    """`column IN ('a', 'b')` with the words written into the statement: a fixed list of our own words (states,
    providers), where `column.in_(words)` binds them as a list that every execution expands into the SQL again."""
    assert all(word.isidentifier() for word in words), "only our own plain words are written into SQL"
    return column.in_([literal_column(f"'{word}'") for word in words])
