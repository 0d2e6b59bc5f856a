"""Files members and keys upload to attach to their replies and notes: each kept in the blob store, recorded here until
a conversation takes it (once)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, insert, select, update
from sqlalchemy.engine import Connection

from storage.helpdesk.models import Upload

UPLOADS = cast(Table, Upload.__table__)


class UploadUnavailable(Exception):
    """An upload a reply names is not the organization's (404), or another conversation took it already (409)."""

    def __init__(self, upload_ids: str, *, taken: bool) -> None:
        super().__init__(upload_ids)
        self.taken = taken


@dataclass(frozen=True, slots=True)
class UploadRecord:
    id: str
    organization_id: str
    uploaded_by: str
    name: str
    content_type: str
    size: int
    blob: str
    created_at: datetime
    attached_to: str | None = None

    def attachment(self) -> dict[str, Any]:
        """As a conversation holds it."""
        return {"name": self.name, "content_type": self.content_type, "size": self.size, "blob": self.blob}


def save(connection: Connection, upload: UploadRecord) -> None:
    connection.execute(insert(UPLOADS).values(**{name: getattr(upload, name) for name in UploadRecord.__slots__}))


def take(connection: Connection, organization_id: str, upload_ids: Sequence[str], conversation_id: str) -> None:
    """The uploads attached to the conversation, in its transaction; UploadUnavailable (undoing it) when one is not
    the organization's or is attached already."""
    taken = connection.execute(
        update(UPLOADS)
        .where(
            UPLOADS.c.organization_id == organization_id,
            UPLOADS.c.id.in_(list(upload_ids)),
            UPLOADS.c.attached_to.is_(None),
        )
        .values(attached_to=conversation_id)
    )
    if taken.rowcount != len(set(upload_ids)):
        raise UploadUnavailable(", ".join(upload_ids), taken=True)


def unattached(connection: Connection, organization_id: str, upload_ids: Sequence[str]) -> list[UploadRecord]:
    """These uploads, in the order named; UploadUnavailable when one is not the organization's or is taken."""
    rows = {
        row.id: row
        for row in connection.execute(
            select(UPLOADS).where(UPLOADS.c.organization_id == organization_id, UPLOADS.c.id.in_(list(upload_ids)))
        )
    }
    missing = [upload_id for upload_id in upload_ids if upload_id not in rows]
    if missing:
        raise UploadUnavailable(", ".join(missing), taken=False)
    taken = [upload_id for upload_id in upload_ids if rows[upload_id].attached_to is not None]
    if taken:
        raise UploadUnavailable(", ".join(taken), taken=True)
    fields = UploadRecord.__slots__  # type: ignore[attr-defined]
    return [UploadRecord(**{name: getattr(rows[upload_id], name) for name in fields}) for upload_id in upload_ids]
