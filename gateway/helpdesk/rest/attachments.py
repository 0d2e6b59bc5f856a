"""Attachments over REST: `GET /api/v1/attachments/{conversation}/{index}` serves a stored file to whoever holds its
signed URL (no key), and `POST /api/v1/uploads` (scope `attachments:write`) keeps a file for a reply or note to name."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from gateway.common.auth import NO_AUTHENTICATION, requires
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.errors import HelpdeskError
from gateway.helpdesk.files import MAX_UPLOAD_BODY, keep, read_files
from gateway.helpdesk.schemas import Upload
from operations.helpdesk import attachments
from operations.helpdesk.attachments import ATTACHMENTS_PATH
from operations.helpdesk.desk import Helpdesk

SERVED = {
    "Cache-Control": "private, max-age=300",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox",
}
"""A file is served as a download, never run as a page of this site."""


class AttachmentsController(Controller):
    path = ATTACHMENTS_PATH
    tags = ["attachments"]

    @get("/{conversation_id:str}/{index:int}", opt=NO_AUTHENTICATION, **docs.GET_ATTACHMENT)
    async def attachment(
        self,
        request: Request[Any, Any, Any],
        desk: NamedDependency[Helpdesk],
        conversation_id: FromPath[str],
        index: FromPath[int],
    ) -> Response[bytes]:
        expires, signature = request.query_params.get("expires"), request.query_params.get("signature")
        found = await attachments.download(desk, conversation_id, index, expires=expires, signature=signature)
        disposition = f"attachment; filename*=UTF-8''{quote(found.name)}"
        return Response(
            found.data,
            media_type=found.content_type or "application/octet-stream",
            headers={**SERVED, "Content-Disposition": disposition},
        )


class UploadsController(Controller):
    path = "/api/v1/uploads"
    tags = ["attachments"]

    @post("/", guards=[requires("attachments:write")], request_max_body_size=MAX_UPLOAD_BODY, **docs.UPLOAD)
    async def upload(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> Response[Upload]:
        _, files = await read_files(request, "file", 1)
        if not files:
            raise HelpdeskError(400, "Missing field: file")
        return Response(Upload.of(await keep(desk, actor_of(request), files[0])), status_code=201)
