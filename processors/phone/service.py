"""The phone processor: load an accepted request, decide its outcome, store it with its ledger row, announce it."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import msgspec
import structlog
from sqlalchemy.exc import SQLAlchemyError

from processors.phone.lookup import (
    Provider,
    ProviderUnavailable,
    ProviderUnconfigured,
    ProviderUninterpretable,
)
from processors.phone.metrics import HANDLED, OUTBOX_PENDING
from processors.phone.result import Request, StoredLookup, build_result
from storage import phone as requests
from storage import tenants
from storage.db import Database
from storage.models import PhoneRequest
from topics.phone import (
    SKU,
    VerificationCompleted,
    VerificationRequested,
    VerifyResult,
)

log = structlog.get_logger("signalyard.processors.phone")

FREE_RECHECK_WINDOW = timedelta(hours=24)
Publish = Callable[[msgspec.Struct, str, bytes], Awaitable[None]]
"""publish(message, topic, partition key)."""

_lookup_encoder = msgspec.json.Encoder()
_lookup_decoder = msgspec.json.Decoder(StoredLookup)
_result_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class PhoneProcessorConfig:
    requested_topic: str
    completed_topic: str
    sweep_after: timedelta = timedelta(seconds=30)
    """How long a request may stay `pending` before the sweeper publishes it again."""
    sweep_batch: int = 500
    concurrency: int = 64
    """How many numbers of one fetched batch are looked up at once."""


class PhoneProcessor:
    """Decides the outcome of accepted requests. Every state change is conditional, so redelivery is harmless."""

    def __init__(
        self,
        db: Database,
        providers: dict[str, Provider],
        publish: Publish,
        config: PhoneProcessorConfig,
        ensure_topics: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.db = db
        self.ensure_topics = ensure_topics
        self.providers = providers
        self.publish = publish
        self.config = config
        self._slots = asyncio.Semaphore(config.concurrency)

    async def handle_batch(self, batch: list[VerificationRequested]) -> None:
        """One number's requests run in order; different numbers run concurrently."""
        by_number: dict[str, list[VerificationRequested]] = defaultdict(list)
        for message in batch:
            by_number[message.phone_e164].append(message)
        await asyncio.gather(*(self._handle_in_order(messages) for messages in by_number.values()))

    async def _handle_in_order(self, messages: list[VerificationRequested]) -> None:
        for message in messages:
            async with self._slots:
                await self.handle(message)

    async def handle(self, message: VerificationRequested) -> None:
        async with self.db.read() as session:
            request = await requests.get_request(session, message.request_id)
        if request is None:
            log.warning("request_not_found", request_id=message.request_id)
            HANDLED.labels(outcome="unknown_request").inc()
            return
        if request.state == "pending":
            outcome, spend_cap = await self._decide(request)
            await self._store(request, outcome, spend_cap)
        async with self.db.read() as session:
            request = await requests.get_request(session, message.request_id)
        assert request is not None
        await self.announce(request)
        HANDLED.labels(outcome=request.state).inc()

    async def _decide(self, request: PhoneRequest) -> tuple[requests.Outcome, int | None]:
        """The outcome, and the tenant's spend cap that its billing must respect."""
        now = datetime.now(UTC)
        async with self.db.read() as session:
            tenant = await tenants.get_tenant(session, request.tenant_id)
            recheck = await requests.last_billable_check(
                session, request.tenant_id, request.environment, request.phone_e164, now - FREE_RECHECK_WINDOW
            )
            price = await tenants.unit_price(session, request.tenant_id, SKU)
            spent = await requests.month_spend(session, request.tenant_id, request.environment, now)
        if tenant is None or tenant.status != "active":
            return _refusal("rejected", "tenant_suspended", "the tenant is suspended", now), None
        cap = tenant.spend_cap_microdollars
        if recheck is not None and recheck.lookup is not None:
            return self._result(request, _lookup_decoder.decode(recheck.lookup), cache_hit=True, price=price), cap
        if cap is not None and spent + price > cap:
            return _spend_cap_refusal(now), cap
        provider = self.providers[request.environment]
        attempted_at = datetime.now(UTC)
        try:
            answer = await provider.lookup(request.phone_e164)
        except ProviderUnavailable as error:
            return _refusal("failed", "provider_unavailable", str(error), datetime.now(UTC)), cap
        except ProviderUnconfigured:
            message = "no carrier lookup credentials are configured for live requests"
            return _refusal("failed", "provider_unconfigured", message, datetime.now(UTC)), cap
        except ProviderUninterpretable:
            answer = None
        lookup = StoredLookup(provider=provider.name, attempted_at=attempted_at, answer=answer)
        return self._result(request, lookup, cache_hit=False, price=price), cap

    def _result(self, request: PhoneRequest, lookup: StoredLookup, *, cache_hit: bool, price: int) -> requests.Outcome:
        completed_at = datetime.now(UTC)
        billable = not cache_hit and lookup.answer is not None and lookup.answer.valid is not False
        result = build_result(
            Request(
                request_id=request.id,
                environment=request.environment,
                created_at=request.created_at,
                phone_e164=request.phone_e164,
                subject_type=request.subject_type,
                supplied_name=request.supplied_name,
                reference_id=request.reference_id,
            ),
            lookup,
            completed_at=completed_at,
            cache_hit=cache_hit,
            billable=billable,
            unit_price_microdollars=price,
        )
        return requests.Outcome(
            state=result.result_state,
            completed_at=completed_at,
            billing_disposition=result.billing.disposition,
            result=_result_encoder.encode(result),
            lookup=None if cache_hit else _lookup_encoder.encode(lookup),
            billable=billable,
            unit_price_microdollars=price,
            cache_hit=cache_hit,
        )

    async def _store(self, request: PhoneRequest, outcome: requests.Outcome, spend_cap: int | None) -> None:
        try:
            async with self.db.write() as session:
                await requests.finish(session, request, outcome, spend_cap=spend_cap)
        except requests.SpendCapReached:
            # Checks running side by side passed the cap together: the write, not the earlier read, decides.
            async with self.db.write() as session:
                await requests.finish(session, request, _spend_cap_refusal(outcome.completed_at))
        except SQLAlchemyError:
            if outcome.lookup is None:
                raise  # nothing was spent at the provider: the redelivered message simply tries again
            # The provider was paid but the result or its ledger row could not be written: an operator decides.
            log.exception("ledger_write_failed", request_id=request.id)
            hold = requests.Outcome(
                state="pending_reconciliation",
                completed_at=outcome.completed_at,
                billing_disposition="pending_reconciliation",
                result=outcome.result,
                lookup=outcome.lookup,
                error_code="ledger_unavailable",
                error_message="the check ran but its billing could not be recorded; an operator will reconcile it",
            )
            async with self.db.write() as session:
                await requests.finish(session, request, hold)

    async def announce(self, request: PhoneRequest) -> None:
        """Publish the stored outcome on the completed topic (again, if this is a redelivery)."""
        completed = VerificationCompleted(
            request_id=request.id,
            tenant_id=request.tenant_id,
            environment=request.environment,  # type: ignore[arg-type]
            phone_e164=request.phone_e164,
            result=msgspec.json.decode(request.result, type=VerifyResult)
            if request.state in requests.RESULT_STATES and request.result
            else None,
            failure=requests.failure_of(request) if request.state in requests.FAILURE_STATES else None,
        )
        await self.publish(completed, self.config.completed_topic, request.phone_e164.encode())

    async def sweep(self) -> int:
        """Publish again every request left `pending` past the deadline; returns how many were sent."""
        now = datetime.now(UTC)
        async with self.db.read() as session:
            stale = await requests.stale_pending(session, now - self.config.sweep_after, self.config.sweep_batch)
            OUTBOX_PENDING.set((await requests.count_by_state(session)).get("pending", 0))
        if stale and self.ensure_topics is not None:
            # Stale rows may mean the broker lost its state (a memory-only broker restarted): recreate the topics.
            await self.ensure_topics()
        sent = 0
        for request in stale:
            async with self.db.write() as session:
                claimed = await requests.claim_republish(session, request, now)
            if claimed:
                message = VerificationRequested(
                    request_id=request.id,
                    tenant_id=request.tenant_id,
                    environment=request.environment,  # type: ignore[arg-type]
                    phone_e164=request.phone_e164,
                )
                await self.publish(message, self.config.requested_topic, request.phone_e164.encode())
                sent += 1
        if sent:
            log.info("sweeper_republished", count=sent)
        return sent


def _spend_cap_refusal(at: datetime) -> requests.Outcome:
    return _refusal("rejected", "spend_cap_reached", "the tenant's monthly spend cap is reached", at)


def _refusal(state: str, code: str, message: str, at: datetime) -> requests.Outcome:
    return requests.Outcome(
        state=state, completed_at=at, billing_disposition="not_billable", error_code=code, error_message=message
    )


RECONCILE_OUTCOMES = ("billable", "not_billable", "failed")


async def reconcile(db: Database, request_id: str, outcome: str) -> str:
    """An operator's decision on a `pending_reconciliation` request; returns its new state.

    `billable`: the stored result stands and is billed; `not_billable`: it stands, free; `failed`: it becomes a
    failed, unbilled request (the caller may then start a new check under a new key).
    """
    if outcome not in RECONCILE_OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(RECONCILE_OUTCOMES)}")
    async with db.write() as session:
        request = await requests.get_request(session, request_id)
        if request is None or request.state != "pending_reconciliation":
            raise LookupError(f"no request {request_id} awaiting reconciliation")
        now = datetime.now(UTC)
        if outcome == "failed" or request.result is None:
            decided = _refusal("failed", "ledger_unavailable", "the check could not be recorded and was voided", now)
        else:
            result = msgspec.json.decode(request.result, type=VerifyResult)
            billable = outcome == "billable"
            price = await tenants.unit_price(session, request.tenant_id, SKU)
            result.billing.disposition = outcome  # type: ignore[assignment]
            result.billing.unit_price_microdollars = price if billable else 0
            decided = requests.Outcome(
                state=result.result_state,
                completed_at=now,
                billing_disposition=outcome,
                result=_result_encoder.encode(result),
                lookup=request.lookup,
                billable=billable,
                unit_price_microdollars=price,
            )
        await requests.finish(session, request, decided, from_state="pending_reconciliation")
        return decided.state
