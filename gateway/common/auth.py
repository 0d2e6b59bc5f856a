"""API-key authentication for every gateway: which header carries the key, what keys look like, who owns them.

Nothing is cached: every request's key is looked up in the key store, so a revocation or a suspension holds on the
very next request through any gateway process. Requests arriving together share one look-up (a group commit of
reads), so the cost under load is one query per round, not one per request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Literal, TypeVar

import structlog
from sqlalchemy.engine import Connection

from storage.common.batching import GroupCommit
from storage.common.db import Database
from storage.common.keys import hash_key, touch_keys

log = structlog.get_logger("signalyard.gateway")

Owner = TypeVar("Owner")
Refusal = Literal["missing", "invalid"]
OwnerLookup = Callable[[Connection, list[str], datetime], Mapping[str, Owner]]
"""lookup(connection, key hashes, now) -> the owner of each hash whose key authenticates at `now`."""


@dataclass(frozen=True, slots=True)
class KeyHeader:
    """Where a service's clients send their key: `Authorization: Bearer <key>` (scheme "bearer") or `X-API-Key: <key>`
    (no scheme). `prefixes` are the forms a key of this service can take; anything else is refused unlooked-up."""

    name: str
    scheme: str | None
    prefixes: Sequence[str]

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
        """The owner of the presented key, or the service's refusal (no key; an unknown, revoked or expired one)."""
        key = self.header.key_in(headers)
        if key is None:
            raise self.refuse("missing")
        if not key.startswith(tuple(self.header.prefixes)):
            raise self.refuse("invalid")
        owner = await self._rounds.submit(hash_key(key))
        if owner is None:
            raise self.refuse("invalid")
        return owner

    async def _look_up(self, hashes: list[str]) -> list[Owner | None]:
        unique = sorted(set(hashes))
        now = datetime.now(UTC)
        owners = await self.db.run(lambda connection: self._lookup(connection, unique, now), write=False)
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
            await self.db.run(lambda connection: touch_keys(connection, used), write=True)
