"""What every phone route is given: the gateway's parts, wired once by the launcher."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway.common.waiter import ResultWaiter
from gateway.phone.enforcement import Enforcement
from storage.common.batching import GroupCommit
from storage.common.db import Database
from storage.phone import requests
from topics.phone import VerificationRequested

Publish = Callable[[VerificationRequested], Awaitable[None]]
Accept = Callable[[dict[str, Any]], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class PhoneGateway:
    db: Database
    enforcement: Enforcement
    waiter: ResultWaiter
    publish: Publish
    accept: Accept
    """Store a new pending request (batched with concurrent callers); False when its key or number is taken."""
    wait_s: float
    """How long `POST /verify` waits for its result before answering 202 (SIGNALYARD_PHONE_WAIT_MS)."""


def batched_accept(db: Database) -> Accept:
    """Accept new requests in group commits: one INSERT for everything that arrived during the previous one."""

    async def insert(rows: list[dict[str, Any]]) -> list[bool]:
        inserted = await db.write(requests.insert_pending, rows)
        return [row["id"] in inserted for row in rows]

    return GroupCommit(insert).submit
