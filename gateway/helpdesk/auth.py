"""The REST API's authentication step (section 5.1): `Authorization: Bearer hd_live_...`, a key owned by an
organization, as a principal with the key's scopes; then each admitted request's per-key budget. Procedures do not
pass through it: they authenticate by session cookie (gateway/helpdesk/sessions.py)."""

from __future__ import annotations

import functools
from typing import Any

from limits import RateLimitItem, parse
from litestar.connection import ASGIConnection

from gateway.common.auth import KeyAuthenticator, KeyHeader, LastUsed, Principal, Refusal, Scopes
from gateway.common.limits import RateLimits
from gateway.helpdesk.errors import HelpdeskError
from operations.common.actors import Actor
from storage.common.db import Database
from storage.helpdesk import keys
from storage.helpdesk.keys import KeyOwner

KEY_HEADER = KeyHeader("Authorization", scheme="bearer", prefixes=(f"{keys.KEY_PREFIX}_live_",))
HelpdeskPrincipal = Principal[KeyOwner]
PERIODS = ("minute", "hour")


def _refuse(reason: Refusal) -> HelpdeskError:
    if reason == "missing":
        return HelpdeskError(401, "Missing API key: send it as Authorization: Bearer hd_live_...")
    if reason == "unavailable":
        return HelpdeskError(503, "Authentication is unavailable for a moment; retry")
    return HelpdeskError(401, "Invalid API key: unknown or revoked")


def _limited(window: RateLimitItem, retry_after: int) -> HelpdeskError:
    return HelpdeskError(429, f"Rate limit reached: {window} for this key", retry_after=retry_after)


def _unavailable() -> HelpdeskError:
    return HelpdeskError(503, "Rate limits cannot be checked right now; retry")


@functools.cache
def _window(per: str, amount: int) -> RateLimitItem:
    return parse(f"{amount}/{per}")


class HelpdeskAuthenticator:
    """The key (401; 503 when the key store does not answer), then, once the route's scope is granted (403 otherwise),
    the key's per-minute and per-hour budgets (429 with Retry-After)."""

    def __init__(self, db: Database, redis_url: str | None) -> None:
        self.keys = KeyAuthenticator(db, KEY_HEADER, keys.key_owners, _refuse)
        self.last_used = LastUsed(db)
        self.limits = RateLimits(redis_url, limited=_limited, unavailable=_unavailable)

    async def authenticate(self, connection: ASGIConnection[Any, Any, Any, Any]) -> HelpdeskPrincipal:
        owner = await self.keys.owner(connection.headers)
        return Principal(owner.organization_id, "live", Scopes(owner.scopes), "bearer", owner.key_id, owner)

    def forbidden(self, principal: HelpdeskPrincipal, scope: str) -> HelpdeskError:
        return HelpdeskError(403, f"This key lacks the scope {scope}")

    async def admit(self, principal: HelpdeskPrincipal) -> None:
        limits = principal.account.rate_limits
        await self.limits.hit(principal.account.key_id, [_window(per, limits[per]) for per in PERIODS if per in limits])
        self.last_used.note(principal.account.key_id)

    async def ping(self) -> None:
        await self.limits.ping()


def actor_of(request: ASGIConnection[Any, HelpdeskPrincipal, Any, Any]) -> Actor:
    """Who a REST request acts for: its key, in the key's organization."""
    return Actor(request.user.owner_id, key_id=request.user.account.key_id)
