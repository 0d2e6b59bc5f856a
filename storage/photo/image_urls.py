"""Signed, expiring URLs of stored images (`image_url`): made wherever a verification object is built, checked by
the photo gateway that serves them. HMAC-SHA256 over the verification id and the expiry."""

from __future__ import annotations

import hashlib
import hmac
import time


class UrlSigner:
    def __init__(self, base_url: str, key: bytes, ttl_s: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.ttl_s = ttl_s

    def _signature(self, verification_id: str, expires: int) -> str:
        return hmac.new(self.key, f"{verification_id}.{expires}".encode(), hashlib.sha256).hexdigest()

    def url(self, verification_id: str, now: float | None = None) -> str:
        expires = int(now if now is not None else time.time()) + self.ttl_s
        signature = self._signature(verification_id, expires)
        return f"{self.base_url}/v1/images/{verification_id}?expires={expires}&signature={signature}"

    def refusal(self, verification_id: str, expires: str | None, signature: str | None) -> str | None:
        """Why this URL must not be served, or None when it is genuine and current."""
        if not expires or not signature or not expires.isdigit():
            return "This image URL is not signed"
        if not hmac.compare_digest(self._signature(verification_id, int(expires)), signature):
            return "This image URL's signature is not valid"
        if int(expires) < time.time():
            return "This image URL has expired: fetch the verification again for a fresh one"
        return None
