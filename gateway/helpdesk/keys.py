"""API keys of the REST API (section 5.1), made by an organization's admins: the procedures `apiKeys.list`,
`apiKeys.create` (the key shown in its answer only; only its SHA-256 is stored) and `apiKeys.revoke` (at once: the next
request with it is 401)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from gateway.helpdesk.members import Members
from gateway.helpdesk.schemas import LINE
from gateway.helpdesk.trpc import Call, Procedure, ProcedureError
from storage.common import keys as key_store
from storage.common.db import Database
from storage.helpdesk import keys

Scope = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=LINE)]


class CreateInput(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=LINE)]
    scopes: Annotated[list[Scope], msgspec.Meta(min_length=1, max_length=len(keys.SCOPES))]


class RevokeInput(msgspec.Struct, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=LINE)]


def key_view(row: Any) -> dict[str, Any]:
    """A key as its list shows it: never the key itself, only its first characters."""
    return {
        "id": row.id,
        "name": row.name,
        "prefix": row.display_prefix,
        "scopes": list(row.scopes),
        "created_at": row.created_at,
        "last_used_at": row.last_used_at,
        "revoked_at": row.revoked_at,
    }


def procedures(members: Members, db: Database) -> Mapping[str, Procedure]:
    async def list_keys(call: Call, _: None) -> list[dict[str, Any]]:
        member = await members.admin(call)
        return [key_view(row) for row in await db.read(key_store.owner_keys, keys.SERVICE, member.organization_id)]

    async def create(call: Call, given: CreateInput) -> dict[str, Any]:
        member = await members.admin(call)
        unknown = sorted(set(given.scopes) - keys.SCOPES)
        if unknown:
            raise ProcedureError(
                "BAD_REQUEST",
                f"Unknown scope {unknown[0]!r}: a scope is `*`, or `<resource>:read`, `:write` or `:*` of a resource "
                "of section 5.1 (tickets, customers, conversations, events, webhooks, ...)",
            )
        row, key = await db.write(keys.create_key, member.organization_id, name=given.name, scopes=given.scopes)
        return key_view(row) | {"key": key}

    async def revoke(call: Call, given: RevokeInput) -> dict[str, Any]:
        member = await members.admin(call)
        revoked_at = await db.write(
            key_store.revoke_owner_key, keys.SERVICE, member.organization_id, given.id, members.deps.clock()
        )
        if revoked_at is None:
            raise ProcedureError("NOT_FOUND", "No API key with that id in this organization")
        return {"success": True, "id": given.id, "revoked_at": revoked_at}

    return {
        "apiKeys.list": Procedure("query", None, list_keys),
        "apiKeys.create": Procedure("mutation", CreateInput, create),
        "apiKeys.revoke": Procedure("mutation", RevokeInput, revoke),
    }
