"""The dashboard's sessions, by their cookie's hash: made by a mailed link or by a `full` key, checked on every
request in one statement that also checks the key a session was made from (revoked or expired: the session is over)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Table, insert, or_, select, update
from sqlalchemy.engine import Connection

from storage.common.keys import KEYS
from storage.photo.models import Customer, DashboardSession
from topics.common.environment import Environment

SESSIONS = cast(Table, DashboardSession.__table__)
_CUSTOMERS = cast(Table, Customer.__table__)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """Who a live session signs in, and what it shows."""

    customer_id: str
    environment: Environment
    key_id: str | None
    """The key it was made from; None for a mailed link's."""
    name: str
    email: str | None


def start(
    connection: Connection,
    token_hash: str,
    customer_id: str,
    environment: Environment,
    *,
    key_id: str | None,
    now: datetime,
    lifetime: timedelta,
) -> None:
    connection.execute(
        insert(SESSIONS).values(
            token_hash=token_hash,
            customer_id=customer_id,
            key_id=key_id,
            environment=environment,
            created_at=now,
            expires_at=now + lifetime,
        )
    )


_ALIVE = (
    select(SESSIONS.c.customer_id, SESSIONS.c.environment, SESSIONS.c.key_id, _CUSTOMERS.c.name, _CUSTOMERS.c.email)
    .join(_CUSTOMERS, _CUSTOMERS.c.id == SESSIONS.c.customer_id)
    .outerjoin(KEYS, KEYS.c.id == SESSIONS.c.key_id)
)


def alive(connection: Connection, token_hash: str, now: datetime) -> SessionRecord | None:
    """The session of that cookie while it is alive: not ended, not expired, and, when a key made it, while that key is
    neither revoked nor expired."""
    key_usable = KEYS.c.revoked_at.is_(None) & or_(KEYS.c.expires_at.is_(None), KEYS.c.expires_at > now)
    row = connection.execute(
        _ALIVE.where(
            SESSIONS.c.token_hash == token_hash,
            SESSIONS.c.ended_at.is_(None),
            SESSIONS.c.expires_at > now,
            or_(SESSIONS.c.key_id.is_(None), key_usable),
        )
    ).first()
    if row is None:
        return None
    return SessionRecord(row.customer_id, row.environment, row.key_id, row.name, row.email)


def end(connection: Connection, token_hash: str, now: datetime) -> bool:
    """Sign out: the session ends at once."""
    statement = (
        update(SESSIONS).where(SESSIONS.c.token_hash == token_hash, SESSIONS.c.ended_at.is_(None)).values(ended_at=now)
    )
    return bool(connection.execute(statement).rowcount)


def switch(connection: Connection, token_hash: str, environment: Environment) -> bool:
    """A mailed link's session shows the other environment's keys and verifications (a key's stays in its own)."""
    statement = (
        update(SESSIONS)
        .where(SESSIONS.c.token_hash == token_hash, SESSIONS.c.key_id.is_(None))
        .values(environment=environment)
    )
    return bool(connection.execute(statement).rowcount)
