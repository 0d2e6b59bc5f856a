"""`GET /v1/requests/{id}`: a stored request, and what the API answers for one (also when verify replays it)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency
from litestar.openapi.spec import Example as OpenAPIExample
from litestar.openapi.spec import OpenAPIFormat
from litestar.params import PathParameter

from gateway.common.auth import requires
from gateway.common.limits import seconds_to_next_month
from gateway.phone import docs
from gateway.phone.auth import REQUESTS_READ, PhonePrincipal
from gateway.phone.deps import PhoneGateway
from gateway.phone.errors import PhoneError
from gateway.phone.schemas import Pending
from storage.phone import requests

JSON = "application/json"
_pending = msgspec.json.Encoder().encode


def answer_for(row: requests.StoredRequest, *, replay_failure_as_error: bool) -> Response[Any]:
    """What the API answers for a stored request: its result, its failure, or 202 while pending."""
    if row.state == "pending":
        return Response(_pending(Pending(row.id)), status_code=202, media_type=JSON)
    if row.state in requests.RESULT_STATES:
        return Response(row.result, media_type=JSON)
    failure = requests.failure_of(row)
    if not replay_failure_as_error:
        return Response(msgspec.json.encode(failure), media_type=JSON)
    retry_after = seconds_to_next_month(datetime.now(UTC)) if row.error_code == "spend_cap_reached" else None
    return PhoneError(failure.error.code, failure.error.message, request_id=row.id, retry_after=retry_after).response()


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


class RequestsController(Controller):
    path = "/v1/requests"

    @get("/{request_id:str}", guards=[requires(REQUESTS_READ)], **docs.GET_REQUEST)
    async def get_request(
        self,
        request: Request[PhonePrincipal, Any, Any],
        phone: NamedDependency[PhoneGateway],
        request_id: Annotated[
            str,
            PathParameter(
                description="The `request_id` of a verify answer. Another tenant's or environment's id, or "
                "anything that is not a UUID, is 404 `not_found`.",
                examples=[OpenAPIExample(value="93503244-a401-403e-a9e2-52c209f4f3d5")],
                schema_extra={"format": OpenAPIFormat.UUID},
            ),
        ],
    ) -> Response[Any]:
        principal = request.user
        row = await phone.db.read(requests.get_request, request_id) if _is_uuid(request_id) else None
        if row is None or row.tenant_id != principal.owner_id or row.environment != principal.environment:
            raise PhoneError("not_found", "no request with this id for this key's tenant and environment")
        return answer_for(row, replay_failure_as_error=False)
