"""Keyset paging, newest first: a page is the rows after the cursor row on (created_at, id), so rows inserted meanwhile
are neither skipped nor repeated (a newer row lands before the cursor, never inside the listing already read)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, Table, and_, or_, select
from sqlalchemy.engine import Connection


class CursorNotFound(Exception):
    """The cursor is not a row of this listing (the caller's 400)."""


def newest_first(
    connection: Connection,
    table: Table,
    statement: Select[Any],
    scope: ColumnElement[bool],
    *,
    limit: int,
    cursor: str | None,
) -> tuple[list[Any], bool]:
    """Up to `limit` rows of `statement` within `scope`, newest first, after the row whose id is `cursor` (which must be
    in `scope`); and whether more follow. `table` has `created_at` and `id`."""
    statement = statement.where(scope)
    if cursor is not None:
        after = connection.execute(select(table.c.created_at, table.c.id).where(scope, table.c.id == cursor)).first()
        if after is None:
            raise CursorNotFound(cursor)
        at = table.c.created_at
        statement = statement.where(or_(at < after.created_at, and_(at == after.created_at, table.c.id < after.id)))
    rows = list(connection.execute(statement.order_by(table.c.created_at.desc(), table.c.id.desc()).limit(limit + 1)))
    return rows[:limit], len(rows) > limit
