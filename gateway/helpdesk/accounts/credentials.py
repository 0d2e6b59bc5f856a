"""What proves who a person is: their password (kept as an argon2id hash) and their access tokens (signed JWTs that live
15 minutes). Opaque tokens (refresh tokens, links) are wire/tokens.py's."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError


@dataclass(frozen=True, slots=True)
class PasswordCost:
    """argon2id's parameters. The defaults are OWASP's (Password Storage Cheat Sheet: 19 MiB, 2 passes, 1 lane);
    tests use cheap ones."""

    memory_kib: int = 19_456
    passes: int = 2
    lanes: int = 1


class Passwords:
    """Hashing and checking passwords off the event loop (a hash costs tens of milliseconds of CPU by design)."""

    def __init__(self, cost: PasswordCost = PasswordCost()) -> None:
        self._hasher = PasswordHasher(time_cost=cost.passes, memory_cost=cost.memory_kib, parallelism=cost.lanes)
        # Checked against when a user has no password, so that "no such password" takes as long as "wrong password".
        self._decoy = self._hasher.hash(secrets.token_hex(16))

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def check(self, stored: str | None, password: str) -> bool:
        """Whether `password` is the one `stored` was made from; False, after as much work, when there is none."""
        return await asyncio.to_thread(self._check, stored, password)

    def _check(self, stored: str | None, password: str) -> bool:
        try:
            return self._hasher.verify(stored or self._decoy, password) and stored is not None
        except (VerificationError, InvalidHashError):
            return False

    def outdated(self, stored: str) -> bool:
        """Whether `stored` was made with other parameters than today's (rehash it at the next sign-in)."""
        return self._hasher.check_needs_rehash(stored)


@dataclass(frozen=True, slots=True)
class Access:
    """What a valid access token says: whose it is and which session (refresh family) it belongs to."""

    user_id: str
    session_id: str
    expires_at: float


VERIFIED_TOKENS = 4096
"""Access tokens whose signature was checked, remembered (a browser sends the same one with each request for 15
minutes): checking a JWT was the largest cost of admitting a procedure call (bench/README.md, "Procedures")."""


class AccessTokens:
    """Short-lived signed JWTs (HS256) naming a user and a session. Whether the session is still alive is storage's
    to say, on every request: a token alone never keeps a signed-out session working."""

    ISSUER = "signalyard-helpdesk"

    def __init__(
        self, key: bytes, *, lifetime: timedelta = timedelta(minutes=15), clock: Callable[[], float] = time.time
    ) -> None:
        self._key = key
        self._lifetime = lifetime.total_seconds()
        self._clock = clock
        self._verified = functools.lru_cache(maxsize=VERIFIED_TOKENS)(self._verify)

    def issue(self, user_id: str, session_id: str) -> str:
        now = self._clock()
        claims = {"iss": self.ISSUER, "sub": user_id, "sid": session_id, "iat": int(now), "exp": now + self._lifetime}
        return jwt.encode(claims, self._key, algorithm="HS256")

    def read(self, token: str) -> Access | None:
        """The token's claims when it is ours, intact and not expired; None otherwise."""
        access = self._verified(token)
        if access is None or access.expires_at <= self._clock():
            return None
        return access

    def derived(self, purpose: str) -> str:
        """A secret of this key's for another use (the pages' CSRF tokens), which tells nothing of the key."""
        return hmac.new(self._key, purpose.encode(), hashlib.sha256).hexdigest()

    def _verify(self, token: str) -> Access | None:
        """The claims of a token signed with our key (whatever its expiry, which `read` checks at every use)."""
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=["HS256"],
                issuer=self.ISSUER,
                options={"require": ["exp", "sub", "sid"], "verify_exp": False},
            )
        except jwt.InvalidTokenError:
            return None
        if not isinstance(claims.get("sub"), str) or not isinstance(claims.get("sid"), str):
            return None
        return Access(claims["sub"], claims["sid"], float(claims["exp"]))
