"""The phone processor: load an accepted request, decide its outcome, store it with its ledger row, announce it."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import msgspec
import structlog
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from processors.common.metrics import PROCESSED
from processors.common.outbox import Outbox, Publish
from processors.phone.lookup import (
    Provider,
    ProviderUnavailable,
    ProviderUnconfigured,
    ProviderUninterpretable,
)
from processors.phone.result import Request, StoredLookup, build_result
from storage.common.db import Database
from storage.phone import requests, tenants
from storage.phone.catalog import RECONCILE_OUTCOMES
from topics.phone import (
    SKU,
    VerificationCompleted,
    VerificationRequested,
    VerifyResult,
    partition_key,
)

log = structlog.get_logger("signalyard.processors.phone")

FREE_RECHECK_WINDOW = timedelta(hours=24)

_lookup_encoder = msgspec.json.Encoder()
_lookup_decoder = msgspec.json.Decoder(StoredLookup)
_result_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class PhoneProcessorConfig:
    requested_topic: str
    completed_topic: str
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
    ) -> None:
        self.db = db
        self.providers = providers
        self.publish = publish
        self.config = config
        self._slots = asyncio.Semaphore(config.concurrency)

    async def handle_batch(self, batch: list[VerificationRequested]) -> None:
        """A batch in rounds: round k holds each number's k-th request, so one number's checks stay in order
        (a re-check sees the check before it) while different numbers share each round's reads and writes."""
        seen: set[str] = set()
        rounds: list[list[str]] = []
        depth: dict[str, int] = defaultdict(int)
        for message in batch:
            if message.request_id in seen:
                continue
            seen.add(message.request_id)
            index = depth[message.phone_e164]
            depth[message.phone_e164] += 1
            if index == len(rounds):
                rounds.append([])
            rounds[index].append(message.request_id)
        for request_ids in rounds:
            await self._handle_round(request_ids)

    async def _handle_round(self, request_ids: list[str]) -> None:
        now = datetime.now(UTC)

        def load(connection: Connection) -> tuple[dict[str, Any], list[Any], _Context | None]:
            rows = requests.load_requests(connection, request_ids)
            pending = [row for row in rows.values() if row.state == "pending"]
            return rows, pending, _Context.load(connection, pending, now) if pending else None

        rows, pending, context = await self.db.read(load)
        for request_id in set(request_ids) - rows.keys():
            log.warning("request_not_found", request_id=request_id)
            PROCESSED.labels("phone", "unknown_request").inc()
        finished = [row for row in rows.values() if row.state != "pending"]  # redelivered: announce again
        if context is not None:
            decided = await asyncio.gather(*(self._decide(row, context) for row in pending))
            finished += await self._store_round(list(zip(pending, decided, strict=True)), context)
        await asyncio.gather(*(self.announce(row) for row in finished))
        for row in finished:
            PROCESSED.labels("phone", row.state).inc()

    async def _store_round(self, decided: list[tuple[Any, requests.Outcome]], context: _Context) -> list[Any]:
        """Store a round's outcomes in one transaction; returns the finished requests, as stored, to announce."""
        caps = context.spend_caps()
        try:
            won = await self.db.write(requests.finish_many, decided, caps)
            return [_Stored.of(row, outcome) for row, outcome in decided if row.id in won]
        except (requests.SpendCapReached, SQLAlchemyError):
            # One request at a time: the cap decides each in order, and a write failure stays with its request.
            for row, outcome in decided:
                await self._store(row, outcome, context.terms[row.tenant_id].spend_cap_microdollars)
            ids = [row.id for row, _ in decided]
            stored = await self.db.read(requests.load_requests, ids)
            return [row for row in stored.values() if row.state != "pending"]

    async def _decide(self, request: Any, context: _Context) -> requests.Outcome:
        now = datetime.now(UTC)
        terms = context.terms.get(request.tenant_id)
        if terms is None or terms.status != "active":
            return _refusal("rejected", "tenant_suspended", "the tenant is suspended", now)
        recheck = context.rechecks.get((request.tenant_id, request.environment, request.phone_e164))
        if recheck is not None and recheck.lookup is not None:
            lookup = _lookup_decoder.decode(recheck.lookup)
            return self._result(request, lookup, cache_hit=True, price=terms.unit_price_microdollars)
        cap = terms.spend_cap_microdollars
        spent = context.spent.get((request.tenant_id, request.environment), 0)
        if cap is not None and spent + terms.unit_price_microdollars > cap:
            return _spend_cap_refusal(now)
        provider = self.providers[request.environment]
        attempted_at = datetime.now(UTC)
        try:
            async with self._slots:
                answer = await provider.lookup(request.phone_e164)
        except ProviderUnavailable as error:
            return _refusal("failed", "provider_unavailable", str(error), datetime.now(UTC))
        except ProviderUnconfigured:
            message = "no carrier lookup credentials are configured for live requests"
            return _refusal("failed", "provider_unconfigured", message, datetime.now(UTC))
        except ProviderUninterpretable:
            answer = None
        lookup = StoredLookup(provider=provider.name, attempted_at=attempted_at, answer=answer)
        return self._result(request, lookup, cache_hit=False, price=terms.unit_price_microdollars)

    def _result(self, request: Any, lookup: StoredLookup, *, cache_hit: bool, price: int) -> requests.Outcome:
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

    async def _store(self, request: Any, outcome: requests.Outcome, spend_cap: int | None) -> None:
        """One request's outcome in its own transaction (the careful path when a round's write fails)."""

        async def finish(decided: requests.Outcome) -> None:
            await self.db.write(requests.finish_many, [(request, decided)], {request.tenant_id: spend_cap})

        try:
            await finish(outcome)
        except requests.SpendCapReached:
            # Checks running side by side passed the cap together: the write, not the earlier read, decides.
            await finish(_spend_cap_refusal(outcome.completed_at))
        except SQLAlchemyError:
            if outcome.lookup is None:
                raise  # nothing was spent at the provider: the redelivered message simply tries again
            # The provider was paid but the result or its ledger row could not be written: an operator decides.
            log.exception("ledger_write_failed", request_id=request.id)
            await finish(
                requests.Outcome(
                    state="pending_reconciliation",
                    completed_at=outcome.completed_at,
                    billing_disposition="pending_reconciliation",
                    result=outcome.result,
                    lookup=outcome.lookup,
                    error_code="ledger_unavailable",
                    error_message="the check ran but its billing could not be recorded; an operator will reconcile it",
                )
            )

    async def announce(self, request: Any) -> None:
        """Publish the stored outcome on the completed topic (again, if this is a redelivery)."""
        result = msgspec.Raw(request.result) if request.state in requests.RESULT_STATES and request.result else None
        completed = VerificationCompleted(
            request_id=request.id,
            tenant_id=request.tenant_id,
            environment=request.environment,
            phone_e164=request.phone_e164,
            result=cast(VerifyResult | None, result),  # already the stored JSON: sent as it is, not re-encoded
            failure=requests.failure_of(request) if request.state in requests.FAILURE_STATES else None,
        )
        await self.publish(completed, self.config.completed_topic, partition_key(request.phone_e164))


def phone_outbox(config: PhoneProcessorConfig) -> Outbox:
    """Phone's outbox: a pending request is published again as the VerificationRequested it was."""
    columns = [requests.REQUESTS.c[name] for name in ("id", "tenant_id", "environment", "phone_e164")]

    def message(row: Any) -> tuple[msgspec.Struct, str, bytes]:
        requested = VerificationRequested(
            request_id=row.id, tenant_id=row.tenant_id, environment=row.environment, phone_e164=row.phone_e164
        )
        return requested, config.requested_topic, partition_key(row.phone_e164)

    return Outbox("phone", requests.REQUESTS, columns, message)


@dataclass(frozen=True, slots=True)
class _Context:
    """What deciding a round needs from storage, read once for the whole round."""

    terms: dict[str, tenants.TenantTerms]
    spent: dict[tuple[str, str], int]
    """This month's spend per (tenant, environment), read only for tenants with a spend cap."""
    rechecks: dict[tuple[str, str, str], Any]

    @classmethod
    def load(cls, connection: Connection, pending: list[Any], now: datetime) -> _Context:
        tenant_ids = sorted({row.tenant_id for row in pending})
        numbers = [(row.tenant_id, row.environment, row.phone_e164) for row in pending]
        terms = tenants.tenant_terms(connection, tenant_ids, SKU)
        capped = [tenant_id for tenant_id, t in terms.items() if t.spend_cap_microdollars is not None]
        return cls(
            terms=terms,
            spent=requests.month_spends(connection, capped, now) if capped else {},
            rechecks=requests.last_billable_checks(connection, numbers, now - FREE_RECHECK_WINDOW),
        )

    def spend_caps(self) -> dict[str, int | None]:
        return {tenant_id: terms.spend_cap_microdollars for tenant_id, terms in self.terms.items()}


@dataclass(frozen=True, slots=True)
class _Stored:
    """A request as this round stored it (what announcing needs), without reading it back."""

    id: str
    tenant_id: str
    environment: str
    phone_e164: str
    state: str
    result: bytes | None
    error_code: str | None
    error_message: str | None
    billing_disposition: str | None

    @classmethod
    def of(cls, request: Any, outcome: requests.Outcome) -> _Stored:
        return cls(
            request.id,
            request.tenant_id,
            request.environment,
            request.phone_e164,
            outcome.state,
            outcome.result,
            outcome.error_code,
            outcome.error_message,
            outcome.billing_disposition,
        )


def _spend_cap_refusal(at: datetime) -> requests.Outcome:
    return _refusal("rejected", "spend_cap_reached", "the tenant's monthly spend cap is reached", at)


def _refusal(state: str, code: str, message: str, at: datetime) -> requests.Outcome:
    return requests.Outcome(
        state=state, completed_at=at, billing_disposition="not_billable", error_code=code, error_message=message
    )


async def reconcile(db: Database, request_id: str, outcome: str) -> str:
    """An operator's decision on a `pending_reconciliation` request; returns its new state.

    `billable`: the stored result stands and is billed; `not_billable`: it stands, free; `failed`: it becomes a
    failed, unbilled request (the caller may then start a new check under a new key).
    """
    if outcome not in RECONCILE_OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(RECONCILE_OUTCOMES)}")
    return await db.write(_reconcile, request_id, outcome)


def _reconcile(connection: Connection, request_id: str, outcome: str) -> str:
    request = requests.get_request(connection, request_id)
    if request is None or request.state != "pending_reconciliation":
        raise LookupError(f"no request {request_id} awaiting reconciliation")
    now = datetime.now(UTC)
    if outcome == "failed" or request.result is None:
        decided = _refusal("failed", "ledger_unavailable", "the check could not be recorded and was voided", now)
    else:
        result = msgspec.json.decode(request.result, type=VerifyResult)
        billable = outcome == "billable"
        price = tenants.unit_price(connection, request.tenant_id, SKU)
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
    requests.finish(connection, request, decided, from_state="pending_reconciliation")
    return decided.state
