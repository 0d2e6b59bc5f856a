"""A voice channel's calls (docs/helpdesk.md, "Voice"): one row per call, as its provider's events tell it, with its
voicemail's audio and transcription and the ticket they made. What an event changes is decided by the processors
(processors/helpdesk/inbound/voice.py); this module reads and writes the row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection

from storage.helpdesk.models import Call

CALLS = cast(Table, Call.__table__)


@dataclass(frozen=True, slots=True)
class CallRecord:
    id: str
    organization_id: str
    channel_id: str
    call_id: str
    state: str
    details: dict[str, Any]
    voicemail: bool
    recording_url: str | None
    """The voicemail's audio once uploaded ("" when the upload named no link)."""
    transcription: str | None
    """The voicemail's transcription once made ("" when it is empty)."""
    ticket_id: str | None
    created_at: datetime
    updated_at: datetime


FIELDS: tuple[str, ...] = CallRecord.__slots__  # type: ignore[attr-defined]
_OF_CALL = (
    select(CALLS)
    .where(CALLS.c.channel_id == bindparam("channel_id"), CALLS.c.call_id == bindparam("call_id"))
    .with_for_update()
)
_CHANGED = ("state", "details", "voicemail", "recording_url", "transcription", "ticket_id", "updated_at")


def of_call(connection: Connection, channel_id: str, call_id: str) -> CallRecord | None:
    """The channel's record of the provider's call `call_id`, if any of its events came; locked to the end of the
    transaction (PostgreSQL), so that an event and the voicemails' wait change a call one after the other (on SQLite
    the write lock does it)."""
    row = connection.execute(_OF_CALL, {"channel_id": channel_id, "call_id": call_id}).first()
    return _record(row) if row else None


def _record(row: Any) -> CallRecord:
    return CallRecord(**{name: getattr(row, name) for name in FIELDS})


_WAITING = (
    select(CALLS)
    .where(
        CALLS.c.voicemail.is_(True),
        CALLS.c.ticket_id.is_(None),
        CALLS.c.updated_at < bindparam("before"),
    )
    .order_by(CALLS.c.updated_at)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True)
)


def voicemails_waiting(connection: Connection, before: datetime, limit: int) -> list[CallRecord]:
    """Calls with a voicemail that made no ticket yet, whose last event came before `before`: the oldest first, locked
    (PostgreSQL; a call an event is changing now is left for the next pass)."""
    rows = connection.execute(_WAITING, {"before": before, "limit": limit})
    return [_record(row) for row in rows]


def save(connection: Connection, call: CallRecord, *, new: bool) -> None:
    """Insert a new call's record (unique per channel and call id: a concurrent first event of the same call fails
    its transaction, and its event, still pending, is applied again), or write what changed of an existing one."""
    if new:
        connection.execute(insert(CALLS).values({name: getattr(call, name) for name in FIELDS}))
    else:
        connection.execute(
            update(CALLS).where(CALLS.c.id == call.id).values({name: getattr(call, name) for name in _CHANGED})
        )
