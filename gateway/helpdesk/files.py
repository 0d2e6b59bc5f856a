"""Files sent to the gateway in multipart bodies (uploads, replies with their files): read within their limits and
kept as uploads (operations/helpdesk/attachments.py)."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.datastructures import UploadFile

from gateway.helpdesk.errors import HelpdeskError
from operations.common.actors import Actor
from operations.helpdesk import attachments
from operations.helpdesk.attachments import MAX_UPLOAD_BYTES
from operations.helpdesk.desk import Helpdesk
from storage.helpdesk.uploads import UploadRecord

MULTIPART_OVERHEAD = 64 * 1024
MAX_UPLOAD_BODY = MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD


async def read_files(request: Request[Any, Any, Any], field: str, most: int) -> tuple[dict[str, str], list[UploadFile]]:
    """A multipart body's text fields and its files under `field` (at most `most`)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "multipart/form-data":
        raise HelpdeskError(400, f"Send the file{'s' if most > 1 else ''} as multipart/form-data, in `{field}`")
    form = await request.form()
    files = [item for item in form.getall(field) if isinstance(item, UploadFile)] if field in form else []
    if len(files) > most:
        raise HelpdeskError(400, f"At most {most} files in `{field}`")
    texts = {name: value for name, value in form.items() if isinstance(value, str)}
    return texts, files


async def keep(desk: Helpdesk, actor: Actor, file: UploadFile) -> UploadRecord:
    data = await file.read()
    await file.close()
    name = file.filename or "file"
    return await attachments.upload(desk, actor, name=name, content_type=file.content_type, data=data)
