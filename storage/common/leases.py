"""Leases: a named job that one process at a time does (the helpdesk's activity relay), held until a time its holder
moves on while it works. A holder that dies leaves the lease to whoever asks after its time ran out."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import String, Table, bindparam, or_, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.db import per_dialect
from storage.common.models import Base, UtcDateTime


class Lease(Base):
    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(36))
    """Who holds it: an id its holder made for itself at its start."""
    until: Mapped[datetime]
    """When it is free again unless its holder renews it first."""


LEASES = cast(Table, Lease.__table__)

_NOW = bindparam("now", type_=UtcDateTime())
_RENEW = (
    update(LEASES)
    .where(LEASES.c.name == bindparam("lease"), or_(LEASES.c.holder == bindparam("me"), LEASES.c.until <= _NOW))
    .values(holder=bindparam("me"), until=bindparam("to", type_=UtcDateTime()))
)
_FIRST = per_dialect(lambda insert_: insert_(LEASES).on_conflict_do_nothing(index_elements=["name"]))


def take(connection: Connection, name: str, holder: str, *, now: datetime, until: datetime) -> bool:
    """Hold `name` until `until` if it is free (never taken, or its time ran out by `now`) or `holder`'s already:
    whether `holder` now holds it. Of two asking at once, one gets it: the update is conditional (on PostgreSQL the
    second waits for the first's row and finds it taken), and so is the first lease's insert."""
    if connection.execute(_RENEW, {"lease": name, "me": holder, "now": now, "to": until}).rowcount:
        return True
    inserted = connection.execute(_FIRST[connection.dialect.name], {"name": name, "holder": holder, "until": until})
    return bool(inserted.rowcount)


def release(connection: Connection, name: str, holder: str, *, now: datetime) -> None:
    """End `holder`'s lease now, so that another takes it at once (a holder that stops); nothing if it is not
    `holder`'s."""
    connection.execute(
        update(LEASES).where(LEASES.c.name == name, LEASES.c.holder == holder).values(until=now),
    )
