"""Browsers signed in to the dashboard: one HTTP-only cookie, `pc-session`, an opaque token stored hashed. Every request
checks its session in storage (storage/photo/sessions.py), so a sign-out, or the revocation of the key a session was
made from, holds on the very next request. The key itself is never kept in the browser."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from litestar.datastructures import Cookie

from storage.common.db import Database
from storage.photo import sessions
from storage.photo.sessions import SessionRecord
from topics.common.environment import Environment
from wire.tokens import digest, opaque

COOKIE = "pc-session"
LIFETIME = timedelta(hours=12)
"""How long a dashboard session lasts from its sign-in."""


@dataclass(frozen=True, slots=True)
class DashboardSessions:
    db: Database
    secure: bool
    """Cookies only over HTTPS (when the public URL is https)."""
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    async def start(self, customer_id: str, environment: Environment, key_id: str | None = None) -> Cookie:
        """A new session for an account that just proved itself (a mailed link, or a key: `key_id`), as its cookie."""
        token = opaque("session", "pc")
        await self.db.write(
            sessions.start,
            digest(token),
            customer_id,
            environment,
            key_id=key_id,
            now=self.clock(),
            lifetime=LIFETIME,
        )
        return self._cookie(token, int(LIFETIME.total_seconds()))

    async def resolve(self, cookies: Mapping[str, str]) -> SessionRecord | None:
        token = cookies.get(COOKIE)
        if not token:
            return None
        return await self.db.read(sessions.alive, digest(token), self.clock())

    async def switch(self, cookies: Mapping[str, str], environment: Environment) -> bool:
        token = cookies.get(COOKIE)
        return bool(token) and await self.db.write(sessions.switch, digest(token or ""), environment)

    async def end(self, cookies: Mapping[str, str]) -> Cookie:
        """Sign out: the session ends at once; the cookie that clears the browser's."""
        if token := cookies.get(COOKIE):
            await self.db.write(sessions.end, digest(token), self.clock())
        return self.cleared()

    def cleared(self) -> Cookie:
        return self._cookie("", 0)

    def _cookie(self, value: str, max_age: int) -> Cookie:
        return Cookie(
            key=COOKIE, value=value, max_age=max_age, path="/", httponly=True, samesite="lax", secure=self.secure
        )
