"""`POST /v1/verify`: store a submitted image and its pending verification, publish the work order, and answer with the
verdict when it comes within the wait (else 503 with Retry-After); the same Idempotency-Key replays the original."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog
from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import requires
from gateway.common.idempotency import IdempotencyRules, body_hash
from gateway.common.limits import seconds_to_next_month
from gateway.photo import docs
from gateway.photo.auth import VERIFY, PhotoPrincipal, require_subscription, subscribed
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import PhotoError
from gateway.photo.submissions import Submitted, read_submission
from storage.photo import customers, verifications
from storage.photo.customers import KeyOwner
from topics.common.environment import Environment
from topics.photo import Verification, VerificationRequested
from wire.ids import new_id

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
    path = "/v1/verify"
    tags = ["verify"]

    @post("/", guards=[requires(VERIFY), subscribed], **docs.VERIFY)
    async def verify(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> Response[Any]:
        idempotency_key = IDEMPOTENCY.key_in(request.headers)
        submitted = await read_submission(request)
        verified = await verify(photo, request.user.account, submitted, idempotency_key)
        return Response(verified, media_type=JSON)


async def verify(
    photo: PhotoGateway, owner: KeyOwner, submitted: Submitted, idempotency_key: str | None, *, preview: bool = False
) -> Verification:
    """A submission judged: stored with its image (charged for a live key), published, and its verdict once it comes
    within the wait; a repeated Idempotency-Key answered by its verification (found when the insert meets it: a fresh
    request, the common case, reads nothing first); a PhotoError otherwise (the cap, a replay that does not match, a
    verdict still pending, an image that could not be judged). `POST /v1/verify`, the dashboard's verify page and a
    self-inspection's submission. `preview`: a self-inspection's preview, judged the same way but never charged,
    listed or announced."""
    digest = submission_hash(submitted)
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
        "charged": owner.environment == "live" and not preview,
        "preview": preview,
        "created_at": now,
        "published_at": now,
    }
    try:
        accepted = await photo.db.write(verifications.accept, row, None if preview else _cap(owner))
    except verifications.CapReached:
        await photo.blobs.delete(image_key)
        raise _cap_reached(owner, now) from None
    if not accepted:  # the key is taken (a retry, or the same key sent concurrently): its verification answers
        await photo.blobs.delete(image_key)
        existing = await _by_key(photo, owner, idempotency_key or "")
        if existing is None:
            raise PhotoError(500, "The verification could not be stored; retry")
        return await _replay(photo, owner, existing, digest)
    structlog.contextvars.bind_contextvars(verification_id=verification_id)
    return await _run(photo, verification_id, _message(row))


async def owner_for(photo: PhotoGateway, customer_id: str, environment: Environment, key_id: str) -> KeyOwner:
    """An account as verify sees the owner of a key: its plan and subscription (live needs an active one) in
    `environment`, and the key its verifications are recorded under. The dashboard's verify form (a session's key, or
    `dashboard`) and a self-inspection's submission (the key that made it)."""
    account = await photo.db.read(customers.customer, customer_id)
    if account is None:
        raise PhotoError(404, "This account no longer exists")
    owner = KeyOwner(
        key_id=key_id,
        customer_id=account.id,
        environment=environment,
        scope="full",
        rate_limits={},
        subscription_active=account.subscription_active,
        monthly_cap=account.monthly_cap,
    )
    require_subscription(owner)
    return owner


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
    return await photo.db.read(verifications.find_by_idempotency_key, owner.customer_id, owner.environment, key)


async def _replay(photo: PhotoGateway, owner: KeyOwner, existing: Any, digest: str) -> Verification:
    """The same key again: the original answer; a different body is 422; a failure (5xx) is never replayed: it
    runs again, charged again only if it had been refunded."""
    IDEMPOTENCY.check(existing, digest)
    if existing.state == "failed":
        now = datetime.now(UTC)
        try:
            await photo.db.write(verifications.retry_failed, existing, _cap(owner), now)
        except verifications.CapReached:
            raise _cap_reached(owner, now) from None
        return await _run(photo, existing.id, _message(existing._mapping))
    if existing.state == "pending":
        return await _run(photo, existing.id, None)
    return _answer(photo, existing)


async def _run(photo: PhotoGateway, verification_id: str, message: VerificationRequested | None) -> Verification:
    """Publish the work order (unless it is already out) and wait for the verdict, up to the budget."""
    publish = (lambda: photo.publish(message)) if message is not None else None
    return _answer(photo, await photo.waiter.outcome(verification_id, photo.wait_s, publish))


def _answer(photo: PhotoGateway, row: Any) -> Verification:
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
    return verifications.verification_of(row, photo.urls)
