"""Key management (section 4.1, `full` scope): list, create, revoke; a key manages only its own customer's keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.photo import docs
from gateway.photo.auth import KEYS_READ, KEYS_WRITE, PhotoPrincipal
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import ERRORS, PhotoError
from gateway.photo.schemas import CreateKeyRequest, KeyCreated, KeyList, KeyObject, KeyRevoked
from storage.common import keys
from storage.photo import customers
from storage.photo.verifications import iso

_decode_create = msgspec.json.Decoder(CreateKeyRequest).decode


def key_object(key: Any, now: datetime) -> KeyObject:
    limits = key.rate_limits or customers.DEFAULT_RATE_LIMITS
    return KeyObject(
        id=key.id,
        name=key.name or "",
        key_prefix=key.display_prefix + "…",
        scope=key.scopes[0],  # type: ignore[arg-type]
        active=key.revoked_at is None and (key.expires_at is None or key.expires_at > now),
        rate_limit_per_minute=limits["minute"],
        rate_limit_per_hour=limits["hour"],
        last_used_at=iso(key.last_used_at) if key.last_used_at else None,
        created_at=iso(key.created_at),
        expires_at=iso(key.expires_at) if key.expires_at else None,
    )


def expiry(text: str | None, now: datetime) -> datetime | None:
    """`expires_at`: an ISO 8601 instant in the future (without a zone it is read as UTC)."""
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise PhotoError(400, "expires_at must be an ISO 8601 time such as 2027-01-31T00:00:00Z") from None
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    if at <= now:
        raise PhotoError(400, "expires_at must be in the future")
    return at.astimezone(UTC)


class KeysController(Controller):
    path = "/api/v1/api-keys"
    tags = ["keys"]

    @get("/", guards=[requires(KEYS_READ)], **docs.LIST_KEYS)
    async def list_keys(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> KeyList:
        rows = await photo.db.read(keys.owner_keys, customers.SERVICE, request.user.owner_id)
        now = datetime.now(UTC)
        return KeyList([key_object(row, now) for row in rows])

    @post("/", guards=[requires(KEYS_WRITE)], **docs.CREATE_KEY)
    async def create_key(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> Response[KeyCreated]:
        owner = request.user.account
        body = decode_body(_decode_create, await request.body(), ERRORS)
        if not body.name.strip():
            raise PhotoError(400, "name must not be blank")
        now = datetime.now(UTC)
        expires_at = expiry(body.expires_at, now)
        row, secret = await photo.db.write(
            customers.create_key,
            owner.customer_id,
            owner.environment,
            name=body.name,
            scope=body.scope,
            expires_at=expires_at,
            now=now,
        )
        listed = key_object(row, now)
        created = KeyCreated(key=secret, **{f: getattr(listed, f) for f in KeyCreated.__struct_fields__ if f != "key"})
        return Response(created, status_code=201)

    @delete("/{key_id:str}", guards=[requires(KEYS_WRITE)], **docs.REVOKE_KEY)
    async def revoke_key(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway], key_id: FromPath[str]
    ) -> KeyRevoked:
        revoked_at = await photo.db.write(
            keys.revoke_owner_key, customers.SERVICE, request.user.owner_id, key_id, datetime.now(UTC)
        )
        if revoked_at is None:
            raise PhotoError(404, "No key with that id on this account")
        return KeyRevoked(id=key_id, active=False, revoked_at=iso(revoked_at))
