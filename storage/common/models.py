"""The declarative base every service's tables share, and its column types."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, DateTime, func, literal, select
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
