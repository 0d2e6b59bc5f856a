"""API keys of every service: only a key's SHA-256 is stored, beside its owner, scopes, environment, expiry and
revocation. Each service says what owns its keys (a phone tenant, a photo customer); the store does not care."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    ColumnElement,
    Index,
    Select,
    String,
    Table,
    UniqueConstraint,
    bindparam,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.models import Base
from topics.common.environment import ENVIRONMENTS
from wire.ids import new_uuid


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (
        UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
        Index("ix_api_keys_owner", "service", "owner_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(String(40))
    environment: Mapped[str] = mapped_column(String(8))
    key_hash: Mapped[str] = mapped_column(String(64))
    display_prefix: Mapped[str] = mapped_column(String(24))
    """The first characters of the key, for telling keys apart in lists; never enough to use it."""
    name: Mapped[str | None] = mapped_column(String(200))
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    """Written in batches by the gateways (see `touch_keys`), at most about once a second per key."""
    rate_limits: Mapped[dict[str, int] | None] = mapped_column(JSON)
    """This key's own request budget per window ({"minute": 100, "hour": 6000}); None: the service's setting."""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key(prefix: str, environment: str) -> str:
    """`<prefix>_<environment>_<40 hex>`: 160 random bits."""
    return f"{prefix}_{environment}_{secrets.token_hex(20)}"


KEYS = cast(Table, ApiKey.__table__)
_KEY = select(KEYS).where(KEYS.c.id == bindparam("key_id"))


def create_key(
    connection: Connection,
    *,
    service: str,
    owner_id: str,
    environment: str,
    prefix: str,
    scopes: Sequence[str],
    key_id: str | None = None,
    name: str | None = None,
    expires_at: datetime | None = None,
    rate_limits: dict[str, int] | None = None,
    now: datetime | None = None,
) -> tuple[Row[Any], str]:
    """A new key for `owner_id`; returns the stored row and the key itself, which is shown this once."""
    if environment not in ENVIRONMENTS:
        raise ValueError(f"environment must be one of {', '.join(ENVIRONMENTS)}")
    key = new_key(prefix, environment)
    key_id = key_id or new_uuid()
    connection.execute(
        insert(KEYS).values(
            id=key_id,
            service=service,
            owner_id=owner_id,
            environment=environment,
            key_hash=hash_key(key),
            display_prefix=key[: len(prefix) + len(environment) + 6],
            name=name,
            scopes=list(scopes),
            created_at=now or datetime.now(UTC),
            expires_at=expires_at,
            rate_limits=rate_limits,
        )
    )
    return connection.execute(_KEY, {"key_id": key_id}).one(), key


def owner_key(connection: Connection, service: str, owner_id: str, key_id: str) -> Row[Any] | None:
    """One of the owner's keys, revoked and expired ones included; None for anyone else's or no such key."""
    row = connection.execute(_KEY, {"key_id": key_id}).first()
    return row if row is not None and row.service == service and row.owner_id == owner_id else None


def revoke_owner_key(
    connection: Connection, service: str, owner_id: str, key_id: str, now: datetime
) -> datetime | None:
    """Revoke one of the owner's keys by its id; returns when it was revoked (now, or when it first was: there is no
    un-revoke), or None when the owner has no such key."""
    revoked = update(KEYS).where(
        KEYS.c.service == service, KEYS.c.owner_id == owner_id, KEYS.c.id == key_id, KEYS.c.revoked_at.is_(None)
    )
    if connection.execute(revoked.values(revoked_at=now)).rowcount:
        return now
    key = owner_key(connection, service, owner_id, key_id)
    return key.revoked_at if key is not None else None


def revoke_key(
    connection: Connection, service: str, key_or_id: str, *, owner_id: str | None = None, now: datetime | None = None
) -> datetime | None:
    """Revoke a service's key, named by its id or by the key itself (and only the owner's, when given); returns when,
    or None when there is no such active key. Every gateway sees it on the next request: nothing caches keys."""
    now = now or datetime.now(UTC)
    statement = update(KEYS).where(
        KEYS.c.service == service,
        or_(KEYS.c.id == key_or_id, KEYS.c.key_hash == hash_key(key_or_id)),
        KEYS.c.revoked_at.is_(None),
    )
    if owner_id is not None:
        statement = statement.where(KEYS.c.owner_id == owner_id)
    return now if connection.execute(statement.values(revoked_at=now)).rowcount else None


def usable_keys(service: str, *owner_columns: ColumnElement[Any]) -> Select[Any]:
    """Of the presented key hashes (bound as `hashes`), those of `service`'s keys that authenticate at `now` (bound):
    not revoked, not expired. The service selects its owner's columns beside the key's and joins the owner."""
    return select(
        KEYS.c.key_hash,
        KEYS.c.id,
        KEYS.c.owner_id,
        KEYS.c.environment,
        KEYS.c.scopes,
        KEYS.c.rate_limits,
        *owner_columns,
    ).where(
        KEYS.c.service == service,
        KEYS.c.key_hash.in_(bindparam("hashes", expanding=True)),
        KEYS.c.revoked_at.is_(None),
        or_(KEYS.c.expires_at.is_(None), KEYS.c.expires_at > bindparam("now")),
    )


def owner_keys(connection: Connection, service: str, owner_id: str) -> list[Row[Any]]:
    """Every key of one owner, revoked and expired ones included, newest first."""
    statement = (
        select(KEYS)
        .where(KEYS.c.service == service, KEYS.c.owner_id == owner_id)
        .order_by(KEYS.c.created_at.desc(), KEYS.c.id.desc())
    )
    return list(connection.execute(statement))


_TOUCH = (
    update(KEYS)
    .where(KEYS.c.id == bindparam("key_id"))
    .where(or_(KEYS.c.last_used_at.is_(None), KEYS.c.last_used_at < bindparam("used_at")))
    .values(last_used_at=bindparam("used_at"))
)


def touch_keys(connection: Connection, used: Mapping[str, datetime]) -> None:
    """Record when keys were last used, in one statement for all of them; never moves a time backwards."""
    if used:
        connection.execute(_TOUCH, [{"key_id": key_id, "used_at": at} for key_id, at in used.items()])
