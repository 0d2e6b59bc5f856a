"""Phone requests (the outbox), their ledger rows and the usage they add up to."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from sqlalchemy import Row, Table, bindparam, case, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

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


class StoredRequest(Protocol):
    """What answering needs of a stored request: an ORM row or a Core row alike."""

    id: str
    state: str
    body_hash: str
    result: bytes | None
    error_code: str | None
    error_message: str | None
    billing_disposition: str | None


def failure_of(request: StoredRequest) -> StoredRequestFailure:
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
    return await _add_spend_for_month(session, tenant_id, environment, month_of(at), amount)


async def _add_spend_for_month(
    connection: AsyncConnection | AsyncSession, tenant_id: str, environment: str, month: str, amount: int
) -> int:
    """Add to the month's total and return the new total (one atomic upsert on both backends)."""
    statement = _insert(connection)(SPEND).values(
        tenant_id=tenant_id, environment=environment, month=month, amount_microdollars=amount
    )
    upsert = statement.on_conflict_do_update(
        index_elements=["tenant_id", "environment", "month"],
        set_={"amount_microdollars": SPEND.c.amount_microdollars + amount},
    ).returning(SPEND.c.amount_microdollars)
    return int((await connection.execute(upsert)).scalar_one())


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
    return [SkuUsage(sku, int(b or 0), int(c or 0), int(a or 0)) for sku, b, c, a in rows.all()]


# Hot paths: Core statements over one connection, a whole batch per statement.

REQUESTS = cast(Table, PhoneRequest.__table__)
LEDGER = cast(Table, LedgerEntry.__table__)
SPEND = cast(Table, MonthlySpend.__table__)


def _insert(connection: AsyncConnection | AsyncSession) -> Any:
    """The dialect's INSERT, which has ON CONFLICT on both of our backends."""
    bind = connection if isinstance(connection, AsyncConnection) else connection.get_bind()
    return (postgresql if bind.dialect.name == "postgresql" else sqlite).insert


async def insert_pending(connection: AsyncConnection, rows: list[dict[str, Any]]) -> set[str]:
    """Insert new `pending` rows; returns the ids that went in. A row whose idempotency key (or open number) is
    taken is skipped, not an error: the caller looks up what holds it."""
    statement = _insert(connection)(REQUESTS).on_conflict_do_nothing().returning(REQUESTS.c.id)
    return set((await connection.execute(statement, rows)).scalars())


async def load_requests(connection: AsyncConnection, ids: list[str]) -> dict[str, Row[Any]]:
    rows = await connection.execute(select(REQUESTS).where(REQUESTS.c.id.in_(ids)))
    return {row.id: row for row in rows}


async def last_billable_checks(
    connection: AsyncConnection, numbers: list[tuple[str, str, str]], since: datetime
) -> dict[tuple[str, str, str], Row[Any]]:
    """The newest billable check since `since` for each (tenant, environment, number) asked about."""
    phones = sorted({phone for _, _, phone in numbers})
    rows = await connection.execute(
        select(REQUESTS.c.tenant_id, REQUESTS.c.environment, REQUESTS.c.phone_e164, REQUESTS.c.lookup)
        .where(REQUESTS.c.phone_e164.in_(phones), REQUESTS.c.billable_at >= since)
        .order_by(REQUESTS.c.billable_at)
    )
    wanted = set(numbers)
    found: dict[tuple[str, str, str], Any] = {}
    for row in rows:  # ascending, so the newest check wins
        key = (row.tenant_id, row.environment, row.phone_e164)
        if key in wanted:
            found[key] = row
    return found


async def month_spends(connection: AsyncConnection, tenant_ids: list[str], at: datetime) -> dict[tuple[str, str], int]:
    rows = await connection.execute(
        select(SPEND).where(SPEND.c.tenant_id.in_(tenant_ids), SPEND.c.month == month_of(at))
    )
    return {(row.tenant_id, row.environment): row.amount_microdollars for row in rows}


_FINISH = (
    update(REQUESTS)
    .where(REQUESTS.c.id == bindparam("request_id"), REQUESTS.c.state == "pending")
    .values(
        state=bindparam("new_state"),
        completed_at=bindparam("completed_at"),
        billing_disposition=bindparam("disposition"),
        result=bindparam("result"),
        lookup=bindparam("lookup"),
        error_code=bindparam("error_code"),
        error_message=bindparam("error_message"),
        billable_at=bindparam("billable_at"),
    )
)


async def finish_many(
    connection: AsyncConnection,
    finished: list[tuple[Any, Outcome]],
    spend_caps: dict[str, int | None],
) -> set[str]:
    """`finish()` for a batch in the caller's transaction: ledger rows first (their primary key decides who
    finishes a request), then the winners' rows and the month's spend. Returns the ids this call finished.

    Raises SpendCapReached when a tenant's billed total would pass its cap; the transaction must roll back.
    """
    ledger = [
        {
            "request_id": request.id,
            "tenant_id": request.tenant_id,
            "environment": request.environment,
            "sku": outcome.sku,
            "disposition": outcome.billing_disposition,
            "unit_price_microdollars": outcome.unit_price_microdollars if outcome.billable else 0,
            "cache_hit": outcome.cache_hit,
            "created_at": outcome.completed_at,
        }
        for request, outcome in finished
    ]
    won = set(
        (
            await connection.execute(
                _insert(connection)(LEDGER).on_conflict_do_nothing().returning(LEDGER.c.request_id), ledger
            )
        ).scalars()
    )
    if not won:
        return won
    await connection.execute(
        _FINISH,
        [
            {
                "request_id": request.id,
                "new_state": outcome.state,
                "completed_at": outcome.completed_at,
                "disposition": outcome.billing_disposition,
                "result": outcome.result,
                "lookup": outcome.lookup,
                "error_code": outcome.error_code,
                "error_message": outcome.error_message,
                "billable_at": outcome.completed_at if outcome.billable else None,
            }
            for request, outcome in finished
            if request.id in won
        ],
    )
    spent: dict[tuple[str, str, str], int] = defaultdict(int)
    for request, outcome in finished:
        if request.id in won and outcome.billable:
            spent[(request.tenant_id, request.environment, month_of(outcome.completed_at))] += (
                outcome.unit_price_microdollars
            )
    for (tenant_id, environment, month), amount in spent.items():
        total = await _add_spend_for_month(connection, tenant_id, environment, month, amount)
        cap = spend_caps.get(tenant_id)
        if cap is not None and total > cap:
            raise SpendCapReached
    return won
