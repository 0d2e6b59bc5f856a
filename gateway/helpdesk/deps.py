"""What every helpdesk route and procedure is given: the gateway's parts, wired once by the launcher."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog
from sqlalchemy.engine import Connection

from gateway.common.webhooks import WebhookStore
from gateway.helpdesk.billing import Billing
from gateway.helpdesk.inbound.common import Inbound
from gateway.helpdesk.signin import Identity
from storage.common.batching import BatchedWrites
from storage.common.db import Database

log = structlog.get_logger("signalyard.gateway.helpdesk")

Announce = Callable[[str, str], Awaitable[None]]
"""announce(organization id, webhook event id): tell the fan-out about an event a committed change recorded (its row
is the outbox: a lost announcement is repeated by the events sweeper)."""
T = TypeVar("T")


@dataclass(frozen=True)
class HelpdeskGateway:
    db: Database
    identity: Identity
    announce: Announce
    webhooks: WebhookStore
    inbound: Inbound
    """The inbound webhook endpoints' shared steps (gateway/helpdesk/inbound)."""
    billing: Billing | None = None
    """The payment provider of paid plans; None: they are PRECONDITION_FAILED."""
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    @functools.cached_property
    def writes(self) -> BatchedWrites:
        """The changes of concurrent requests, committed together (one transaction per round)."""
        return BatchedWrites(self.db)

    async def change(self, organization_id: str, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a unit of work that changes the organization's data, given `recorded` (the list it adds the ids of the
        webhook events it records to) and `now`; once it has committed, announce those events."""
        now = self.clock()

        def unit(connection: Connection) -> tuple[T, list[str]]:
            recorded: list[str] = []  # made anew by every attempt: a unit run again must not announce twice
            return work(connection, *args, recorded=recorded, now=now, **kwargs), recorded

        result, recorded = await self.writes.write(unit)
        await self._announce(organization_id, recorded)
        return result

    async def _announce(self, organization_id: str, event_ids: Sequence[str]) -> None:
        if not event_ids:
            return
        outcomes: list[Any] = await asyncio.gather(
            *(self.announce(organization_id, event_id) for event_id in event_ids), return_exceptions=True
        )
        failed = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
        if failed:  # the change stands; the events sweeper announces them later
            log.warning("webhook_announce_failed", count=len(failed), error=type(failed[0]).__name__)
