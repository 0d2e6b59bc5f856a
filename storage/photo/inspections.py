"""Self-inspection sessions: made by a key, opened by their link's token (its SHA-256), previewed a bounded number of
times, then submitted or cancelled once: each change is a conditional update, so of two racing requests one wins."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, insert, select, update
from sqlalchemy.engine import Connection, Row

from storage.photo.models import Inspection

INSPECTIONS = cast(Table, Inspection.__table__)


def create(connection: Connection, row: dict[str, Any]) -> None:
    connection.execute(insert(INSPECTIONS).values(status="open", previews=0, **row))


def load(connection: Connection, inspection_id: str) -> Row[Any] | None:
    return connection.execute(select(INSPECTIONS).where(INSPECTIONS.c.id == inspection_id)).first()


def by_token(connection: Connection, token_hash: str) -> Row[Any] | None:
    return connection.execute(select(INSPECTIONS).where(INSPECTIONS.c.token_hash == token_hash)).first()


def listed(
    connection: Connection, customer_id: str, environment: str, *, limit: int, before: tuple[datetime, str] | None
) -> list[Row[Any]]:
    """A customer's inspections in one environment, newest first; `before` (created_at, id) is the cursor."""
    i = INSPECTIONS.c
    statement = select(INSPECTIONS).where(i.customer_id == customer_id, i.environment == environment)
    if before is not None:
        at, inspection_id = before
        statement = statement.where((i.created_at < at) | ((i.created_at == at) & (i.id < inspection_id)))
    return list(connection.execute(statement.order_by(i.created_at.desc(), i.id.desc()).limit(limit)))


def _open(inspection_id: str, now: datetime) -> Any:
    i = INSPECTIONS.c
    return (i.id == inspection_id) & (i.status == "open") & (i.expires_at > now)


def count_preview(connection: Connection, inspection_id: str, now: datetime, limit: int) -> bool:
    """One more preview of an open inspection; False when it is no longer open or has had `limit` already."""
    statement = (
        update(INSPECTIONS)
        .where(_open(inspection_id, now), INSPECTIONS.c.previews < limit)
        .values(previews=INSPECTIONS.c.previews + 1)
    )
    return bool(connection.execute(statement).rowcount)


def cancel(connection: Connection, inspection_id: str, now: datetime) -> bool:
    statement = update(INSPECTIONS).where(_open(inspection_id, now)).values(status="cancelled", cancelled_at=now)
    return bool(connection.execute(statement).rowcount)


def submit(connection: Connection, inspection_id: str, verification_id: str, now: datetime) -> bool:
    """open -> submitted with its verification, once. (Not bound by the expiry: a submission that started in time and
    waited for its verdict still lands.)"""
    i = INSPECTIONS.c
    statement = (
        update(INSPECTIONS)
        .where(i.id == inspection_id, i.status == "open")
        .values(status="submitted", submitted_at=now, verification_id=verification_id)
    )
    return bool(connection.execute(statement).rowcount)
