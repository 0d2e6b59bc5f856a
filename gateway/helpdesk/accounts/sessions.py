"""Signed-in browsers: two HTTP-only cookies, `hd-access-token` (a JWT that lives 15 minutes) and `hd-refresh-token`
(opaque, rotating, stored hashed). Every request checks in storage that its session is alive, with nothing cached
(requests arriving together share one query), so a sign-out or a revoked family holds on the very next request."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from litestar.datastructures import Cookie

from gateway.helpdesk.accounts.credentials import AccessTokens
from storage.common.batching import GroupCommit
from storage.common.db import Database
from storage.helpdesk import accounts
from wire.tokens import digest, opaque

ACCESS_COOKIE, REFRESH_COOKIE = "hd-access-token", "hd-refresh-token"
ACCESS_LIFETIME = timedelta(minutes=15)
REFRESH_LIFETIME = timedelta(days=30)
"""How long a browser stays signed in without a request (each refresh starts this again)."""
REFRESH_GRACE = timedelta(seconds=10)
"""A refresh token presented again this soon after its rotation belongs to requests sent together, not to a thief."""


@dataclass(frozen=True, slots=True)
class SignedIn:
    user_id: str
    session_id: str
    member: accounts.Member | None = None
    """Where the user belongs, when the request's check of its session told (an access token's); None after a
    refresh, when it is read from the user."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """Who a request's cookies sign in (None: nobody), and the cookies its response must set: fresh ones after a
    transparent refresh, expired ones when the session is over."""

    signed_in: SignedIn | None
    cookies: Sequence[Cookie] = ()


class Sessions:
    def __init__(
        self,
        db: Database,
        tokens: AccessTokens,
        *,
        secure: bool,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`secure`: cookies only over HTTPS (when the public URL is https)."""
        self.db = db
        self.tokens = tokens
        self.secure = secure
        self.clock = clock
        self._alive: GroupCommit[str, accounts.Member | None] = GroupCommit(self._look_up)

    async def start(self, user_id: str) -> Resolved:
        """A new session for a user who just proved who they are, and its cookies."""
        refresh = opaque("rt")
        session_id = await self.db.write(accounts.start_session, user_id, digest(refresh), self.clock())
        return Resolved(SignedIn(user_id, session_id), self._cookies(user_id, session_id, refresh))

    async def resolve(self, cookies: Mapping[str, str]) -> Resolved:
        """The session a request's cookies belong to. A valid access token counts only while its session is alive; an
        expired or missing one is renewed from the refresh token (rotating it), once per request."""
        access = self.tokens.read(cookies.get(ACCESS_COOKIE, ""))
        if access is not None:
            member = await self._alive.submit(access.session_id)
            if member is not None:
                return Resolved(SignedIn(access.user_id, access.session_id, member))
            return Resolved(None, self.cleared())
        refresh = cookies.get(REFRESH_COOKIE)
        if not refresh:
            return Resolved(None)
        successor = opaque("rt")
        rotation = await self.db.write(
            accounts.rotate,
            digest(refresh),
            digest(successor),
            self.clock(),
            lifetime=REFRESH_LIFETIME,
            grace=REFRESH_GRACE,
        )
        if rotation.user_id is None or rotation.session_id is None or rotation.outcome in ("reused", "refused"):
            return Resolved(None, self.cleared())
        if rotation.outcome == "concurrent":  # the request that rotated it sets the new cookies
            return Resolved(SignedIn(rotation.user_id, rotation.session_id))
        return Resolved(
            SignedIn(rotation.user_id, rotation.session_id),
            self._cookies(rotation.user_id, rotation.session_id, successor),
        )

    async def end(self, session_id: str) -> Sequence[Cookie]:
        """Sign out: the session is revoked at once; the cookies that clear the browser's."""
        await self.db.write(accounts.revoke, session_id, "sign_out", self.clock())
        return self.cleared()

    def cleared(self) -> list[Cookie]:
        return [self._cookie(ACCESS_COOKIE, "", 0), self._cookie(REFRESH_COOKIE, "", 0)]

    def _cookies(self, user_id: str, session_id: str, refresh: str) -> list[Cookie]:
        return [
            self._cookie(ACCESS_COOKIE, self.tokens.issue(user_id, session_id), int(ACCESS_LIFETIME.total_seconds())),
            self._cookie(REFRESH_COOKIE, refresh, int(REFRESH_LIFETIME.total_seconds())),
        ]

    def _cookie(self, name: str, value: str, max_age: int) -> Cookie:
        return Cookie(
            key=name, value=value, max_age=max_age, path="/", httponly=True, samesite="lax", secure=self.secure
        )

    async def _look_up(self, session_ids: list[str]) -> list[accounts.Member | None]:
        alive = await self.db.read(accounts.alive, set(session_ids))
        return [alive.get(session_id) for session_id in session_ids]
