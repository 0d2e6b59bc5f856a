"""Helpdesk users and their sessions (refresh-token families): units of work (mailed links and kept mail are
storage/common/mail.py's).

Every secret arrives here already hashed (`gateway.helpdesk.accounts.credentials.digest`). Using a link and rotating a
refresh token are conditional updates: of two requests racing on one token, exactly one wins."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection

from storage.common.db import per_dialect
from storage.helpdesk.models import RefreshToken, Session, User
from wire.ids import new_uuid

USERS = cast(Table, User.__table__)
SESSIONS = cast(Table, Session.__table__)
REFRESH_TOKENS = cast(Table, RefreshToken.__table__)


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    email: str
    email_verified: bool
    name: str
    avatar_url: str | None
    organization_id: str | None
    role: str | None
    preferences: dict[str, Any]
    password_hash: str | None
    created_at: datetime
    updated_at: datetime
    deactivated_at: datetime | None = None


def _user(row: Any) -> UserRecord:
    return UserRecord(**{field: getattr(row, field) for field in UserRecord.__dataclass_fields__})


_USER_BY_ID = select(USERS).where(USERS.c.id == bindparam("user_id"))


def user_by_id(connection: Connection, user_id: str) -> UserRecord | None:
    row = connection.execute(_USER_BY_ID, {"user_id": user_id}).first()
    return _user(row) if row else None


def user_by_email(connection: Connection, email: str) -> UserRecord | None:
    row = connection.execute(select(USERS).where(USERS.c.email == email.strip().lower())).first()
    return _user(row) if row else None


_INSERT_USER = per_dialect(lambda insert_: insert_(USERS).on_conflict_do_nothing(index_elements=["email"]))


def signed_in_by_email(connection: Connection, email: str, now: datetime) -> UserRecord:
    """The user whose address a sign-in link just proved: created on first sign-in, marked verified otherwise."""
    address = email.strip().lower()
    found = user_by_email(connection, address)
    if found is None:  # two links of one new address opened at once: the second insert does nothing
        connection.execute(
            _INSERT_USER[connection.dialect.name].values(
                id=new_uuid(),
                email=address,
                email_verified=True,
                name="",
                preferences={},
                created_at=now,
                updated_at=now,
            )
        )
    elif not found.email_verified:
        connection.execute(update(USERS).where(USERS.c.id == found.id).values(email_verified=True, updated_at=now))
    user = user_by_email(connection, address)
    assert user is not None
    return user


def set_password_hash(connection: Connection, user_id: str, password_hash: str | None, now: datetime) -> bool:
    """Store a new password hash; None removes the password (a reset link was used: a new one is to be set)."""
    result = connection.execute(
        update(USERS).where(USERS.c.id == user_id).values(password_hash=password_hash, updated_at=now)
    )
    return result.rowcount == 1


PROFILE = frozenset({"name", "avatar_url", "preferences"})
"""What a user may change of their own profile."""


def update_profile(connection: Connection, user_id: str, changes: Mapping[str, Any], now: datetime) -> UserRecord:
    """The user with `changes` (fields of PROFILE) applied."""
    unknown = set(changes) - PROFILE
    if unknown:
        raise ValueError(f"not profile fields: {sorted(unknown)}")
    connection.execute(update(USERS).where(USERS.c.id == user_id).values(**changes, updated_at=now))
    user = user_by_id(connection, user_id)
    if user is None:
        raise LookupError(f"no user {user_id}")
    return user


# Sessions -------------------------------------------------------------------------------------------------------------


class Deactivated(Exception):
    """The user was deactivated by an admin of their organization: no session starts for them."""


def start_session(connection: Connection, user_id: str, refresh_hash: str, now: datetime) -> str:
    """A new session for the user, its first refresh token current; returns the session's id. Raises Deactivated for
    a deactivated user (every way of signing in ends here)."""
    if connection.execute(select(USERS.c.deactivated_at).where(USERS.c.id == user_id)).scalar_one_or_none():
        raise Deactivated(user_id)
    session_id = new_uuid()
    connection.execute(insert(SESSIONS).values(id=session_id, user_id=user_id, created_at=now))
    connection.execute(insert(REFRESH_TOKENS).values(token_hash=refresh_hash, session_id=session_id, issued_at=now))
    return session_id


@dataclass(frozen=True, slots=True)
class Rotation:
    """What presenting a refresh token did: `rotated` (its successor is now current), `concurrent` (it was rotated a
    moment ago, within the grace, by a request sent at the same time: the session stands, no successor is made),
    `reused` (it was rotated earlier: the whole session was revoked), or `refused` (no such token, or its session is
    over)."""

    outcome: Literal["rotated", "concurrent", "reused", "refused"]
    session_id: str | None = None
    user_id: str | None = None


def rotate(
    connection: Connection,
    refresh_hash: str,
    successor_hash: str,
    now: datetime,
    *,
    lifetime: timedelta,
    grace: timedelta,
) -> Rotation:
    """Swap a current refresh token, issued within `lifetime`, for its successor. A token presented again within
    `grace` of its rotation comes from requests a browser sent together (two tabs, a query and a mutation): it is
    let through. Later, it is taken for a stolen copy: the session it belongs to is revoked, so neither the thief's
    nor the owner's tokens work any more."""
    row = connection.execute(
        select(
            REFRESH_TOKENS.c.session_id,
            REFRESH_TOKENS.c.issued_at,
            REFRESH_TOKENS.c.rotated_at,
            SESSIONS.c.user_id,
            SESSIONS.c.revoked_at,
        )
        .join(SESSIONS, SESSIONS.c.id == REFRESH_TOKENS.c.session_id)
        .where(REFRESH_TOKENS.c.token_hash == refresh_hash)
    ).first()
    if row is None or row.revoked_at is not None or row.issued_at <= now - lifetime:
        return Rotation("refused")
    if row.rotated_at is not None and now - row.rotated_at <= grace:
        return Rotation("concurrent", row.session_id, row.user_id)
    swapped = connection.execute(
        update(REFRESH_TOKENS)
        .where(REFRESH_TOKENS.c.token_hash == refresh_hash, REFRESH_TOKENS.c.rotated_at.is_(None))
        .values(rotated_at=now)
    )
    if swapped.rowcount != 1:  # rotated before: by a racing request just now (read as rotated_at is None above)
        rotated_at = connection.execute(
            select(REFRESH_TOKENS.c.rotated_at).where(REFRESH_TOKENS.c.token_hash == refresh_hash)
        ).scalar_one()
        if now - rotated_at <= grace:
            return Rotation("concurrent", row.session_id, row.user_id)
        revoke(connection, row.session_id, "refresh_reuse", now)
        return Rotation("reused", row.session_id, row.user_id)
    connection.execute(
        insert(REFRESH_TOKENS).values(token_hash=successor_hash, session_id=row.session_id, issued_at=now)
    )
    return Rotation("rotated", row.session_id, row.user_id)


@dataclass(frozen=True, slots=True)
class Member:
    """Where a live session's user belongs: their organization and role (None before signup completes)."""

    organization_id: str | None
    role: str | None


_ALIVE = (
    select(SESSIONS.c.id, USERS.c.organization_id, USERS.c.role)
    .join(USERS, USERS.c.id == SESSIONS.c.user_id)
    .where(
        SESSIONS.c.id.in_(bindparam("ids", expanding=True)),
        SESSIONS.c.revoked_at.is_(None),
        USERS.c.deactivated_at.is_(None),
    )
)


def alive(connection: Connection, session_ids: Collection[str]) -> dict[str, Member]:
    """Which of these sessions are still alive, their user active, and where each user belongs: one query for a
    whole batch of requests."""
    if not session_ids:
        return {}
    rows = connection.execute(_ALIVE, {"ids": list(session_ids)})
    return {row.id: Member(row.organization_id, row.role) for row in rows}


def revoke(connection: Connection, session_id: str, because: str, now: datetime) -> bool:
    """End a session (sign-out, reuse of a rotated token); False when it was over already."""
    result = connection.execute(
        update(SESSIONS)
        .where(SESSIONS.c.id == session_id, SESSIONS.c.revoked_at.is_(None))
        .values(revoked_at=now, revoked_because=because)
    )
    return result.rowcount == 1


def replace_password(
    connection: Connection,
    user_id: str,
    password_hash: str | None,
    because: str,
    now: datetime,
    *,
    keep: str | None = None,
) -> int:
    """A new password hash (None: none, after a reset) and, in the same transaction, every live session of the user
    ended but `keep`: whoever knew the old password is signed out with it. Returns how many sessions ended."""
    set_password_hash(connection, user_id, password_hash, now)
    return end_sessions(connection, user_id, because, now, keep=keep)


def end_sessions(connection: Connection, user_id: str, because: str, now: datetime, *, keep: str | None = None) -> int:
    """Every live session of the user ended but `keep`; how many ended."""
    result = connection.execute(
        update(SESSIONS)
        .where(SESSIONS.c.user_id == user_id, SESSIONS.c.revoked_at.is_(None), SESSIONS.c.id != (keep or ""))
        .values(revoked_at=now, revoked_because=because)
    )
    return result.rowcount
