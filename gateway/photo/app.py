"""The photo gateway app: `POST /v1/verify`, signed image URLs, and key, webhook and verification management under
`/api/v1`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
import structlog
from litestar import Controller, Litestar, Request, Response, get, post
from litestar.di import NamedDependency, Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.params import Parameter
from litestar.types import ASGIApp

from gateway.common.http import ReadinessCheck, complete_allow, health_routes, observe, request_ids
from gateway.common.idempotency import IdempotencyRules, body_hash
from gateway.common.limits import seconds_to_next_month
from gateway.common.openapi import MsgspecSchemaPlugin, documented_operation, response
from gateway.common.waiter import within
from gateway.photo import docs
from gateway.photo import keys as key_routes
from gateway.photo.auth import require_subscription
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import EXCEPTION_HANDLERS, PhotoError
from gateway.photo.images import MAX_JSON_BODY, Submitted, read_submission
from gateway.photo.verifications import VerificationsController
from gateway.photo.webhooks import WebhooksController
from storage.common.blobs import BlobNotFound
from storage.photo import verifications
from storage.photo.customers import KeyOwner, new_id
from topics.photo import Verification, VerificationRequested

log = structlog.get_logger("signalyard.gateway.photo")

API_VERSION = "2026-11"
IMAGES_PATH = "/v1/images"
"""Where `image_url`s point: the signed URLs of stored images."""
IMAGE_URL_REFUSALS = {
    "unsigned": "This image URL is not signed",
    "forged": "This image URL's signature is not valid",
    "expired": "This image URL has expired: fetch the verification again for a fresh one",
}
JSON = "application/json"


IDEMPOTENCY = IdempotencyRules(
    required=False,
    missing=lambda: PhotoError(400, "Missing Idempotency-Key"),
    malformed=lambda reason: PhotoError(400, reason),
    conflict=lambda _original: PhotoError(422, "Idempotency-Key reused with a different request body"),
    max_length=255,
)
"""Optional on verify; scoped to the key's customer and environment; kept as long as the verification."""


def submission_hash(submitted: Submitted) -> str:
    """Same image (by its bytes, in either body form), policy and metadata: the same request."""
    image = hashlib.sha256(submitted.image).hexdigest()
    return body_hash({"image_sha256": image, "policy": submitted.policy, "metadata": submitted.metadata})


class VerifyController(Controller):
    path = "/v1"
    tags = ["verify"]

    @post(
        "/verify",
        operation_id="verify",
        summary="Check an image against a policy",
        status_code=200,
        operation_class=docs.VERIFY,
        responses={
            200: response(Verification, "The verification with its verdict"),
            **docs.errors(400, 401, 403, 422, 429, 500, 503),
        },
    )
    async def verify(self, request: Request[Any, Any, Any], photo: NamedDependency[PhotoGateway]) -> Response[Any]:
        owner = await photo.auth.owner(request.headers, full_scope=False)
        require_subscription(owner)
        idempotency_key = IDEMPOTENCY.key_in(request.headers)
        submitted = await read_submission(request)
        digest = submission_hash(submitted)
        if idempotency_key is not None and (existing := await _by_key(photo, owner, idempotency_key)) is not None:
            return await _replay(photo, owner, existing, digest)

        now = datetime.now(UTC)
        verification_id = new_id("ver")
        image_key = f"photo/{owner.customer_id}/{verification_id}"
        await photo.blobs.put(image_key, submitted.image, submitted.content_type)
        row: dict[str, Any] = {
            "id": verification_id,
            "customer_id": owner.customer_id,
            "environment": owner.environment,
            "key_id": owner.key_id,
            "idempotency_key": idempotency_key,
            "body_hash": digest,
            "policy": submitted.policy,
            "image_key": image_key,
            "image_type": submitted.content_type,
            "metadata_json": msgspec.json.encode(submitted.metadata) if submitted.metadata is not None else None,
            "state": "pending",
            "charged": owner.environment == "live",
            "created_at": now,
            "published_at": now,
        }
        try:
            accepted = await photo.db.run(
                lambda connection: verifications.accept(connection, row, _cap(owner)), write=True
            )
        except verifications.CapReached:
            await photo.blobs.delete(image_key)
            raise _cap_reached(owner, now) from None
        if not accepted:  # the same key, sent concurrently, won the insert
            await photo.blobs.delete(image_key)
            existing = await _by_key(photo, owner, idempotency_key or "")
            if existing is None:
                raise PhotoError(500, "The verification could not be stored; retry")
            return await _replay(photo, owner, existing, digest)
        structlog.contextvars.bind_contextvars(verification_id=verification_id)
        return await _run(photo, row["id"], _message(row))

    @get(
        "/images/{verification_id:str}",
        operation_id="getImage",
        summary="The image of a verification, by the signed URL in its `image_url`",
        media_type="image/jpeg",
        operation_class=documented_operation(never_answered=[400]),
        responses={
            200: response(bytes, "The image, as it was submitted", media_type="image/*"),
            **docs.errors(403, 404, 500),
        },
        security=[],
    )
    async def image(
        self,
        photo: NamedDependency[PhotoGateway],
        verification_id: str,
        expires: Annotated[str | None, Parameter(query="expires")] = None,
        signature: Annotated[str | None, Parameter(query="signature")] = None,
    ) -> Response[bytes]:
        if (refusal := photo.urls.refusal(verification_id, expires, signature)) is not None:
            raise PhotoError(403, IMAGE_URL_REFUSALS[refusal])
        rows = await photo.db.run(lambda connection: verifications.load(connection, [verification_id]), write=False)
        row = rows.get(verification_id)
        if row is None or row.image_key is None:
            raise PhotoError(404, "This image has been deleted")
        try:
            image = await photo.blobs.get(row.image_key)
        except BlobNotFound:
            raise PhotoError(404, "This image has been deleted") from None
        return Response(image, media_type=row.image_type, headers={"Cache-Control": "private, max-age=300"})


def _cap(owner: KeyOwner) -> int | None:
    """Live verifications count against the month's cap; sandbox ones are free and never counted."""
    return owner.monthly_cap if owner.environment == "live" else None


def _cap_reached(owner: KeyOwner, now: datetime) -> PhotoError:
    return PhotoError(
        429,
        f"Monthly usage cap of {owner.monthly_cap} verifications reached; it resets at the start of next month "
        "(UTC) or when the plan is raised",
        retry_after=seconds_to_next_month(now),
    )


def _message(row: Mapping[str, Any]) -> VerificationRequested:
    return VerificationRequested(
        verification_id=row["id"],
        customer_id=row["customer_id"],
        environment=row["environment"],
        policy=row["policy"],
        image_key=row["image_key"],
    )


async def _by_key(photo: PhotoGateway, owner: KeyOwner, key: str) -> Any:
    return await photo.db.run(
        lambda connection: verifications.find_by_idempotency_key(connection, owner.customer_id, owner.environment, key),
        write=False,
    )


async def _replay(photo: PhotoGateway, owner: KeyOwner, existing: Any, digest: str) -> Response[Any]:
    """The same key again: the original answer; a different body is 422; a failure (5xx) is never replayed: it
    runs again, charged again only if it had been refunded."""
    IDEMPOTENCY.check(existing, digest)
    if existing.state == "failed":
        now = datetime.now(UTC)
        try:
            await photo.db.run(
                lambda connection: verifications.retry_failed(connection, existing, _cap(owner), now), write=True
            )
        except verifications.CapReached:
            raise _cap_reached(owner, now) from None
        return await _run(photo, existing.id, _message(existing._mapping))
    if existing.state == "pending":
        return await _run(photo, existing.id, None)
    return _answer(photo, existing)


async def _run(photo: PhotoGateway, verification_id: str, message: VerificationRequested | None) -> Response[Any]:
    """Publish the work order (unless it is already out) and wait for the verdict, up to the budget."""
    with photo.waiter.expecting(verification_id) as judged:
        if message is not None:
            try:
                await photo.publish(message)
            except Exception:  # the row is the outbox: the sweeper publishes it again
                log.exception("publish_failed")
            row = await within(judged, photo.wait_s) or await _stored(photo, verification_id)
        else:  # a replay of a pending verification: it may have finished before we started listening
            row = await _stored(photo, verification_id)
            if row.state == "pending":
                row = await within(judged, photo.wait_s) or await _stored(photo, verification_id)
    return _answer(photo, row)


def _answer(photo: PhotoGateway, row: Any) -> Response[Any]:
    if row.state == "pending":
        raise PhotoError(
            503,
            "The verification is taking longer than usual; retry with the same Idempotency-Key, or fetch "
            f"GET /api/v1/verifications/{row.id}",
            retry_after=2,
            verification_id=row.id,
        )
    if row.state == "failed":
        raise PhotoError(
            500,
            "The image could not be processed; retry with the same Idempotency-Key",
            verification_id=row.id,
        )
    return Response(verifications.verification_of(row, photo.urls), media_type=JSON)


async def _stored(photo: PhotoGateway, verification_id: str) -> Any:
    rows = await photo.db.run(lambda connection: verifications.load(connection, [verification_id]), write=False)
    return rows[verification_id]


def create_photo_app(gateway: PhotoGateway, readiness: Mapping[str, ReadinessCheck], *, debug: bool = False) -> ASGIApp:
    """The photo gateway as an ASGI app, at the host root: `/v1/...` and `/api/v1/...`."""
    app = Litestar(
        route_handlers=[
            VerifyController,
            key_routes.KeysController,
            WebhooksController,
            VerificationsController,
            *health_routes(readiness),
        ],
        dependencies={"photo": Provide(lambda: gateway, use_cache=True, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        request_max_body_size=MAX_JSON_BODY,
        plugins=[MsgspecSchemaPlugin()],
        on_shutdown=[gateway.auth.last_used.flush],
        openapi_config=OpenAPIConfig(
            title="signalyard photo compliance",
            version=API_VERSION,
            description="An image and a policy in; a compliance verdict, its confidence, category, violation reasons "
            "and feedback out. Sandbox keys (`pc_test_...`) are free and never billed; live keys (`pc_live_...`) "
            "count against the account's monthly cap.",
            path="/docs",
            render_plugins=[ScalarRenderPlugin()],
            components=Components(
                security_schemes={
                    "apiKey": SecurityScheme(
                        type="apiKey",
                        name="X-API-Key",
                        security_scheme_in="header",
                        description="`X-API-Key: pc_test_...` (sandbox) or `pc_live_...`",
                    )
                }
            ),
            security=[{"apiKey": []}],
        ),
        logging_config=None,
        debug=debug,
    )
    return observe("photo", request_ids("req_"))(complete_allow(app))
