"""Phone's authentication step: `Authorization: Bearer sy_<env>_...`, a key owned by a tenant, as a principal whose
scopes are the key's (`verify`, `requests:read`, `usage:read`) and one `sku:<sku>` per product its tenant may use."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection

from gateway.common.auth import KeyAuthenticator, KeyHeader, Principal, Refusal, Scopes
from gateway.phone.errors import PhoneError
from storage.common.db import Database
from storage.phone import tenants
from storage.phone.tenants import KeyOwner

KEY_HEADER = KeyHeader(
    "Authorization", scheme="bearer", prefixes=tuple(f"{tenants.KEY_PREFIX}_{env}_" for env in ("live", "test"))
)
VERIFY, REQUESTS_READ, USAGE_READ = tenants.ALL_SCOPES
PhonePrincipal = Principal[KeyOwner]


def sku_scope(sku: str) -> str:
    """The scope a tenant's principal holds for each product (SKU) the tenant may use."""
    return f"sku:{sku}"


def _refuse(reason: Refusal) -> PhoneError:
    if reason == "missing":
        return PhoneError("unauthorized", "send your API key as `Authorization: Bearer <key>`")
    if reason == "unavailable":
        return PhoneError("enforcement_unavailable", "API keys cannot be checked right now; retry")
    return PhoneError("unauthorized", "the API key is not valid or has been revoked")


class PhoneAuthenticator:
    """The key (401), then the tenant's status (403 `tenant_suspended`); the guards then check the scopes, the
    route's own first (403 `forbidden_scope`), then the product's (403 `forbidden_sku`)."""

    def __init__(self, db: Database) -> None:
        self.keys = KeyAuthenticator(db, KEY_HEADER, tenants.key_owners, _refuse)

    async def authenticate(self, connection: ASGIConnection[Any, Any, Any, Any]) -> PhonePrincipal:
        owner = await self.keys.owner(connection.headers)
        if owner.tenant_status != "active":
            raise PhoneError("tenant_suspended", "this tenant is suspended; contact support")
        scopes = Scopes([*owner.scopes, *(sku_scope(sku) for sku in owner.allowed_skus)])
        return Principal(owner.tenant_id, owner.environment, scopes, "bearer", owner.key_id, owner)

    def forbidden(self, principal: PhonePrincipal, scope: str) -> PhoneError:
        if scope.startswith("sku:"):
            sku = scope.removeprefix("sku:")
            return PhoneError("forbidden_sku", f"this tenant may not use the `{sku}` product", details={"sku": sku})
        return PhoneError("forbidden_scope", f"this API key lacks the `{scope}` scope", details={"scope": scope})

    async def admit(self, principal: PhonePrincipal) -> None:
        """Phone's rate limit is counted by verify alone, after its Idempotency-Key check (the contract's order)."""
