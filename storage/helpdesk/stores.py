"""Commerce store connections under way (docs/helpdesk.md, "Commerce"): the app-install flow's `state`, kept as its
SHA-256, bound to the session that started it and the shop it was made for. A callback spends it by a conditional
update, so two callbacks racing on one state cannot both win."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.engine import Connection

from storage.helpdesk.models import CommerceInstall

INSTALLS = cast(Table, CommerceInstall.__table__)
KEPT_AFTER_EXPIRY = timedelta(days=1)
"""How long a spent or expired state is kept (so that a late callback is told it was used, or expired)."""


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class InstallRecord:
    organization_id: str
    user_id: str
    session_id: str
    shop: str
    expires_at: datetime
    used_at: datetime | None


def begin(
    connection: Connection,
    state: str,
    *,
    organization_id: str,
    user_id: str,
    session_id: str,
    shop: str,
    now: datetime,
    lifetime: timedelta,
) -> None:
    """Keep a new flow's state (hashed); states long expired are forgotten on the way."""
    connection.execute(delete(INSTALLS).where(INSTALLS.c.expires_at < now - KEPT_AFTER_EXPIRY))
    connection.execute(
        insert(INSTALLS).values(
            state_hash=state_hash(state),
            organization_id=organization_id,
            user_id=user_id,
            session_id=session_id,
            shop=shop,
            created_at=now,
            expires_at=now + lifetime,
        )
    )


def find(connection: Connection, state: str) -> InstallRecord | None:
    row = connection.execute(select(INSTALLS).where(INSTALLS.c.state_hash == state_hash(state))).first()
    if row is None:
        return None
    return InstallRecord(row.organization_id, row.user_id, row.session_id, row.shop, row.expires_at, row.used_at)


def spend(connection: Connection, state: str, now: datetime) -> bool:
    """Mark the state used, once: False when it was used already (or is unknown)."""
    spent = connection.execute(
        update(INSTALLS)
        .where(INSTALLS.c.state_hash == state_hash(state), INSTALLS.c.used_at.is_(None))
        .values(used_at=now)
    )
    return bool(spent.rowcount)
