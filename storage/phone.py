"""Phone requests (the outbox), their ledger rows and the usage they add up to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import LedgerEntry, MonthlySpend, PhoneRequest
from topics.phone import ErrorDetail, StoredRequestFailure

OPEN_STATES = ("pending", "pending_reconciliation")


async def add_request(session: AsyncSession, request: PhoneRequest) -> None:
    """Insert a new `pending` row; IntegrityError when the idempotency key or the open number is taken."""
    session.add(request)
    await session.flush()


async def get_request(session: AsyncSession, request_id: str) -> PhoneRequest | None:
    return await session.get(PhoneRequest, request_id)


async def find_by_idempotency_key(
    session: AsyncSession, tenant_id: str, environment: str, idempotency_key: str
) -> PhoneRequest | None:
    return await session.scalar(
        select(PhoneRequest).where(
            PhoneRequest.tenant_id == tenant_id,
            PhoneRequest.environment == environment,
            PhoneRequest.idempotency_key == idempotency_key,
        )
    )


async def find_open_check(session: AsyncSession, tenant_id: str, environment: str, phone_e164: str) -> str | None:
    """The id of this number's check that is still pending or awaiting an operator, if any."""
    return await session.scalar(
        select(PhoneRequest.id).where(
            PhoneRequest.tenant_id == tenant_id,
            PhoneRequest.environment == environment,
            PhoneRequest.phone_e164 == phone_e164,
            PhoneRequest.state.in_(OPEN_STATES),
        )
    )


async def last_billable_check(
    session: AsyncSession, tenant_id: str, environment: str, phone_e164: str, since: datetime
) -> PhoneRequest | None:
    """The newest billable completed check of this number since `since` (the free re-check window)."""
    return await session.scalar(
        select(PhoneRequest)
        .where(
            PhoneRequest.tenant_id == tenant_id,
            PhoneRequest.environment == environment,
            PhoneRequest.phone_e164 == phone_e164,
            PhoneRequest.billable_at >= since,
        )
        .order_by(PhoneRequest.billable_at.desc())
        .limit(1)
    )


FAILURE_STATES = ("failed", "rejected", "pending_reconciliation")
RESULT_STATES = ("completed", "unavailable", "error")


def failure_of(request: PhoneRequest) -> StoredRequestFailure:
    """The contract's StoredRequestFailure for a failed, rejected or reconciliation row."""
    return StoredRequestFailure(
        request_id=request.id,
        status=request.state,  # type: ignore[arg-type]
        error=ErrorDetail(code=request.error_code or "internal_error", message=request.error_message or ""),
        billing_disposition=request.billing_disposition,  # type: ignore[arg-type]
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """A request's terminal state and everything stored with it."""

    state: str
    completed_at: datetime
    billing_disposition: str | None
    result: bytes | None = None
    lookup: bytes | None = None
    error_code: str | None = None
    error_message: str | None = None
    billable: bool = False
    sku: str = "core_phone"
    unit_price_microdollars: int = 0
    cache_hit: bool = False


class SpendCapReached(Exception):
    """Billing this request would take the tenant past its monthly cap; the caller's transaction must roll back."""


async def finish(
    session: AsyncSession,
    request: PhoneRequest,
    outcome: Outcome,
    *,
    from_state: str = "pending",
    spend_cap: int | None = None,
) -> bool:
    """Move a request from `from_state` to its outcome and write its one ledger row, in the caller's transaction.

    False when another worker got there first: the update is conditional, so redelivery never bills twice.
    Raises SpendCapReached when the billed amount would pass `spend_cap` (checked atomically with the write).
    """
    moved = await session.execute(
        update(PhoneRequest)
        .where(PhoneRequest.id == request.id, PhoneRequest.state == from_state)
        .values(
            state=outcome.state,
            completed_at=outcome.completed_at,
            billing_disposition=outcome.billing_disposition,
            result=outcome.result,
            lookup=outcome.lookup,
            error_code=outcome.error_code,
            error_message=outcome.error_message,
            billable_at=outcome.completed_at if outcome.billable else None,
        )
        .execution_options(synchronize_session=False)
    )
    if not moved.rowcount:  # type: ignore[attr-defined]
        return False
    if outcome.billing_disposition in ("billable", "not_billable"):
        amount = outcome.unit_price_microdollars if outcome.billable else 0
        await session.execute(
            insert(LedgerEntry).values(
                request_id=request.id,
                tenant_id=request.tenant_id,
                environment=request.environment,
                sku=outcome.sku,
                disposition=outcome.billing_disposition,
                unit_price_microdollars=amount,
                cache_hit=outcome.cache_hit,
                created_at=outcome.completed_at,
            )
        )
        if amount:
            spent = await _add_spend(session, request.tenant_id, request.environment, outcome.completed_at, amount)
            if spend_cap is not None and spent > spend_cap:
                raise SpendCapReached
    return True


async def _add_spend(session: AsyncSession, tenant_id: str, environment: str, at: datetime, amount: int) -> int:
    """Add to the month's total and return the new total (one atomic upsert on both backends)."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(MonthlySpend).values(
        tenant_id=tenant_id, environment=environment, month=month_of(at), amount_microdollars=amount
    )
    upsert = statement.on_conflict_do_update(
        index_elements=["tenant_id", "environment", "month"],
        set_={"amount_microdollars": MonthlySpend.amount_microdollars + amount},
    ).returning(MonthlySpend.amount_microdollars)
    return int((await session.execute(upsert)).scalar_one())


def month_of(at: datetime) -> str:
    return at.strftime("%Y-%m")


async def month_spend(session: AsyncSession, tenant_id: str, environment: str, at: datetime) -> int:
    spent = await session.get(MonthlySpend, (tenant_id, environment, month_of(at)))
    return spent.amount_microdollars if spent is not None else 0


async def stale_pending(session: AsyncSession, published_before: datetime, limit: int) -> list[PhoneRequest]:
    return list(
        await session.scalars(
            select(PhoneRequest)
            .where(PhoneRequest.state == "pending", PhoneRequest.published_at < published_before)
            .order_by(PhoneRequest.published_at)
            .limit(limit)
        )
    )


async def claim_republish(session: AsyncSession, request: PhoneRequest, now: datetime) -> bool:
    """Conditionally stamp a new publish time, so that of several sweepers only one re-publishes a row."""
    moved = await session.execute(
        update(PhoneRequest)
        .where(
            PhoneRequest.id == request.id,
            PhoneRequest.state == "pending",
            PhoneRequest.published_at == request.published_at,
        )
        .values(published_at=now)
        .execution_options(synchronize_session=False)
    )
    return bool(moved.rowcount)  # type: ignore[attr-defined]


async def count_by_state(session: AsyncSession) -> dict[str, int]:
    rows = await session.execute(select(PhoneRequest.state, func.count()).group_by(PhoneRequest.state))
    return dict(rows.all())


@dataclass(frozen=True, slots=True)
class SkuUsage:
    sku: str
    billable_requests: int
    cache_hits: int
    amount_microdollars: int


async def usage(
    session: AsyncSession, tenant_id: str, environment: str, start: datetime, end: datetime
) -> list[SkuUsage]:
    """Ledger totals per SKU for rows created in [start, end)."""
    billable = LedgerEntry.disposition == "billable"
    rows = await session.execute(
        select(
            LedgerEntry.sku,
            func.sum(case((billable, 1), else_=0)),
            func.sum(case((LedgerEntry.cache_hit, 1), else_=0)),
            func.sum(case((billable, LedgerEntry.unit_price_microdollars), else_=0)),
        )
        .where(
            LedgerEntry.tenant_id == tenant_id,
            LedgerEntry.environment == environment,
            LedgerEntry.created_at >= start,
            LedgerEntry.created_at < end,
        )
        .group_by(LedgerEntry.sku)
        .order_by(LedgerEntry.sku)
    )
    return [SkuUsage(sku, int(b or 0), int(c or 0), int(a or 0)) for sku, b, c, a in rows.tuples()]
