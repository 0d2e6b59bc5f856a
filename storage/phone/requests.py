"""Phone requests (the outbox), their ledger rows and the usage they add up to."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from sqlalchemy import Table, bindparam, case, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from storage.common.db import per_dialect
from storage.phone.models import LedgerEntry, MonthlySpend, PhoneRequest
from topics.phone import ErrorDetail, StoredRequestFailure

OPEN_STATES = ("pending", "pending_reconciliation")
REQUESTS = cast(Table, PhoneRequest.__table__)
LEDGER = cast(Table, LedgerEntry.__table__)
SPEND = cast(Table, MonthlySpend.__table__)


def get_request(connection: Connection, request_id: str) -> Row[Any] | None:
    return connection.execute(select(REQUESTS).where(REQUESTS.c.id == request_id)).first()


def find_by_idempotency_key(
    connection: Connection, tenant_id: str, environment: str, idempotency_key: str
) -> Row[Any] | None:
    return connection.execute(
        select(REQUESTS).where(
            REQUESTS.c.tenant_id == tenant_id,
            REQUESTS.c.environment == environment,
            REQUESTS.c.idempotency_key == idempotency_key,
        )
    ).first()


def find_open_check(connection: Connection, tenant_id: str, environment: str, phone_e164: str) -> str | None:
    """The id of this number's check that is still pending or awaiting an operator, if any."""
    return connection.execute(
        select(REQUESTS.c.id).where(
            REQUESTS.c.tenant_id == tenant_id,
            REQUESTS.c.environment == environment,
            REQUESTS.c.phone_e164 == phone_e164,
            REQUESTS.c.state.in_(OPEN_STATES),
        )
    ).scalar_one_or_none()


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


def finish(
    connection: Connection,
    request: Any,
    outcome: Outcome,
    *,
    from_state: str = "pending",
    spend_cap: int | None = None,
) -> bool:
    """`finish_many` for one request."""
    return request.id in finish_many(
        connection, [(request, outcome)], {request.tenant_id: spend_cap}, from_state=from_state
    )


def month_of(at: datetime) -> str:
    return at.strftime("%Y-%m")


def month_spend(connection: Connection, tenant_id: str, environment: str, at: datetime) -> int:
    spent = connection.execute(
        select(SPEND.c.amount_microdollars).where(
            SPEND.c.tenant_id == tenant_id, SPEND.c.environment == environment, SPEND.c.month == month_of(at)
        )
    ).scalar_one_or_none()
    return spent or 0


@dataclass(frozen=True, slots=True)
class SkuUsage:
    sku: str
    billable_requests: int
    cache_hits: int
    amount_microdollars: int


def usage(connection: Connection, tenant_id: str, environment: str, start: datetime, end: datetime) -> list[SkuUsage]:
    """Ledger totals per SKU for rows created in [start, end)."""
    billable = LEDGER.c.disposition == "billable"
    rows = connection.execute(
        select(
            LEDGER.c.sku,
            func.sum(case((billable, 1), else_=0)),
            func.sum(case((LEDGER.c.cache_hit, 1), else_=0)),
            func.sum(case((billable, LEDGER.c.unit_price_microdollars), else_=0)),
        )
        .where(
            LEDGER.c.tenant_id == tenant_id,
            LEDGER.c.environment == environment,
            LEDGER.c.created_at >= start,
            LEDGER.c.created_at < end,
        )
        .group_by(LEDGER.c.sku)
        .order_by(LEDGER.c.sku)
    )
    return [SkuUsage(sku, int(b or 0), int(c or 0), int(a or 0)) for sku, b, c, a in rows]


# Hot paths: a whole batch per unit of work.

# The hot statements are built once: building one per call cost as much as running it (measured: bench/README.md).
# INSERT ... ON CONFLICT is the dialect's own construct on both of our backends, so those are built per dialect.


_INSERT_PENDING = per_dialect(lambda insert_: insert_(REQUESTS).on_conflict_do_nothing().returning(REQUESTS.c.id))
_LOAD = select(REQUESTS).where(REQUESTS.c.id.in_(bindparam("ids", expanding=True)))


def insert_pending(connection: Connection, rows: list[dict[str, Any]]) -> set[str]:
    """Insert new `pending` rows; returns the ids that went in. A row whose idempotency key (or open number) is
    taken is skipped, not an error: the caller looks up what holds it."""
    return set(connection.execute(_INSERT_PENDING[connection.dialect.name], rows).scalars())


def load_requests(connection: Connection, ids: list[str]) -> dict[str, Any]:
    return {row.id: row for row in connection.execute(_LOAD, {"ids": ids})}


_LAST_BILLABLE = (
    select(
        REQUESTS.c.id,
        REQUESTS.c.tenant_id,
        REQUESTS.c.environment,
        REQUESTS.c.phone_e164,
        REQUESTS.c.lookup,
        REQUESTS.c.billable_at,
        REQUESTS.c.completed_at,
    )
    .where(REQUESTS.c.phone_e164.in_(bindparam("phones", expanding=True)), REQUESTS.c.billable_at >= bindparam("since"))
    .order_by(REQUESTS.c.billable_at)
)


def last_billable_checks(
    connection: Connection, numbers: list[tuple[str, str, str]], since: datetime
) -> dict[tuple[str, str, str], Any]:
    """The newest billable check since `since` for each (tenant, environment, number) asked about."""
    phones = sorted({phone for _, _, phone in numbers})
    rows = connection.execute(_LAST_BILLABLE, {"phones": phones, "since": since})
    wanted = set(numbers)
    found: dict[tuple[str, str, str], Any] = {}
    for row in rows:  # ascending, so the newest check wins
        key = (row.tenant_id, row.environment, row.phone_e164)
        if key in wanted:
            found[key] = row
    return found


_MONTH_SPENDS = select(SPEND).where(
    SPEND.c.tenant_id.in_(bindparam("tenant_ids", expanding=True)), SPEND.c.month == bindparam("month")
)


def month_spends(connection: Connection, tenant_ids: list[str], at: datetime) -> dict[tuple[str, str], int]:
    rows = connection.execute(_MONTH_SPENDS, {"tenant_ids": tenant_ids, "month": month_of(at)})
    return {(row.tenant_id, row.environment): row.amount_microdollars for row in rows}


_INSERT_LEDGER = insert(LEDGER)
_FINISH = (
    update(REQUESTS)
    .where(REQUESTS.c.id == bindparam("request_id"), REQUESTS.c.state == bindparam("from_state"))
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


def finish_many(
    connection: Connection,
    finished: list[tuple[Any, Outcome]],
    spend_caps: dict[str, int | None],
    *,
    from_state: str = "pending",
) -> set[str]:
    """Move requests from `from_state` to their outcomes, each with its one ledger row and the month's spend,
    in the caller's transaction. Returns the ids this call moved: the update is conditional, so a request
    another worker finished first is left alone, and redelivery never bills twice.

    Raises SpendCapReached when a tenant's billed total would pass its cap; the transaction must roll back.
    """
    won = {
        request.id
        for request, outcome in finished
        if connection.execute(
            _FINISH,
            {
                "request_id": request.id,
                "from_state": from_state,
                "new_state": outcome.state,
                "completed_at": outcome.completed_at,
                "disposition": outcome.billing_disposition,
                "result": outcome.result,
                "lookup": outcome.lookup,
                "error_code": outcome.error_code,
                "error_message": outcome.error_message,
                "billable_at": outcome.completed_at if outcome.billable else None,
            },
        ).rowcount
    }
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
        if request.id in won and outcome.billing_disposition in ("billable", "not_billable")
    ]
    if ledger:
        connection.execute(_INSERT_LEDGER, ledger)
    spent: dict[tuple[str, str, str], int] = defaultdict(int)
    for request, outcome in finished:
        if request.id in won and outcome.billable:
            month = month_of(outcome.completed_at)
            spent[(request.tenant_id, request.environment, month)] += outcome.unit_price_microdollars
    for (tenant_id, environment, month), amount in spent.items():
        total = _add_spend(connection, tenant_id, environment, month, amount)
        cap = spend_caps.get(tenant_id)
        if cap is not None and total > cap:
            raise SpendCapReached
    return won


def _spend_upsert(insert_: Any) -> Any:
    statement = insert_(SPEND)
    return statement.on_conflict_do_update(
        index_elements=["tenant_id", "environment", "month"],
        set_={"amount_microdollars": SPEND.c.amount_microdollars + statement.excluded.amount_microdollars},
    ).returning(SPEND.c.amount_microdollars)


_ADD_SPEND = per_dialect(_spend_upsert)


def _add_spend(connection: Connection, tenant_id: str, environment: str, month: str, amount: int) -> int:
    """Add to the month's total and return the new total (one atomic upsert on both backends)."""
    values = {"tenant_id": tenant_id, "environment": environment, "month": month, "amount_microdollars": amount}
    return int(connection.execute(_ADD_SPEND[connection.dialect.name], values).scalar_one())
