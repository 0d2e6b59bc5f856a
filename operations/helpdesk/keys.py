"""API keys of the REST API (section 5.1), made by an organization's admins: listed (never the key itself, only its
first characters), made (the key shown in the answer only; only its SHA-256 is stored) and revoked (at once: the
next request with it is 401)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from operations.common.actors import Actor
from operations.common.errors import Invalid, NotFound
from operations.helpdesk.desk import Helpdesk
from storage.common import keys as key_store
from storage.helpdesk import keys
from wire.text import LINE

MANAGE = "manage API keys"
Scope = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=LINE)]


class CreateKey(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=LINE)]
    scopes: Annotated[list[Scope], msgspec.Meta(min_length=1, max_length=len(keys.SCOPES))]


class KeyId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=LINE)]


async def listing(desk: Helpdesk, actor: Actor) -> list[Any]:
    """Every key of the organization, revoked ones included, newest first (rows of the key store)."""
    actor.require_admin(MANAGE)
    return await desk.db.read(key_store.owner_keys, keys.SERVICE, actor.organization_id)


async def create(desk: Helpdesk, actor: Actor, given: CreateKey) -> tuple[Any, str]:
    """The new key's row and the key itself (shown this once)."""
    actor.require_admin(MANAGE)
    unknown = sorted(set(given.scopes) - keys.SCOPES)
    if unknown:
        raise Invalid(
            f"Unknown scope {unknown[0]!r}: a scope is `*`, or `<resource>:read`, `:write` or `:*` of a resource "
            "of section 5.1 (tickets, customers, conversations, events, webhooks, ...)"
        )
    return await desk.db.write(keys.create_key, actor.organization_id, name=given.name, scopes=given.scopes)


async def revoke(desk: Helpdesk, actor: Actor, key_id: str) -> datetime:
    """When it was revoked (now, or when it first was)."""
    actor.require_admin(MANAGE)
    revoked_at = await desk.db.write(
        key_store.revoke_owner_key, keys.SERVICE, actor.organization_id, key_id, desk.clock()
    )
    if revoked_at is None:
        raise NotFound("No API key with that id in this organization")
    return revoked_at
