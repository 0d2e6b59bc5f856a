"""Who is calling, and whether they may call this route: an authentication step turns a request's credentials into a
principal (owner, environment, scopes, how it authenticated), and guards admit the principal to a route by the scopes
the route declares.

Nothing is cached: every request's key is looked up in the key store, so a revocation or a suspension holds on the
very next request through any gateway process. Requests arriving together share one look-up (a group commit of
reads), so the cost under load is one query per round, not one per request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

import structlog
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult, DefineMiddleware
from litestar.openapi.spec import SecurityScheme
from litestar.types import ASGIApp
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from storage.common.batching import GroupCommit
from storage.common.db import Database
from storage.common.keys import hash_key, touch_keys
from topics.common.environment import Environment

log = structlog.get_logger("signalyard.gateway")

Owner = TypeVar("Owner")
Account = TypeVar("Account")
Refusal = Literal["missing", "invalid", "unavailable"]
"""Why a key does not authenticate: none was sent; it is unknown, revoked or expired; the key store cannot answer."""
Method = Literal["bearer", "api_key", "session"]
"""How a principal authenticated: `Authorization: Bearer <key>`, `X-API-Key: <key>`, or a session cookie."""
NO_AUTHENTICATION = {"exclude_from_auth": True}
"""`opt` of a route that serves without a principal (health, metrics, a signed URL)."""
OwnerLookup = Callable[[Connection, list[str], datetime], Mapping[str, Owner]]
"""lookup(connection, key hashes, now) -> the owner of each hash whose key authenticates at `now`."""


@dataclass(frozen=True, slots=True)
class KeyHeader:
    """Where a service's clients send their key: `Authorization: Bearer <key>` (scheme "bearer") or `X-API-Key: <key>`
    (no scheme); the name is matched without regard to case. `prefixes` are the forms a key of this service can take;
    anything else is refused unlooked-up."""

    name: str
    scheme: str | None
    prefixes: Sequence[str]

    def security_scheme(self, description: str) -> SecurityScheme:
        """This header as the OpenAPI document names it."""
        if self.scheme is not None:
            return SecurityScheme(type="http", scheme=self.scheme, description=description)
        return SecurityScheme(type="apiKey", name=self.name, security_scheme_in="header", description=description)

    def key_in(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get(self.name)
        if value is None:
            return None
        if self.scheme is not None:
            scheme, _, value = value.partition(" ")
            if scheme.lower() != self.scheme:
                return None
        return value.strip() or None


class KeyAuthenticator(Generic[Owner]):
    def __init__(
        self,
        db: Database,
        header: KeyHeader,
        lookup: OwnerLookup[Owner],
        refuse: Callable[[Refusal], Exception],
    ) -> None:
        self.db = db
        self.header = header
        self.refuse = refuse
        self._rounds: GroupCommit[str, Owner | None] = GroupCommit(self._look_up)
        self._lookup = lookup

    async def owner(self, headers: Mapping[str, str]) -> Owner:
        """The owner of the presented key, or the service's refusal: no key; an unknown, revoked or expired one; a key
        store that cannot be reached (the service's 503, never a 500)."""
        key = self.header.key_in(headers)
        if key is None:
            raise self.refuse("missing")
        if not key.startswith(tuple(self.header.prefixes)):
            raise self.refuse("invalid")
        try:
            owner = await self._rounds.submit(hash_key(key))
        except SQLAlchemyError as error:
            raise self.refuse("unavailable") from error
        if owner is None:
            raise self.refuse("invalid")
        return owner

    async def _look_up(self, hashes: list[str]) -> list[Owner | None]:
        owners = await self.db.read(self._lookup, sorted(set(hashes)), datetime.now(UTC))
        return [owners.get(key_hash) for key_hash in hashes]


class LastUsed:
    """When each key was last used, written in batches: the first use after a flush schedules the next flush
    `every_s` later, and one statement then records every key used meanwhile (a write per request would be the
    gateway's busiest query)."""

    def __init__(self, db: Database, every_s: float = 1.0) -> None:
        self.db = db
        self.every_s = every_s
        self._used: dict[str, datetime] = {}
        self._flushing: asyncio.Task[None] | None = None

    def note(self, key_id: str) -> None:
        self._used[key_id] = datetime.now(UTC)
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        try:
            await asyncio.sleep(self.every_s)
            await self.flush()
        except Exception:  # a missed last-used time is not worth failing anything for; it is logged
            log.exception("last_used_flush_failed")
        finally:
            self._flushing = None

    async def flush(self) -> None:
        used, self._used = self._used, {}
        if used:
            await self.db.write(touch_keys, used)


class Scopes:
    """The scopes a principal was granted. `*` grants everything, `<resource>:*` everything on one resource, and a
    write scope implies the matching read (`tickets:write` grants `tickets:read`)."""

    __slots__ = ("granted",)

    def __init__(self, granted: Iterable[str]) -> None:
        self.granted = frozenset(granted)

    def grant(self, required: str) -> bool:
        if "*" in self.granted or required in self.granted:
            return True
        resource, colon, action = required.partition(":")
        if not colon:
            return False
        return f"{resource}:*" in self.granted or (action == "read" and f"{resource}:write" in self.granted)

    def __repr__(self) -> str:
        return f"Scopes({sorted(self.granted)})"


@dataclass(frozen=True, slots=True)
class Principal(Generic[Account]):
    """Who is calling, as the authentication step established it; routes read it as `request.user`."""

    owner_id: str
    """The account the credentials act for (a phone tenant, a photo customer, a helpdesk organization)."""
    environment: Environment | None
    """`live` or `test` for a key; None where credentials carry none (a session)."""
    scopes: Scopes
    method: Method
    key_id: str | None
    """The key that authenticated (None for a session)."""
    account: Account
    """The service's own view of the account, as the key store returned it (status, caps, budgets)."""


class Authenticator(Protocol[Account]):
    """A service's authentication step and the answers its guards give."""

    async def authenticate(self, connection: ASGIConnection[Any, Any, Any, Any]) -> Principal[Account]:
        """The principal of the request's credentials, or the service's refusal (401, 403, 503)."""
        ...

    def forbidden(self, principal: Principal[Account], scope: str) -> Exception:
        """The service's answer to a principal whose scopes do not grant `scope`."""
        ...

    async def admit(self, principal: Principal[Account]) -> None:
        """Runs once a route's scopes are granted: what every admitted request costs (a key's rate limit, say), or
        nothing."""
        ...


AUTHENTICATOR = "authenticator"
"""Where the app's state keeps its Authenticator (`Litestar(state=State({AUTHENTICATOR: ...}))`), for the guards."""


class _Authentication(AbstractAuthenticationMiddleware):
    def __init__(self, app: ASGIApp, authenticator: Authenticator[Any], exclude: Sequence[str]) -> None:
        super().__init__(app, exclude=list(exclude))
        self.authenticator = authenticator

    async def authenticate_request(self, connection: ASGIConnection[Any, Any, Any, Any]) -> AuthenticationResult:
        return AuthenticationResult(user=await self.authenticator.authenticate(connection), auth=None)


def authentication(authenticator: Authenticator[Any], *, exclude: Sequence[str] = ("^/docs",)) -> DefineMiddleware:
    """The app's authentication step: every route but those with `opt=NO_AUTHENTICATION` (and the `exclude`d paths,
    the OpenAPI document) gets a principal, or the authenticator's refusal, before its guards and handler run."""
    return DefineMiddleware(_Authentication, authenticator=authenticator, exclude=exclude)


Guard = Callable[[ASGIConnection[Any, Any, Any, Any], BaseRouteHandler], Any]


def requires(*scopes: str) -> Guard:
    """A guard admitting a principal whose scopes grant every one of `scopes` (checked in order; the first missing
    one is refused), then charging it what the service's `admit` says."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        authenticator: Authenticator[Any] = connection.app.state[AUTHENTICATOR]
        principal: Principal[Any] = connection.user
        for scope in scopes:
            if not principal.scopes.grant(scope):
                raise authenticator.forbidden(principal, scope)
        await authenticator.admit(principal)

    guard.__qualname__ = f"requires({', '.join(scopes)})"
    return guard
