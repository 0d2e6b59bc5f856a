"""The outbox rows every service keeps: a request row stored `pending` before its message is published, published
again by a sweeper when it stays pending too long; or an outbox no processor of ours consumes, published by a relay
that holds its lease. A service's table has `id`, `state` and `published_at`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Table, func, select, update
from sqlalchemy.engine import Connection

from storage.common import leases


def claim_stale(
    connection: Connection,
    table: Table,
    columns: Sequence[Column[Any]],
    *,
    published_before: datetime,
    now: datetime,
    limit: int,
) -> list[Any]:
    """Stamp a new publish time on up to `limit` rows pending since before `published_before`, oldest first, and
    return their `columns`. The stamp is conditional, so of several sweepers only one claims a row; on PostgreSQL the
    rows another sweeper's claim holds are skipped (two claims locking the same rows in different orders deadlocked)."""
    stale = (
        select(table.c.id)
        .where(table.c.state == "pending", table.c.published_at < published_before)
        .order_by(table.c.published_at)
        .limit(limit)
        .with_for_update(skip_locked=True)  # PostgreSQL: rows another sweeper is claiming are left to it, no deadlock
    )
    claim = (
        update(table)
        .where(table.c.id.in_(stale), table.c.state == "pending")
        .where(table.c.published_at < published_before)
        .values(published_at=now)
        .returning(*columns)
    )
    return list(connection.execute(claim))


def any_stale(connection: Connection, table: Table, *, published_before: datetime) -> bool:
    """Whether a row is pending since before `published_before`: a read, so that an idle relay's passes take no write
    lock (and leave the WAL nothing to copy back)."""
    stale = select(table.c.id).where(table.c.state == "pending", table.c.published_at < published_before).limit(1)
    return connection.execute(stale).first() is not None


def count_pending(connection: Connection, table: Table) -> int:
    return int(connection.execute(select(func.count()).where(table.c.state == "pending")).scalar_one())


def leased_pending(
    connection: Connection,
    table: Table,
    columns: Sequence[Column[Any]],
    *,
    lease: str,
    holder: str,
    now: datetime,
    until: datetime,
    limit: int,
) -> list[Any]:
    """If `holder` holds (or now takes) the lease `lease` (storage/common/leases.py), renewed until `until`: up to
    `limit` pending rows, oldest first, with `columns`; else none. Only the lease's holder publishes, so a row is not
    claimed: it is written once more, when `published`."""
    if not leases.take(connection, lease, holder, now=now, until=until):
        return []
    oldest = select(*columns).where(table.c.state == "pending").order_by(table.c.published_at).limit(limit)
    return list(connection.execute(oldest))


def mark_published(connection: Connection, table: Table, ids: Sequence[str]) -> int:
    """The broker acknowledged these rows: they leave the outbox. Returns how many were still pending."""
    done = connection.execute(
        update(table).where(table.c.id.in_(list(ids)), table.c.state == "pending").values(state="published")
    )
    return done.rowcount
