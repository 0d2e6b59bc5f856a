"""Phone keys: `Authorization: Bearer sy_<env>_...`, owned by a tenant; what a key's owner may do."""

from __future__ import annotations

from gateway.common.auth import KeyAuthenticator, KeyHeader, Refusal
from gateway.phone.errors import PhoneError
from storage.common.db import Database
from storage.phone import tenants
from storage.phone.tenants import KeyOwner

KEY_HEADER = KeyHeader(
    "authorization", scheme="bearer", prefixes=tuple(f"{tenants.KEY_PREFIX}_{env}_" for env in ("live", "test"))
)


def _refuse(reason: Refusal) -> PhoneError:
    if reason == "missing":
        return PhoneError("unauthorized", "send your API key as `Authorization: Bearer <key>`")
    return PhoneError("unauthorized", "the API key is not valid or has been revoked")


def phone_authenticator(db: Database) -> KeyAuthenticator[KeyOwner]:
    return KeyAuthenticator(db, KEY_HEADER, tenants.key_owners, _refuse)


def authorize(owner: KeyOwner, scope: str, sku: str | None = None) -> None:
    if owner.tenant_status != "active":
        raise PhoneError("tenant_suspended", "this tenant is suspended; contact support")
    if scope not in owner.scopes:
        raise PhoneError("forbidden_scope", f"this API key lacks the `{scope}` scope", details={"scope": scope})
    if sku is not None and sku not in owner.allowed_skus:
        raise PhoneError("forbidden_sku", f"this tenant may not use the `{sku}` product", details={"sku": sku})
