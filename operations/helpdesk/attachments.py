"""Attachments: what came with a message (mail parts, MMS and messaging media, voicemail audio) and the files members
attach to their replies and notes. A stored file is fetched through a short-lived signed URL, issued only inside the
conversation a member or a key reads; the URL itself is the credential (no session needed), so a mail client or a
provider can fetch it too. Media a provider holds are fetched and stored as a mail's parts are
(processors/helpdesk/inbound/media.py); one that could not be is listed as the provider's link, with why. An upload
over MAX_UPLOAD_BYTES is refused; an inbound file over its limit is listed with the refusal instead of a URL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from operations.common.actors import Actor
from operations.common.errors import Forbidden, Invalid, NotFound, TooLarge
from operations.helpdesk.desk import Helpdesk
from storage.common.blobs import BlobNotFound
from storage.helpdesk import tickets, uploads
from storage.helpdesk.tickets import ConversationRecord
from storage.helpdesk.uploads import UploadRecord
from wire.ids import new_uuid

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
"""A file a member or a key attaches: 10 MiB at most."""
MAX_ATTACHMENTS = 10
"""Files one reply or note carries, at most."""
ATTACHMENTS_PATH = "/api/v1/attachments"
"""Where signed attachment URLs point: `<path>/<conversation id>/<index>?expires=...&signature=...`."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
REFUSALS = {
    "unsigned": "This attachment URL is not signed",
    "forged": "This attachment URL's signature is not valid",
    "expired": "This attachment URL has expired: read its conversation again for a fresh one",
}


@dataclass(frozen=True, slots=True)
class Shown:
    """An attachment as a conversation lists it: a stored `file` (its signed `url`), a provider's `link` (its URL; a
    medium that could not be fetched: `refused` says why), or a file `refused` for good (no URL; `refused` says why)."""

    kind: str
    name: str | None
    content_type: str | None
    size: int | None
    url: str | None
    refused: str | None = None


def shown(desk: Helpdesk, conversation: ConversationRecord) -> list[Shown]:
    """The conversation's attachments, stored files with fresh signed URLs."""
    listed = []
    for index, item in enumerate(conversation.attachments):
        name, content_type, size = item.get("name"), item.get("content_type"), item.get("size")
        if item.get("blob"):
            url = desk.files.url(f"{conversation.id}/{index}") if desk.files is not None else None
            listed.append(Shown("file", name, content_type, size, url))
        elif item.get("url"):
            refused = str(item["refused"]) if item.get("refused") else None
            listed.append(Shown("link", name, content_type, size, str(item["url"]), refused))
        else:
            listed.append(Shown("refused", name, content_type, size, None, str(item.get("refused") or "not stored")))
    return listed


async def upload(desk: Helpdesk, actor: Actor, *, name: str, content_type: str, data: bytes) -> UploadRecord:
    """A file kept for a reply or note to attach (by its id) within the organization."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise TooLarge(f"A file is at most {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB; this one is {len(data)} bytes")
    if desk.blobs is None:
        raise Invalid("Files cannot be stored here")
    upload_id = new_uuid()
    safe = _UNSAFE.sub("_", name)[:100] or "file"
    key = f"helpdesk/{actor.organization_id}/uploads/{upload_id}/{safe}"
    await desk.blobs.put(key, data, content_type)
    record = UploadRecord(
        upload_id,
        actor.organization_id,
        actor.user_id or actor.key_id or "platform",
        name[:255] or "file",
        content_type,
        len(data),
        key,
        desk.clock(),
    )
    await desk.db.write(uploads.save, record)
    return record


@dataclass(frozen=True, slots=True)
class Download:
    data: bytes
    name: str
    content_type: str


async def download(
    desk: Helpdesk, conversation_id: str, index: int, *, expires: str | None, signature: str | None
) -> Download:
    """The stored file a signed URL names, for whoever holds the URL until it expires."""
    if desk.files is None or desk.blobs is None:
        raise NotFound("No attachments are served here")
    refusal = desk.files.refusal(f"{conversation_id}/{index}", expires, signature)
    if refusal is not None:
        raise Forbidden(REFUSALS[refusal])
    found = await desk.db.read(tickets.conversation_anywhere, conversation_id)
    item: dict[str, Any] = found.attachments[index] if found is not None and 0 <= index < len(found.attachments) else {}
    if not item.get("blob"):
        raise NotFound("This attachment has been deleted")
    try:
        data = await desk.blobs.get(str(item["blob"]))
    except BlobNotFound:
        raise NotFound("This attachment has been deleted") from None
    return Download(data, str(item.get("name") or "attachment"), str(item.get("content_type") or ""))
