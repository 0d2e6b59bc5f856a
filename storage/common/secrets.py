"""Secrets the services keep for later use (webhook signing secrets, inbound channels' provider secrets): stored
sealed, never in plain. A cipher (Fernet, or MultiFernet for rotation: the first key seals, every key opens) seals a
secret into a token kept in a column; only the code that needs the secret opens it."""

from __future__ import annotations

import functools
import hashlib

from cryptography.fernet import Fernet, MultiFernet

Cipher = Fernet | MultiFernet


def seal(cipher: Cipher, secret: str) -> str:
    """The secret as a token to store."""
    return cipher.encrypt(secret.encode()).decode()


@functools.lru_cache(maxsize=1024)
def unseal(cipher: Cipher, token: str) -> str:
    """The secret a stored token holds (raises cryptography.fernet.InvalidToken for a token of no known key). A token
    is opened once per cipher and remembered: an inbound endpoint opens its channel's secrets on every call, and a new
    secret is a new token. Fernet tokens carry no expiry here (no `ttl`), so a token's secret never changes."""
    return cipher.decrypt(token.encode()).decode()


def fingerprint(secret: str) -> str:
    """The secret's SHA-256, stored beside its token: it tells secrets apart without opening them."""
    return hashlib.sha256(secret.encode()).hexdigest()
