"""Photo's authentication step: `X-API-Key: pc_live_...` or `pc_test_...`, a key owned by a customer, as a principal
whose scopes come from the key's (`full`: `*`; `verify_only`: `verify`), then each admitted request's budget."""

from __future__ import annotations

import functools
import re
from typing import Any

from limits import RateLimitItem, parse
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from gateway.common.auth import KeyAuthenticator, KeyHeader, LastUsed, Principal, Refusal, Scopes
from gateway.common.limits import RateLimits
from gateway.photo.errors import INVALID_KEY, PhotoError
from operations.photo.account import Account
from storage.common.db import Database
from storage.photo import customers
from storage.photo.customers import KeyOwner

PREFIXES = tuple(f"{customers.KEY_PREFIX}_{environment}_" for environment in ("live", "test"))
KEY_HEADER = KeyHeader("X-API-Key", scheme=None, prefixes=PREFIXES)
_OTHER_SERVICE_KEY = re.compile(r"[a-z]{2,8}_(live|test)_")
PhotoPrincipal = Principal[KeyOwner]

VERIFY = "verify"
KEYS_READ, KEYS_WRITE = "keys:read", "keys:write"
WEBHOOKS_READ, WEBHOOKS_WRITE = "webhooks:read", "webhooks:write"
VERIFICATIONS_READ, VERIFICATIONS_WRITE = "verifications:read", "verifications:write"
INSPECTIONS_READ, INSPECTIONS_WRITE = "inspections:read", "inspections:write"
SCOPES = {"full": ("*",), "verify_only": (VERIFY,)}
"""A key's scope (section 5.3) as the scopes it grants: `full` everything, `verify_only` the verify call alone."""


def account_of(principal: PhotoPrincipal) -> Account:
    """The account a key acts for, in its environment (operations/photo)."""
    return Account(principal.account.customer_id, principal.account.environment)


def _refuse(reason: Refusal) -> PhotoError:
    if reason == "missing":
        return PhotoError(401, "Missing API key: send it in the X-API-Key header")
    if reason == "unavailable":
        return PhotoError(503, "Authentication service unavailable; retry")
    return PhotoError(401, INVALID_KEY)


def _limited(window: RateLimitItem, retry_after: int) -> PhotoError:
    return PhotoError(429, f"Rate limit reached: {window} for this key", retry_after=retry_after)


def _unavailable() -> PhotoError:
    return PhotoError(503, "Rate limits cannot be checked right now; retry")


PERIODS = ("second", "minute", "hour", "day")
"""A key's windows are counted shortest first: a refusal in a short one never costs the longer ones."""


@functools.cache
def _window(per: str, amount: int) -> RateLimitItem:
    return parse(f"{amount}/{per}")


class PhotoAuthenticator:
    """The key (401; 403 for another service's key; 503 when the key store does not answer), then, once the route's
    scopes are granted (403 otherwise), the key's per-minute and per-hour budgets (429). A refused request is
    counted against nothing else and is never processed."""

    def __init__(self, db: Database, redis_url: str | None) -> None:
        self.keys = KeyAuthenticator(db, KEY_HEADER, customers.key_owners, _refuse)
        self.last_used = LastUsed(db)
        self.limits = RateLimits(redis_url, limited=_limited, unavailable=_unavailable)

    async def authenticate(self, connection: ASGIConnection[Any, Any, Any, Any]) -> PhotoPrincipal:
        key = KEY_HEADER.key_in(connection.headers)
        if key is not None and not key.startswith(PREFIXES) and _OTHER_SERVICE_KEY.match(key):
            raise PhotoError(403, "This API key is not valid for the photo compliance service")
        owner = await self.keys.owner(connection.headers)
        scopes = Scopes(SCOPES.get(owner.scope, ()))
        return Principal(owner.customer_id, owner.environment, scopes, "api_key", owner.key_id, owner)

    def forbidden(self, principal: PhotoPrincipal, scope: str) -> PhotoError:
        return PhotoError(403, f"This key's scope is {principal.account.scope}: it can only submit images to verify")

    async def admit(self, principal: PhotoPrincipal) -> None:
        """Section 8: a key's limits apply to every route, counted once the key may call it."""
        limits = principal.account.rate_limits
        key_id = principal.account.key_id
        await self.limits.hit(key_id, [_window(per, limits[per]) for per in PERIODS if per in limits])
        self.last_used.note(key_id)

    async def ping(self) -> None:
        await self.limits.ping()


async def subscribed(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """A guard: live verification needs an active subscription (section 5.6); sandbox keys are free and always
    work. (Asynchronous, though it awaits nothing: Litestar runs a synchronous guard on a worker thread.)"""
    require_subscription(connection.user.account)


def require_subscription(owner: KeyOwner) -> None:
    """Live verification needs an active subscription; a sandbox one never does."""
    if owner.environment == "live" and not owner.subscription_active:
        raise PhotoError(403, "This account has no active subscription")
