"""Key management (section 4.1, `full` scope): list, create, revoke; a key manages only its own customer's keys
(operations/photo/keys.py, which the dashboard's pages call too)."""

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
from gateway.photo.auth import KEYS_READ, KEYS_WRITE, PhotoPrincipal, account_of
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import ERRORS
from gateway.photo.schemas import CreateKeyRequest, KeyCreated, KeyList, KeyObject, KeyRevoked
from operations.photo import keys as key_operations
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


class KeysController(Controller):
    path = "/api/v1/api-keys"
    tags = ["keys"]

    @get("/", guards=[requires(KEYS_READ)], **docs.LIST_KEYS)
    async def list_keys(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> KeyList:
        rows = await key_operations.listed(photo.operations, account_of(request.user))
        now = datetime.now(UTC)
        return KeyList([key_object(row, now) for row in rows])

    @post("/", guards=[requires(KEYS_WRITE)], **docs.CREATE_KEY)
    async def create_key(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> Response[KeyCreated]:
        body = decode_body(_decode_create, await request.body(), ERRORS)
        now = datetime.now(UTC)
        row, secret = await key_operations.create(
            photo.operations,
            account_of(request.user),
            name=body.name,
            scope=body.scope,
            expires_at=body.expires_at,
            now=now,
        )
        listed = key_object(row, now)
        created = KeyCreated(key=secret, **{f: getattr(listed, f) for f in KeyCreated.__struct_fields__ if f != "key"})
        return Response(created, status_code=201)

    @delete("/{key_id:str}", guards=[requires(KEYS_WRITE)], **docs.REVOKE_KEY)
    async def revoke_key(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway], key_id: FromPath[str]
    ) -> KeyRevoked:
        revoked_at = await key_operations.revoke(photo.operations, account_of(request.user), key_id, datetime.now(UTC))
        return KeyRevoked(id=key_id, active=False, revoked_at=iso(revoked_at))
