"""The helpdesk's API keys (section 5.1): `hd_live_<secret>`, owned by an organization, stored as SHA-256 in the shared
key store with the scopes chosen for them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from storage.common import keys
from storage.helpdesk.workspaces import ORGANIZATIONS
from wire.ids import new_uuid

SERVICE = "helpdesk"
KEY_PREFIX = "hd"
RESOURCES = (
    "tickets",
    "customers",
    "conversations",
    "articles",
    "automations",
    "macros",
    "sla",
    "settings",
    "scheduling",
    "views",
    "analytics",
    "reports",
    "search",
    "ai",
    "users",
    "notifications",
    "attachments",
    "events",
    "export",
    "helpcenter",
    "integrations",
    "webhooks",
    "sequences",
    "campaigns",
    "lists",
    "deals",
)
SCOPES = frozenset({"*"} | {f"{resource}:{action}" for resource in RESOURCES for action in ("read", "write", "*")})
"""What a key may be granted: section 5.1's resources, each as `:read`, `:write` (implies read) or `:*`, and `*`."""
DEFAULT_RATE_LIMITS = {"minute": 600, "hour": 20000}
"""A key's requests per minute and per hour unless an operator sets others (docs/helpdesk.md, "Limits")."""


@dataclass(frozen=True, slots=True)
class KeyOwner:
    """What a presented key stands for."""

    key_id: str
    organization_id: str
    scopes: list[str]
    rate_limits: dict[str, int]


def create_key(
    connection: Connection,
    organization_id: str,
    *,
    name: str,
    scopes: Sequence[str],
    rate_limits: dict[str, int] | None = None,
    now: datetime | None = None,
) -> tuple[Row[Any], str]:
    """A new key for the organization; returns its row and the key itself, shown this once. ValueError for a scope
    not in SCOPES, LookupError for no such organization."""
    unknown = sorted(set(scopes) - SCOPES)
    if unknown or not scopes:
        raise ValueError(f"unknown scope {unknown[0]!r}" if unknown else "a key needs at least one scope")
    if connection.execute(select(ORGANIZATIONS.c.id).where(ORGANIZATIONS.c.id == organization_id)).first() is None:
        raise LookupError(f"no organization {organization_id}")
    return keys.create_key(
        connection,
        service=SERVICE,
        owner_id=organization_id,
        environment="live",
        prefix=KEY_PREFIX,
        scopes=list(dict.fromkeys(scopes)),
        key_id=new_uuid(),
        name=name,
        rate_limits=rate_limits or dict(DEFAULT_RATE_LIMITS),
        now=now,
    )


_KEY_OWNERS = keys.usable_keys(SERVICE)


def key_owners(connection: Connection, key_hashes: list[str], now: datetime) -> dict[str, KeyOwner]:
    """The owners of those presented keys (by SHA-256) that authenticate at `now`, in one query."""
    return {
        row.key_hash: KeyOwner(row.id, row.owner_id, list(row.scopes), row.rate_limits or DEFAULT_RATE_LIMITS)
        for row in connection.execute(_KEY_OWNERS, {"hashes": key_hashes, "now": now})
    }
