"""Bearer keys: which tenant and environment a key stands for, and what it may do."""

from __future__ import annotations

import time

from gateway.phone.errors import PhoneError
from storage import tenants
from storage.db import Database
from storage.tenants import KeyOwner


class Authenticator:
    """Resolves `Authorization: Bearer <key>` to its owner, caching answers for `ttl_s` seconds.

    The cache bounds how long a revoked key or a suspended tenant keeps working (documented in the README).
    """

    def __init__(self, db: Database, ttl_s: float) -> None:
        self.db = db
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, KeyOwner | None]] = {}

    async def owner(self, authorization: str | None) -> KeyOwner:
        scheme, _, key = (authorization or "").partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise PhoneError("unauthorized", "send your API key as `Authorization: Bearer <key>`")
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            owner = cached[1]
        else:
            async with self.db.read() as session:
                owner = await tenants.find_key_owner(session, key)
            if self.ttl_s > 0:
                if len(self._cache) > 10_000:
                    self._cache.clear()
                self._cache[key] = (now + self.ttl_s, owner)
        if owner is None:
            raise PhoneError("unauthorized", "the API key is not valid or has been revoked")
        return owner


def authorize(owner: KeyOwner, scope: str, sku: str | None = None) -> None:
    if owner.tenant_status != "active":
        raise PhoneError("tenant_suspended", "this tenant is suspended; contact support")
    if scope not in owner.scopes:
        raise PhoneError("forbidden_scope", f"this API key lacks the `{scope}` scope", details={"scope": scope})
    if sku is not None and sku not in owner.allowed_skus:
        raise PhoneError("forbidden_sku", f"this tenant may not use the `{sku}` product", details={"sku": sku})
