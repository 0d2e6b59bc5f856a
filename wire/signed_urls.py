"""Signed, expiring URLs: a path under a base URL with `expires` (UNIX seconds) and `signature`, the hex HMAC-SHA256
of the object's id and the expiry. Whoever holds the URL may fetch the object until it expires; nobody can make one."""

from __future__ import annotations

import time
from typing import Literal

from wire.signatures import hex_hmac_sha256, same

Refusal = Literal["unsigned", "forged", "expired"]


class SignedUrls:
    """URLs `<base_url><path>/<id>?expires=...&signature=...`, valid `ttl_s` seconds from when they are made."""

    def __init__(self, base_url: str, path: str, key: bytes, ttl_s: int) -> None:
        self.prefix = base_url.rstrip("/") + "/" + path.strip("/") + "/"
        self.key = key
        self.ttl_s = ttl_s

    def _signature(self, object_id: str, expires: int) -> str:
        return hex_hmac_sha256(self.key, f"{object_id}.{expires}".encode())

    def url(self, object_id: str, now: float | None = None) -> str:
        expires = int(now if now is not None else time.time()) + self.ttl_s
        return f"{self.prefix}{object_id}?expires={expires}&signature={self._signature(object_id, expires)}"

    def refusal(
        self, object_id: str, expires: str | None, signature: str | None, now: float | None = None
    ) -> Refusal | None:
        """Why this URL must not be served, or None when it is genuine and current."""
        if not expires or not signature or not expires.isdigit():
            return "unsigned"
        if not same(self._signature(object_id, int(expires)), signature):
            return "forged"
        if int(expires) < (now if now is not None else time.time()):
            return "expired"
        return None
