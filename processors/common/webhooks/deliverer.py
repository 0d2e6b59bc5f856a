"""The webhook deliverer: claims due deliveries under a lease, POSTs each with the headers of the service's profile
(signed when the endpoint has a secret), records the attempt and schedules the next from the profile. Concurrency is
bounded overall and per endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import structlog
from cryptography.fernet import InvalidToken
from prometheus_client import Counter, Histogram

from net.guard import Resolve, guarded_session, system_resolve, tls_context
from storage.common.db import Database
from storage.common.secrets import Cipher, unseal
from storage.common.webhooks.deliveries import AttemptResult, Claimed, any_due, claim_due, record_attempts
from storage.common.webhooks.deliveries import Outcome as DeliveryOutcome
from storage.common.webhooks.endpoints import endpoint_is_active
from storage.common.webhooks.models import RESPONSE_BODY_LIMIT
from wire.webhooks import WebhookProfile

log = structlog.get_logger("signalyard.processors.webhooks")

ATTEMPTS = Counter(
    "signalyard_webhook_attempts_total",
    "Delivery attempts, by whether the receiver answered 2xx",
    ["service", "result"],
)
DELIVERIES = Counter(
    "signalyard_webhook_deliveries_total",
    "Deliveries that reached a final state (delivered, failed)",
    ["service", "state"],
)
ENDPOINTS_DISABLED = Counter(
    "signalyard_webhook_endpoints_disabled_total", "Endpoints disabled after a whole retry window failed", ["service"]
)
ATTEMPT_SECONDS = Histogram(
    "signalyard_webhook_attempt_seconds",
    "Time from dialling (or taking a pooled connection) to the end of the receiver's answer",
    ["service"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
RECHECK_AFTER_S = 1.0
"""A delivery that waited longer than this for a connection asks whether its endpoint is still active before it is
sent (one deleted or disabled meanwhile has its deliveries canceled); a shorter wait is as a send already under way,
which a deletion does not stop either."""
DRAIN_LIMIT = 64 * 1024
"""Response bytes read after the kept ones, so the connection can be reused; a longer answer closes it."""


class _Metrics:
    """The service's metric children, looked up once (a labelled lookup takes a lock and a dict per call)."""

    def __init__(self, service: str) -> None:
        self.latency = ATTEMPT_SECONDS.labels(service)
        self.succeeded = ATTEMPTS.labels(service, "success")
        self.failed = ATTEMPTS.labels(service, "failure")
        self.delivered = DELIVERIES.labels(service, "delivered")
        self.given_up = DELIVERIES.labels(service, "failed")


def utc_now() -> datetime:
    return datetime.now(UTC)


class WebhookDeliverer:
    """One member of a service's deliverers (run one per processors process; members share the work through the
    leases). `run()` is the background loop (`start()` runs it as a task); `deliver_due()` delivers what is due now
    and returns, for tests and operator tasks; never both at once. The clock decides what is due and the timestamps
    sent; tests drive retries with a fake one.

    `concurrency` bounds this member's sends at once, `per_endpoint` its sends at once to one endpoint (so N members
    may reach N x per_endpoint); `timeout_s` (default: the profile's) bounds a whole attempt; connections to an
    endpoint are kept for the `endpoints_kept` most recently used endpoints."""

    def __init__(
        self,
        db: Database,
        profile: WebhookProfile,
        cipher: Cipher,
        *,
        clock: Callable[[], datetime] = utc_now,
        allow_private_targets: bool = False,
        ca_bundle: str | Path | None = None,
        timeout_s: float | None = None,
        concurrency: int = 256,
        per_endpoint: int = 8,
        poll_s: float = 0.5,
        claim_batch: int = 256,
        lease: timedelta | None = None,
        resolve: Resolve = system_resolve,
        endpoints_kept: int = 1000,
        write_linger_s: float = 0.02,
    ) -> None:
        self.db = db
        self.profile = profile
        self.cipher = cipher
        self.clock = clock
        self.timeout_s = profile.timeout_s if timeout_s is None else timeout_s
        self.concurrency = concurrency
        self.per_endpoint = per_endpoint
        self.held_per_endpoint = 2 * per_endpoint
        """Deliveries this member claims for one endpoint: a connection's worth each sending, and as many waiting for
        a connection, so that the next are here before the connections fall idle (a claim is a transaction: one per
        few deliveries kept a busy endpoint's delivery rate at the claims' pace). A held delivery waits at most one
        attempt before its own, so it is sent and stored within its lease."""
        self.poll_s = poll_s
        self.claim_batch = claim_batch
        self.lease = lease or timedelta(seconds=2 * self.timeout_s + 30)
        """Covers the send (a claim takes no more for an endpoint than this member has free connections to it, so a
        claimed delivery is sent at once) and storing its result: a lease never runs out while its member is still
        working on the delivery."""
        self._new_client = functools.partial(
            guarded_session,
            allow_private_targets=allow_private_targets,
            max_connections=1,
            resolve=resolve,
            tls=tls_context(ca_bundle),
        )
        self._lanes: OrderedDict[str, _Lanes] = OrderedDict()
        """Per endpoint, most recently used last: its connections, taken one per send."""
        self._lanes_kept = endpoints_kept
        self._closing: set[asyncio.Task[None]] = set()
        self._results = _ResultWriter(self._record, self._disabled, linger_s=write_linger_s, batch=claim_batch)
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy: dict[str, int] = {}
        """Per endpoint: deliveries this member holds (sending or waiting for a slot)."""
        self._gone: set[str] = set()
        """Endpoints this member disabled while it still held deliveries for them: those are not sent. Forgotten once
        it holds none (claims take only active endpoints), so an endpoint enabled again gets its new deliveries."""
        self._secrets: dict[str, tuple[str, str]] = {}
        self._wakeup = asyncio.Event()
        self._hungry = False
        """The last claim was cut short by this member's capacity: once `_refill` slots are free, claim again."""
        self._idle = False
        """The last claim found nothing: the next asks whether anything is due (a read) before it claims (a write)."""
        self._waiting_for: set[str] = set()
        """Endpoints the last claim skipped as saturated: once one is half free, claim again."""
        self._refill = max(1, min(concurrency // 2, claim_batch))
        """Free slots worth a claim: claims are transactions, so they are made for batches, not single slots."""
        self._loop_task: asyncio.Task[None] | None = None
        self._metrics = _Metrics(profile.service)

    # ------------------------------------------------------------------------------------------------ running

    def wake(self) -> None:
        """New deliveries may be due (the fan-out in this process created some): claim now, not at the next poll."""
        self._wakeup.set()

    def start(self) -> asyncio.Task[None]:
        """Run the loop as a background task of the running event loop; `aclose()` stops it."""
        self._loop_task = asyncio.get_running_loop().create_task(self.run(), name=f"{self.profile.service}-webhooks")
        return self._loop_task

    async def run(self) -> None:
        """Claim and send until cancelled (or until `aclose()`, however this was started)."""
        self._loop_task = asyncio.current_task()
        while True:
            self._wakeup.clear()
            try:
                claimed, wanted = await self._claim()
            except Exception:  # the database may be briefly unavailable: try again at the next poll
                log.exception("webhook_claim_failed", service=self.profile.service)
                claimed, wanted = 0, 1
            if claimed and claimed == wanted and self._free() >= self._refill:
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_s):
                    await self._wakeup.wait()

    async def deliver_due(self) -> int:
        """Send everything due now (what fails is scheduled, not retried here) and wait until every result is
        stored; returns how many attempts were made."""
        attempts = 0
        while True:
            self._wakeup.clear()
            claimed, wanted = await self._claim()
            attempts += claimed
            if not self._tasks:
                if not claimed:
                    break
                continue
            if claimed and claimed == wanted and self._free() >= self._refill:
                continue
            await self._wakeup.wait()
        await self._results.flush()
        return attempts

    async def aclose(self, grace_s: float | None = None) -> None:
        """Stop claiming, give sends in flight `grace_s` (default: the timeout) to finish, store their results and
        close the connections. A send cut short is retried by whichever member claims it after its lease."""
        if self._loop_task is not None and self._loop_task is not asyncio.current_task():
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
        if self._tasks:
            _, unfinished = await asyncio.wait(set(self._tasks), timeout=self.timeout_s if grace_s is None else grace_s)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._results.flush()
        except TimeoutError:  # the database is gone: those deliveries are sent again after their leases
            log.warning("webhook_results_unsaved", service=self.profile.service, count=self._results.queued)
            await self._results.abandon()
        lanes, self._lanes = list(self._lanes.values()), OrderedDict()
        await asyncio.gather(*(lane.aclose() for lane in lanes), *self._closing, return_exceptions=True)

    # ----------------------------------------------------------------------------------------------- claiming

    def _free(self) -> int:
        return self.concurrency - len(self._tasks)

    async def _claim(self) -> tuple[int, int]:
        """Claim what this member has room for and start sending it; returns (claimed, asked for)."""
        wanted = min(self._free(), self.claim_batch)
        if wanted <= 0:
            self._hungry = True
            return 0, 0
        self._gone.intersection_update(self._busy)
        held = dict(self._busy)
        saturated = {endpoint for endpoint, count in held.items() if count >= self.held_per_endpoint}
        skip = saturated | self._gone
        now = self.clock()
        if self._idle and not await self.db.read(any_due, self.profile.service, now=now):
            return 0, wanted
        lease_until = now + self.lease
        rows = await self.db.write(
            claim_due,
            self.profile.service,
            now=now,
            lease_until=lease_until,
            limit=wanted,
            per_endpoint=self.held_per_endpoint,
            held=held,
            skip_endpoints=skip,
        )
        self._hungry = len(rows) == wanted
        self._idle = not rows
        self._waiting_for = saturated
        for row in rows:
            self._busy[row.endpoint_id] = self._busy.get(row.endpoint_id, 0) + 1
            task = asyncio.get_running_loop().create_task(self._deliver(row))
            self._tasks.add(task)
            task.add_done_callback(self._finished)
        return len(rows), wanted

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("webhook_delivery_crashed", service=self.profile.service, exc_info=task.exception())
        if not self._tasks or (self._hungry and self._free() >= self._refill):
            self._wakeup.set()

    def _release(self, endpoint_id: str) -> None:
        held = self._busy[endpoint_id] - 1
        if held:
            self._busy[endpoint_id] = held
        else:
            del self._busy[endpoint_id]
        if held == self.held_per_endpoint // 2 and endpoint_id in self._waiting_for:
            self._waiting_for.clear()
            self._wakeup.set()

    # ------------------------------------------------------------------------------------------------ sending

    async def _deliver(self, claimed: Claimed) -> None:
        try:
            lanes = self._lanes_of(claimed.endpoint_id)
            waiting_since = time.perf_counter()
            client, waited = await lanes.take()
            try:
                if claimed.endpoint_id in self._gone:
                    return
                long_wait = waited and time.perf_counter() - waiting_since > RECHECK_AFTER_S
                if long_wait and not await self._still_active(claimed.endpoint_id):
                    return  # deleted or disabled while this waited for a connection: its deliveries are canceled
                result = await self._attempt(claimed, client)
            finally:
                lanes.give(client)
        finally:
            self._release(claimed.endpoint_id)
        # Stored in the background: the slot is free for the next send, and the lease keeps the delivery this
        # member's until the result is written.
        self._results.add(result)

    def _disabled(self, result: AttemptResult) -> None:
        self._gone.add(result.claimed.endpoint_id)
        ENDPOINTS_DISABLED.labels(self.profile.service).inc()
        log.warning(
            "webhook_endpoint_disabled",
            service=self.profile.service,
            endpoint_id=result.claimed.endpoint_id,
            attempts=result.claimed.attempt,
        )

    async def _still_active(self, endpoint_id: str) -> bool:
        return await self.db.read(endpoint_is_active, endpoint_id)

    async def _attempt(self, claimed: Claimed, client: aiohttp.ClientSession) -> AttemptResult:
        attempted_at = self.clock()
        status: int | None = None
        kept: str | None = None
        started = time.perf_counter()
        try:
            headers = self.profile.headers(
                self._secret(claimed), claimed.body, int(attempted_at.timestamp()), claimed.event_id
            )
            async with asyncio.timeout(self.timeout_s):
                status, kept = await self._post(client, claimed.url, claimed.body, headers)
            error = None if 200 <= status < 300 else f"HTTP {status}"
        except TimeoutError:
            error = f"timed out after {self.timeout_s:g} s"
        except aiohttp.ClientError as failure:
            error = _describe(failure)
        except InvalidToken:
            error = "the signing secret cannot be decrypted with the configured keys"
        except Exception as failure:  # a bad URL or anything unforeseen is this attempt's failure, not the loop's
            log.exception("webhook_attempt_crashed", service=self.profile.service, delivery=claimed.delivery_id)
            error = f"{type(failure).__name__}: {failure}"[:500]
        elapsed = time.perf_counter() - started
        self._metrics.latency.observe(elapsed)
        (self._metrics.succeeded if error is None else self._metrics.failed).inc()
        next_at = None if error is None else self.profile.next_attempt(claimed.attempt, attempted_at)
        outcome: DeliveryOutcome = "delivered" if error is None else ("retry" if next_at is not None else "failed")
        if outcome != "retry":
            (self._metrics.delivered if error is None else self._metrics.given_up).inc()
        return AttemptResult(
            claimed, attempted_at, round(elapsed * 1000), status, error and error[:500], kept, outcome, next_at
        )

    def _lanes_of(self, endpoint_id: str) -> _Lanes:
        lanes = self._lanes.get(endpoint_id)
        if lanes is not None:
            self._lanes.move_to_end(endpoint_id)
            return lanes
        lanes = self._lanes[endpoint_id] = _Lanes(self._new_client, self.per_endpoint)
        if len(self._lanes) > self._lanes_kept:
            idle = next((endpoint for endpoint in self._lanes if endpoint not in self._busy), None)
            if idle is not None:
                closing = asyncio.get_running_loop().create_task(self._lanes.pop(idle).aclose())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        return lanes

    @staticmethod
    async def _post(client: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        async with client.post(url, data=body, headers=headers, allow_redirects=False) as response:
            kept = bytearray()
            async for chunk in response.content.iter_any():
                if len(kept) < RESPONSE_BODY_LIMIT + DRAIN_LIMIT:
                    kept += chunk
                else:
                    break  # leaving the block with the body unread closes the connection instead of reading on
        return response.status, kept[:RESPONSE_BODY_LIMIT].decode("utf-8", "replace")

    def _secret(self, claimed: Claimed) -> str | None:
        if claimed.secret_encrypted is None:
            return None  # an endpoint without a secret: its deliveries are unsigned
        cached = self._secrets.get(claimed.endpoint_id)
        if cached is not None and cached[0] == claimed.secret_encrypted:
            return cached[1]
        secret = unseal(self.cipher, claimed.secret_encrypted)
        if len(self._secrets) >= 10_000:
            self._secrets.clear()
        self._secrets[claimed.endpoint_id] = (claimed.secret_encrypted, secret)
        return secret

    async def _record(self, results: list[AttemptResult]) -> list[bool]:
        return await self.db.write(
            record_attempts,
            results,
            disabled_status=self.profile.disabled_status,
            spare_recently_delivered=self.profile.spare_recently_delivered,
            now=self.clock(),
        )


def _describe(failure: aiohttp.ClientError) -> str:
    """The error as the endpoint's owner would want it: the refusal or connection error itself (`ConnectError: ...`
    for any failure to connect, the guard's refusal and TLS's included)."""
    cause = failure.__cause__
    message = str(cause) if cause is not None and str(cause) else str(failure)
    kind = "ConnectError" if isinstance(failure, aiohttp.ClientConnectorError) else type(failure).__name__
    return f"{kind}: {message}" if message else kind


class _Lanes:
    """An endpoint's connections as sessions of one connection each, at most `size`: taking one is taking one of the
    endpoint's concurrency slots, and a session of one connection never waits in its pool."""

    def __init__(self, new_client: Callable[[], aiohttp.ClientSession], size: int) -> None:
        self._new_client = new_client
        self.size = size
        self._idle: list[aiohttp.ClientSession] = []
        self._all: list[aiohttp.ClientSession] = []
        self._waiters: deque[asyncio.Future[aiohttp.ClientSession]] = deque()

    async def take(self) -> tuple[aiohttp.ClientSession, bool]:
        """A client to send with, and whether all were busy so that this had to wait."""
        if self._idle:
            return self._idle.pop(), False  # the most recently used: its connection is the least likely to be stale
        if len(self._all) < self.size:
            client = self._new_client()
            self._all.append(client)
            return client, False
        waiter: asyncio.Future[aiohttp.ClientSession] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter, True
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give(waiter.result())
            raise

    def give(self, client: aiohttp.ClientSession) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(client)
                return
        self._idle.append(client)

    async def aclose(self) -> None:
        await asyncio.gather(*(client.close() for client in self._all), return_exceptions=True)


class _ResultWriter:
    """Stores attempt results in batches: what arrives within `linger_s` of the first (or `batch` of them) is one
    transaction. A batch that cannot be stored is tried again; its deliveries stay leased meanwhile."""

    RETRY_PAUSE_S = 1.0

    def __init__(
        self,
        write: Callable[[list[AttemptResult]], Awaitable[list[bool]]],
        on_disabled: Callable[[AttemptResult], None],
        *,
        linger_s: float,
        batch: int,
    ) -> None:
        self._write = write
        self._on_disabled = on_disabled
        self.linger_s = linger_s
        self.batch = batch
        self._queue: list[AttemptResult] = []
        self._full = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def queued(self) -> int:
        return len(self._queue)

    def add(self, result: AttemptResult) -> None:
        self._queue.append(result)
        if len(self._queue) >= self.batch:
            self._full.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def flush(self) -> None:
        """Return once everything added so far is stored."""
        while self._task is not None:
            self._full.set()
            await asyncio.shield(self._task)

    async def abandon(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _drain(self) -> None:
        try:
            while self._queue:
                if len(self._queue) < self.batch:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.linger_s):
                            await self._full.wait()
                self._full.clear()
                round_, self._queue = self._queue[: self.batch], self._queue[self.batch :]
                try:
                    disabled = await self._write(round_)
                except Exception:
                    log.exception("webhook_results_not_stored", count=len(round_))
                    self._queue[:0] = round_
                    await asyncio.sleep(self.RETRY_PAUSE_S)
                    continue
                for result, flag in zip(round_, disabled, strict=True):
                    if flag:
                        self._on_disabled(result)
        finally:
            self._task = None
