"""Bearer keys: which tenant and environment a key stands for, and what it may do."""

from __future__ import annotations

import asyncio
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
        self._loading: dict[str, asyncio.Future[KeyOwner | None]] = {}

    async def owner(self, authorization: str | None) -> KeyOwner:
        scheme, _, key = (authorization or "").partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise PhoneError("unauthorized", "send your API key as `Authorization: Bearer <key>`")
        now = time.monotonic()
        cached = self._cache.get(key)
        owner = cached[1] if cached is not None and cached[0] > now else await self._load(key, now)
        if owner is None:
            raise PhoneError("unauthorized", "the API key is not valid or has been revoked")
        return owner

    async def _load(self, key: str, now: float) -> KeyOwner | None:
        """One database look-up per key at a time: callers arriving while it runs share its answer."""
        if (loading := self._loading.get(key)) is not None:
            return await asyncio.shield(loading)
        loading = self._loading[key] = asyncio.get_running_loop().create_future()
        try:
            async with self.db.read() as session:
                owner = await tenants.find_key_owner(session, key)
            loading.set_result(owner)
        except BaseException as error:
            loading.set_exception(error)
            loading.exception()  # retrieved here, so a failure nobody else awaited is not reported twice
            raise
        finally:
            del self._loading[key]
        if self.ttl_s > 0:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (now + self.ttl_s, owner)
        return owner


def authorize(owner: KeyOwner, scope: str, sku: str | None = None) -> None:
    if owner.tenant_status != "active":
        raise PhoneError("tenant_suspended", "this tenant is suspended; contact support")
    if scope not in owner.scopes:
        raise PhoneError("forbidden_scope", f"this API key lacks the `{scope}` scope", details={"scope": scope})
    if sku is not None and sku not in owner.allowed_skus:
        raise PhoneError("forbidden_sku", f"this tenant may not use the `{sku}` product", details={"sku": sku})
