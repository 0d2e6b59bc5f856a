"""What the inbound processors do with a batch of stored events: load them, hand each to its provider kind's
handler (which parses it, out of any transaction, and answers the unit of work that applies it), then apply the
batch's units together, each conditional on its event still being pending, so that a redelivered message changes
nothing. The changes write their activity and webhook events in the same transaction, as every change does; the
webhook events are announced once it has committed.

A handler is `async handle(context, event) -> Apply`, where `event` is the stored row (`provider`, `body`,
`content_type`, `organization_id`, `channel_id`, ...) and `Apply(connection, now, recorded) -> Outcome` writes the
change (adding the ids of the webhook events it records to `recorded`) and says what it was. Parsing that fails
is an outcome too (`failed: ...`, naming the field of a body not in its provider's shape: topics/helpdesk/inbound.py):
a call the provider signed but that cannot be read is recorded, never retried.
A failure of the database or the blob store is not, nor a provider that does not give a medium this time (media.py,
a few tries): the batch is handed back to the consumer (redelivered after a pause) and its events stay pending until
they are made into what they are."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec
import structlog
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from operations.common.changes import PublishEvent, announce
from processors.common.outbox import Outbox
from storage.common.batching import BatchedWrites
from storage.common.blobs import BlobStore
from storage.common.db import Database
from storage.helpdesk import channels, inbound, tickets
from storage.helpdesk.inbound import Outcome
from topics.helpdesk import HelpdeskTopics, InboundReceived
from topics.helpdesk.inbound import Provider

if TYPE_CHECKING:
    from processors.helpdesk.inbound.media import MediaFetcher

log = structlog.get_logger("signalyard.processors.helpdesk")

Apply = Callable[[Connection, datetime, list[str]], Outcome]
"""apply(connection, now, recorded) -> what the event became; it adds the webhook events it records to `recorded`."""
TRANSIENT = (SQLAlchemyError, OSError)
"""Failures of the database, of the blob store (`put_blob`) or of a provider's media (media.MediaUnavailable) that a
later try may not meet."""
BLOB_ATTEMPTS = 3
REOPENS_PER_HOUR = 3
CLOSED = ("resolved", "closed")
ROUND_UNITS = 64
"""The most events applied in one transaction. A round holds SQLite's write lock, which the gateways need to store
the next events, but it gives way as soon as a gateway queues for it (BatchedWrites)."""
DEFERRED_UNITS = 16
"""A round writes its events' activity rows, webhook events and settles DEFERRED_UNITS events at a time: a gateway
that queues for the lock waits at most for that many events' rows (bench/helpdesk_inbound.py measures the trade)."""
Announce = PublishEvent
"""announce(organization id, webhook event id), once the change has committed (operations.common.changes)."""


@dataclass
class Context:
    """What handlers are given."""

    db: Database
    blobs: BlobStore
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    options: dict[str, Any] = field(default_factory=dict)
    """Per-deployment settings handlers read (the mail domain of our own Message-IDs, reopen limits...)."""
    media: MediaFetcher | None = None
    """Fetches the media the providers hold (media.py); None keeps them as the provider's references."""
    plan_prices: Mapping[str, str] = field(default_factory=dict)
    """The payment provider's price ids the paid plans are sold at, each to its plan (`pro`, `business`): what a
    subscription's price means (payments.py)."""
    _own: dict[tuple[str, str], asyncio.Future[list[str]]] = field(default_factory=dict)

    async def own_addresses(self, organization_id: str, kind: str) -> list[str]:
        """The addresses of the organization's live channels of a kind: read once per batch (a batch's events of one
        organization ask alike; the next batch reads them again)."""
        key = (organization_id, kind)
        if key not in self._own:
            self._own[key] = asyncio.ensure_future(self.db.read(channels.organization_addresses, organization_id, kind))
        try:
            return await asyncio.shield(self._own[key])
        except Exception:
            self._own.pop(key, None)  # the next event asks again
            raise

    def next_batch(self) -> None:
        self._own = {}


Handler = Callable[[Context, Any], Awaitable[Apply]]


def reopen_if_closed(connection: Connection, ticket: tickets.TicketRecord, now: datetime, recorded: list[str]) -> str:
    """A customer's message on a resolved or closed ticket reopens it, at most REOPENS_PER_HOUR times an hour (the
    backstop against a loop with another machine); what it did, as the end of the event's outcome."""
    if ticket.status not in CLOSED:
        return ""
    if tickets.reopenings_since(connection, ticket.id, now - timedelta(hours=1)) >= REOPENS_PER_HOUR:
        return f", not reopened (reopened {REOPENS_PER_HOUR} times within the hour)"
    changes = tickets.Changes(status="open", reason=tickets.REOPENED_BY_INBOUND)
    tickets.change(connection, ticket.organization_id, ticket.id, changes, actor_id=None, now=now, recorded=recorded)
    return ", reopened"


async def put_blob(context: Context, key: str, data: bytes, content_type: str) -> None:
    """Store a blob a handler keeps (an attachment, an export), tried again briefly; OSError when the store fails."""
    for attempt in range(BLOB_ATTEMPTS):
        try:
            await context.blobs.put(key, data, content_type)
            return
        except Exception as error:
            if attempt == BLOB_ATTEMPTS - 1:
                raise OSError(f"the blob store did not take {key}: {error!r}") from error
            await asyncio.sleep(0.2 * (attempt + 1))


def failed(reason: str) -> Apply:
    """The unit of an event that cannot be made into anything: recorded as such, nothing else written."""

    def apply(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
        return Outcome(f"failed: {reason}", classification="invalid")

    return apply


class InboundProcessor:
    def __init__(self, context: Context, handlers: Mapping[Provider, Handler], announce: Announce) -> None:
        self.context = context
        self.handlers = handlers
        self.announce = announce
        self.writes = BatchedWrites(context.db, most=ROUND_UNITS, defer=DEFERRED_UNITS)

    async def handle_batch(self, batch: Sequence[InboundReceived]) -> None:
        self.context.next_batch()
        ids = list(dict.fromkeys(message.event_id for message in batch))
        rows = await self.context.db.read(inbound.load, ids)
        pending = [rows[event_id] for event_id in ids if event_id in rows and rows[event_id].state == inbound.PENDING]
        # One sender's events share a partition and come in order: handled one after the other, they thread onto
        # what the earlier ones made. Different senders' events of a batch are handled side by side.
        by_sender: dict[str, list[Any]] = {}
        for row in pending:
            by_sender.setdefault(row.partition_key, []).append(row)
        await asyncio.gather(*(self._in_order(rows_of_sender) for rows_of_sender in by_sender.values()))

    async def _in_order(self, rows: list[Any]) -> None:
        for row in rows:
            await self._one(row)

    async def _one(self, row: Any) -> None:
        handler = self.handlers.get(row.provider)
        try:
            apply = await handler(self.context, row) if handler else failed(f"no handler for {row.provider}")
        except TRANSIENT:
            raise  # the event stays pending: the batch is redelivered
        except msgspec.DecodeError as error:
            log.warning("inbound_malformed", event_id=row.id, provider=row.provider, reason=str(error))
            apply = failed(f"malformed: {error}")
        except Exception as error:  # a bug of ours, or a call we cannot read: recorded, not retried forever
            log.exception("inbound_parse_failed", event_id=row.id, provider=row.provider)
            apply = failed(type(error).__name__)
        now = self.context.clock()
        try:
            outcome, recorded = await self.writes.write(_conditionally, row.id, apply, now)
        except inbound.ProcessedAlready:
            return  # a redelivered message, or another member's
        await announce(self.announce, row.organization_id, recorded)
        log.info("inbound_processed", event_id=row.id, provider=row.provider, outcome=outcome.outcome)


def _conditionally(connection: Connection, event_id: str, apply: Apply, now: datetime) -> tuple[Outcome, list[str]]:
    """The event's change, if the event is still pending: applied, then settled with its outcome (the conditional
    update, which raises ProcessedAlready, undoing the change, when it was not), in one transaction."""
    recorded: list[str] = []
    outcome = apply(connection, now, recorded)
    inbound.settle(connection, event_id, outcome, now)
    return outcome, recorded


def inbound_outbox(topics: HelpdeskTopics) -> Outbox:
    """helpdesk_inbound_events as an outbox for the shared Sweeper: an event still pending past the deadline (its
    publish was lost, or its processor died) is published again."""

    def message(row: Any) -> tuple[msgspec.Struct, str, bytes]:
        return InboundReceived.of(row), topics.inbound, row.partition_key.encode()

    return Outbox("helpdesk-inbound", inbound.EVENTS, inbound.OUTBOX_COLUMNS, message)
