"""API keys of the REST API for an organization's admins: `apiKeys.list`, `apiKeys.create` (the key in its answer
only) and `apiKeys.revoke`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from gateway.helpdesk.procedures.wire import Call, Procedure
from operations.helpdesk import keys
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.keys import CreateKey, KeyId


class Key(msgspec.Struct):
    """A key as its list shows it: never the key itself, only its first characters."""

    id: str
    name: str | None
    prefix: str
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> Key:
        return cls(
            row.id, row.name, row.display_prefix, list(row.scopes), row.created_at, row.last_used_at, row.revoked_at
        )


class MadeKey(Key):
    key: str
    """Shown this once."""


class Revoked(msgspec.Struct):
    id: str
    revoked_at: datetime
    success: bool = True


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_keys(call: Call, _: None) -> list[Key]:
        return [Key.of(row) for row in await keys.listing(desk, call.actor)]

    async def create(call: Call, given: CreateKey) -> MadeKey:
        row, key = await keys.create(desk, call.actor, given)
        return MadeKey(**msgspec.structs.asdict(Key.of(row)), key=key)

    async def revoke(call: Call, given: KeyId) -> Revoked:
        return Revoked(given.id, await keys.revoke(desk, call.actor, given.id))

    return {
        "apiKeys.list": Procedure("query", None, list_keys, "admin"),
        "apiKeys.create": Procedure("mutation", CreateKey, create, "admin"),
        "apiKeys.revoke": Procedure("mutation", KeyId, revoke, "admin"),
    }
