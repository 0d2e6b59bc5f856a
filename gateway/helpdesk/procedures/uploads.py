"""`POST /api/uploads`: a signed-in member's file, kept for a reply or note to name (procedures take JSON only, so
files come this way and the procedure names the id this answers). Admitted by the procedures' own step, answered in the
REST envelope; its session cookie is SameSite, and a request from another site's page (its `Origin`) is refused."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from litestar import Request, Response, post
from litestar.handlers import HTTPRouteHandler

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.errors import HelpdeskError
from gateway.helpdesk.files import MAX_UPLOAD_BODY, keep, read_files
from gateway.helpdesk.procedures.wire import Admit, Call, ProcedureError
from gateway.helpdesk.schemas import Upload
from operations.helpdesk.desk import Helpdesk

UPLOADS_PATH = "/api/uploads"


def upload_route(admit: Admit, desk: Helpdesk) -> HTTPRouteHandler:
    @post(UPLOADS_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_UPLOAD_BODY)
    async def upload(request: Request[Any, Any, Any]) -> Response[Upload]:
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            raise HelpdeskError(403, "Uploads come from this site's own pages")
        call = Call(request, "uploads")
        try:
            await admit(call, "member")
        except ProcedureError as refused:
            raise HelpdeskError(refused.status, refused.message) from None
        _, files = await read_files(request, "file", 1)
        if not files:
            raise HelpdeskError(400, "Missing field: file")
        kept = await keep(desk, call.actor, files[0])
        return Response(Upload.of(kept), status_code=201, cookies=call.cookies)

    return upload
