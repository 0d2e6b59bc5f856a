"""What every inbound endpoint does, in this order: read the raw body (within its limit); route the call to a live
channel by what the provider put in it (an address, a number, an id), 404 when none; check the provider's signature
over the raw bytes with that channel's secret (constant-time comparisons, timestamps within a replay window), 401
when it fails; take the provider's de-duplication key; store the event (the outbox; a retry of a stored event is
acknowledged and stores nothing); and then answer 2xx, in the provider's own form, while the event is published to
`helpdesk.inbound.received` (a publish the broker does not acknowledge is repeated by the sweeper: the stored event is
what is never lost). Refusals store nothing and answer the REST envelope `{"error": {"code", "message"}}`."""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
import structlog

from gateway.helpdesk.errors import HelpdeskError
from storage.common.batching import GroupCommit
from storage.common.db import Database
from storage.common.secrets import Cipher
from storage.helpdesk import channels, inbound
from storage.helpdesk.channels import Routed
from topics.helpdesk import InboundReceived
from topics.helpdesk.inbound import Provider
from wire.ids import new_uuid

log = structlog.get_logger("signalyard.gateway.helpdesk.inbound")

REPLAY_WINDOW_S = 300
"""A signed timestamp older (or further ahead) than this is a replay, or a clock far off: refused."""
MAX_BODY_BYTES = 30 * 1024 * 1024
"""A call's body, at most (a mail with its attachments)."""
STORE_GATHER_S = 0.025
STORE_ENOUGH = 24
"""While events keep coming, a round of stores gathers them, up to STORE_GATHER_S for STORE_ENOUGH (GroupCommit): on
SQLite each round is a turn at the one write lock, which cuts the inbound processors' round short
(bench/helpdesk_inbound.py, docs/operations.md "SQLite writers take turns"). A lone call never waits."""
PUBLISHES_IN_FLIGHT = 16
"""The most rounds whose publish is under way at once; past it, the next round waits for one to end (the broker sets
the pace)."""

T = TypeVar("T")
Publish = Callable[[Sequence[tuple[InboundReceived, bytes]]], Awaitable[None]]
"""publish([(message, partition key), ...]): a round's stored events together (a lost publish is repeated by the
sweeper)."""


def refused(status: int, message: str) -> HelpdeskError:
    """A call refused: 400 (malformed), 401 (signature), 404 (no channel), 413 (too large). Nothing is stored."""
    return HelpdeskError(status, message)


def malformed(error: msgspec.DecodeError, what: str = "The body") -> HelpdeskError:
    """400 for a body (or a field) that is not JSON, or not in its provider's shape: the message names the field."""
    if isinstance(error, msgspec.ValidationError):
        return refused(400, f"{what} is malformed: {error}")
    return refused(400, f"{what} is not JSON")


def decoded(decoder: msgspec.json.Decoder[T], body: bytes | str, what: str = "The body") -> T:
    """`body` in its provider's shape; 400 (`malformed`) when it is not."""
    try:
        return decoder.decode(body)
    except msgspec.DecodeError as error:
        raise malformed(error, what) from None


def equal(given: str | bytes, expected: str | bytes) -> bool:
    """Constant-time comparison of a presented signature or token with the expected one."""
    left = given.encode() if isinstance(given, str) else given
    right = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(left, right)


def fresh(timestamp: str | int | float, now: float | None = None, window_s: float = REPLAY_WINDOW_S) -> bool:
    """A signed timestamp (UNIX seconds) within the replay window of now, on either side."""
    try:
        at = float(timestamp)
    except (TypeError, ValueError):
        return False
    return abs((time.time() if now is None else now) - at) <= window_s


class Inbound:
    """What every inbound endpoint is given (the app's `inbound` dependency)."""

    def __init__(
        self,
        db: Database,
        cipher: Cipher,
        publish: Publish,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        *,
        public_url: str = "",
        providers: Mapping[str, object] | None = None,
    ) -> None:
        self.db = db
        self.cipher = cipher
        self.publish = publish
        self.clock = clock
        self.public_url = public_url.rstrip("/")
        """The helpdesk's public URL (SIGNALYARD_HELPDESK_PUBLIC_URL): a provider that signs the URL it called (the SMS
        provider) signed this base and the endpoint's path."""
        self.providers = dict(providers or {})
        """What an endpoint needs beyond its channels, by provider kind: the platform's own secrets (payments), a
        certificate fetcher (marketplace). Each provider's module says what it puts here and reads it back typed."""
        self._stores: GroupCommit[inbound.Received, bool] = GroupCommit(
            self._store, gather_s=STORE_GATHER_S, enough=STORE_ENOUGH
        )
        self._publishing: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(PUBLISHES_IN_FLIGHT)

    async def route(self, kind: str, address: str) -> Routed:
        """The live channel `address` routes to; 404 when it routes nowhere."""
        routed = await self.db.read(channels.route, self.cipher, kind, address) if address else None
        if routed is None:
            raise refused(404, f"No channel receives for {kind} {address!r}")
        return routed

    async def accept(
        self,
        channel: Routed,
        provider: Provider,
        *,
        dedup_key: str,
        body: bytes,
        content_type: str,
        partition_key: str,
        details: dict[str, Any] | None = None,
    ) -> bool:
        """Store the event and start its publish; False when it was stored already (a provider's retry: acknowledged,
        and nothing new). Concurrent calls are stored together, one statement per round, and published together once
        stored. The answer does not wait for the broker's acknowledgement: the stored event is the outbox, whose
        sweeper publishes again what the broker did not take (measured: bench/helpdesk_inbound.py, docs/helpdesk.md
        "Performance")."""
        if not dedup_key:
            raise refused(400, "The call carries no id to tell it apart from a retry")
        received = inbound.Received(
            id=new_uuid(),
            organization_id=channel.organization_id,
            channel_id=channel.channel_id,
            provider=provider,
            dedup_key=dedup_key,
            content_type=content_type,
            body=body,
            partition_key=partition_key,
            created_at=self.clock(),
            details=details or {},
        )
        return await self._stores.submit(received)

    async def _publish(self, messages: list[tuple[InboundReceived, bytes]]) -> None:
        try:
            await self.publish(messages)
        except Exception:  # stored: the sweeper publishes them again
            log.warning("inbound_publish_failed", count=len(messages), exc_info=True)
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        """Once the server has stopped: the publishes under way end (each within the publish timeout)."""
        await asyncio.gather(*self._publishing, return_exceptions=True)

    async def _store(self, batch: list[inbound.Received]) -> list[bool]:
        # Two calls of one round with the same (channel, key): the first is stored, the second is its retry.
        stored = await self.db.write(inbound.store, _first_of_each(batch))
        messages = [(InboundReceived.of(event), event.partition_key.encode()) for event in batch if event.id in stored]
        if messages:
            await self._slots.acquire()
            publishing = asyncio.get_running_loop().create_task(self._publish(messages))
            self._publishing.add(publishing)
            publishing.add_done_callback(self._publishing.discard)
        return [event.id in stored for event in batch]


def _first_of_each(batch: list[inbound.Received]) -> list[inbound.Received]:
    seen: set[tuple[str, str]] = set()
    first = []
    for event in batch:
        key = (event.channel_id, event.dedup_key[:255])
        if key not in seen:
            seen.add(key)
            first.append(event)
    return first


async def run_blocking(function: Callable[[], T]) -> T:
    """A CPU-heavy check (an ECDSA or RSA verification of a large body) off the event loop."""
    return await asyncio.to_thread(function)
