"""Self-inspection sessions (`full` scope): create one (its single-use link answered once), list, read, cancel
(operations/photo/inspections.py, which the recipient's page and the dashboard call too)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.photo import docs
from gateway.photo.auth import INSPECTIONS_READ, INSPECTIONS_WRITE, PhotoPrincipal, account_of
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import ERRORS
from gateway.photo.schemas import (
    CreateInspectionRequest,
    InspectionCreated,
    InspectionCursor,
    InspectionList,
    PageSize,
)
from operations.photo import inspections
from topics.photo import Inspection

_decode_create = msgspec.json.Decoder(CreateInspectionRequest).decode


class InspectionsController(Controller):
    path = "/api/v1/inspections"
    tags = ["inspections"]

    @post("/", guards=[requires(INSPECTIONS_WRITE)], **docs.CREATE_INSPECTION)
    async def create_inspection(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> Response[InspectionCreated]:
        body = decode_body(_decode_create, await request.body(), ERRORS)
        made, url = await inspections.create(
            photo.operations,
            account_of(request.user),
            request.user.account.key_id,
            policy=body.policy,
            reference=body.reference,
            metadata=body.metadata,
            expires_in_s=int(body.expires_in) if body.expires_in is not None else None,
            now=datetime.now(UTC),
        )
        return Response(InspectionCreated(url=url, **msgspec.structs.asdict(made)), status_code=201)

    @get("/", guards=[requires(INSPECTIONS_READ)], **docs.LIST_INSPECTIONS)
    async def list_inspections(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        limit: PageSize = 20,
        starting_after: InspectionCursor = None,
    ) -> InspectionList:
        page = await inspections.listed(
            photo.operations,
            account_of(request.user),
            limit=limit,
            starting_after=starting_after,
            now=datetime.now(UTC),
        )
        return InspectionList(data=page.items, has_more=page.has_more, next_cursor=page.next_cursor)

    @get("/{inspection_id:str}", guards=[requires(INSPECTIONS_READ)], **docs.GET_INSPECTION)
    async def get_inspection(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        inspection_id: FromPath[str],
    ) -> Inspection:
        row = await inspections.own(photo.operations, account_of(request.user), inspection_id)
        return await inspections.shown(photo.operations, row, datetime.now(UTC))

    @post("/{inspection_id:str}/cancel", guards=[requires(INSPECTIONS_WRITE)], **docs.CANCEL_INSPECTION)
    async def cancel_inspection(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        inspection_id: FromPath[str],
    ) -> Inspection:
        return await inspections.cancel(photo.operations, account_of(request.user), inspection_id, datetime.now(UTC))
