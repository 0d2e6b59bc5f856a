"""Verification history and review (`full` scope): a customer's verifications in the key's environment, newest
first, and the human review that fires `verification.reviewed` when it changes a verdict (operations/photo/
verifications.py, which the dashboard's pages call too)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.photo import docs
from gateway.photo.auth import VERIFICATIONS_READ, VERIFICATIONS_WRITE, PhotoPrincipal, account_of
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import ERRORS
from gateway.photo.schemas import PageSize, ReviewRequest, VerificationCursor, VerificationList
from operations.photo import verifications
from storage.photo.verifications import verification_of
from topics.photo import Verification

_decode_review_request = msgspec.json.Decoder(ReviewRequest).decode


class VerificationsController(Controller):
    path = "/api/v1/verifications"
    tags = ["verifications"]

    @get("/", guards=[requires(VERIFICATIONS_READ)], **docs.LIST_VERIFICATIONS)
    async def list_verifications(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        limit: PageSize = 20,
        starting_after: VerificationCursor = None,
    ) -> VerificationList:
        page = await verifications.history(
            photo.operations, account_of(request.user), limit=limit, starting_after=starting_after
        )
        return VerificationList(data=page.items, has_more=page.has_more, next_cursor=page.next_cursor)

    @get("/{verification_id:str}", guards=[requires(VERIFICATIONS_READ)], **docs.GET_VERIFICATION)
    async def get_verification(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        verification_id: FromPath[str],
    ) -> Verification:
        row = await verifications.own(photo.operations, account_of(request.user), verification_id)
        return verification_of(row, photo.urls)

    @post("/{verification_id:str}/review", guards=[requires(VERIFICATIONS_WRITE)], **docs.REVIEW)
    async def review(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        verification_id: FromPath[str],
    ) -> Verification:
        body = decode_body(_decode_review_request, await request.body(), ERRORS)
        return await verifications.review(
            photo.operations,
            account_of(request.user),
            verification_id,
            is_compliant=body.is_compliant,
            note=body.note,
            now=datetime.now(UTC),
        )
