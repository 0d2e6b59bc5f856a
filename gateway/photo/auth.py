"""Photo keys: `X-API-Key: pc_live_...` or `pc_test_...`, owned by a customer; scopes, subscription and budgets."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from limits import RateLimitItem, parse
from sqlalchemy.exc import SQLAlchemyError

from gateway.common.auth import KeyAuthenticator, KeyHeader, LastUsed, Refusal
from gateway.common.limits import RateLimits
from gateway.photo.errors import INVALID_KEY, PhotoError
from storage.common.db import Database
from storage.photo import customers
from storage.photo.customers import KeyOwner

PREFIXES = tuple(f"{customers.KEY_PREFIX}_{environment}_" for environment in ("live", "test"))
KEY_HEADER = KeyHeader("x-api-key", scheme=None, prefixes=PREFIXES)
_OTHER_SERVICE_KEY = re.compile(r"[a-z]{2,8}_(live|test)_")


def _refuse(reason: Refusal) -> PhotoError:
    if reason == "missing":
        return PhotoError(401, "Missing API key: send it in the X-API-Key header")
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


class PhotoAuth:
    """Who is calling and what they may do: the key (401), the service and scope (403), the key's budget (429)."""

    def __init__(self, db: Database, redis_url: str | None) -> None:
        self.keys = KeyAuthenticator(db, KEY_HEADER, customers.key_owners, _refuse)
        self.last_used = LastUsed(db)
        self.limits = RateLimits(redis_url, limited=_limited, unavailable=_unavailable)

    async def owner(self, headers: Mapping[str, str], *, full_scope: bool) -> KeyOwner:
        """The key's owner, after its scope and its per-minute and per-hour budgets. A refused request is counted
        against nothing else and is never processed."""
        key = KEY_HEADER.key_in(headers)
        if key is not None and not key.startswith(PREFIXES) and _OTHER_SERVICE_KEY.match(key):
            raise PhotoError(403, "This API key is not valid for the photo compliance service")
        try:
            owner = await self.keys.owner(headers)
        except SQLAlchemyError as error:
            raise PhotoError(503, "Authentication service unavailable; retry") from error
        if full_scope and owner.scope != "full":
            raise PhotoError(403, "This key's scope is verify_only: it can only submit images to verify")
        limits = owner.rate_limits
        await self.limits.hit(owner.key_id, [_window(per, limits[per]) for per in PERIODS if per in limits])
        self.last_used.note(owner.key_id)
        return owner

    async def ping(self) -> None:
        await self.limits.ping()


def require_subscription(owner: KeyOwner) -> None:
    """Section 5.6: live verification needs an active subscription; sandbox keys are free and always work."""
    if owner.environment == "live" and not owner.subscription_active:
        raise PhotoError(403, "This account has no active subscription")
