"""Verification history and review (`full` scope): a customer's verifications in the key's environment, newest
first, and the human review that changes a verdict and fires `verification.reviewed`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.photo import docs
from gateway.photo.auth import VERIFICATIONS_READ, VERIFICATIONS_WRITE, PhotoPrincipal
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import ERRORS, PhotoError
from gateway.photo.schemas import ReviewRequest, VerificationList
from operations.common.changes import announce
from storage.common.webhooks.events import record_event
from storage.photo import verifications
from storage.photo.customers import KeyOwner
from topics.photo import WEBHOOKS, Review, Verification

_decode_review_request = msgspec.json.Decoder(ReviewRequest).decode
_encode = msgspec.json.Encoder().encode


class VerificationsController(Controller):
    path = "/api/v1/verifications"
    tags = ["verifications"]

    @get("/", guards=[requires(VERIFICATIONS_READ)], **docs.LIST_VERIFICATIONS)
    async def list_verifications(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        limit: Annotated[int, Parameter(ge=1, le=100, description="Page size, 1 to 100")] = 20,
        starting_after: Annotated[
            str | None,
            Parameter(
                description="The `next_cursor` of the previous page (a verification id): the page starts after it",
                pattern=r"^ver_[0-9a-f]{32}$",
            ),
        ] = None,
    ) -> VerificationList:
        owner = request.user.account
        before = None
        if starting_after is not None:
            cursor = await _own(photo, owner, starting_after, missing="starting_after names no verification")
            before = (cursor.created_at, cursor.id)
        rows = await photo.db.read(
            verifications.history, owner.customer_id, owner.environment, limit=limit + 1, before=before
        )
        page = [verifications.verification_of(row, photo.urls) for row in rows[:limit]]
        has_more = len(rows) > limit
        return VerificationList(data=page, has_more=has_more, next_cursor=page[-1].id if has_more else None)

    @get("/{verification_id:str}", guards=[requires(VERIFICATIONS_READ)], **docs.GET_VERIFICATION)
    async def get_verification(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        verification_id: FromPath[str],
    ) -> Verification:
        return verifications.verification_of(await _own(photo, request.user.account, verification_id), photo.urls)

    @post("/{verification_id:str}/review", guards=[requires(VERIFICATIONS_WRITE)], **docs.REVIEW)
    async def review(
        self,
        request: Request[PhotoPrincipal, Any, Any],
        photo: NamedDependency[PhotoGateway],
        verification_id: FromPath[str],
    ) -> Verification:
        owner = request.user.account
        body = decode_body(_decode_review_request, await request.body(), ERRORS)
        row = await _own(photo, owner, verification_id)
        if row.state != "completed" or row.verdict is None:
            raise PhotoError(409, "Only a completed verification can be reviewed")
        verdict = verifications.decode_verdict(row.verdict)
        if verdict.is_compliant == body.is_compliant:
            return verifications.verification_of(row, photo.urls)  # the verdict stands: nothing changes, nothing fires
        original = verifications.decode_review(row.review).original_is_compliant if row.review else verdict.is_compliant
        review = Review(
            is_compliant=body.is_compliant,
            note=body.note,
            reviewed_at=verifications.iso(datetime.now(UTC)),
            original_is_compliant=original,
        )
        changed = verifications.reviewed(verdict, body.is_compliant)

        def store(connection: Any) -> tuple[str | None, Verification] | None:
            """The reviewed verification and its event, in one transaction; None if it changed meanwhile."""
            if not verifications.review(connection, row.id, _encode(changed), _encode(review)):
                return None
            updated = verifications.verification_of(verifications.load(connection, [row.id])[row.id], photo.urls)
            data = msgspec.to_builtins(updated)
            event_id = record_event(connection, WEBHOOKS, owner.customer_id, "verification.reviewed", data)
            return event_id, updated

        stored = await photo.db.write(store)
        if stored is None:
            return verifications.verification_of(await _own(photo, owner, verification_id), photo.urls)
        event_id, updated = stored
        if event_id is not None:  # None: no endpoint subscribes to it
            await announce(photo.publish_event, owner.customer_id, [event_id])
        return updated


async def _own(
    photo: PhotoGateway, owner: KeyOwner, verification_id: str, missing: str = "No verification with that id"
) -> Any:
    """The customer's verification in the key's environment; anyone else's is as absent as a made-up id."""
    row = (await photo.db.read(verifications.load, [verification_id])).get(verification_id)
    if row is None or row.customer_id != owner.customer_id or row.environment != owner.environment:
        raise PhotoError(404, missing + " on this account")
    return row
