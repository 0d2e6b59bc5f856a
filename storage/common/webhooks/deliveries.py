"""The delivery engine's queries: fan an event out into one delivery per subscribed endpoint, claim due deliveries under
a lease, record each attempt and what a failed delivery makes of its endpoint."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    Select,
    and_,
    bindparam,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from storage.common.models import UtcDateTime, json_list_has
from storage.common.webhooks.endpoints import cancel_pending
from storage.common.webhooks.models import ACTIVE, ATTEMPTS, DELIVERIES, ENDPOINTS, EVENTS


def fan_out(connection: Connection, event_ids: Collection[str], *, now: datetime) -> int:
    """One pending delivery, due now, per active subscribed endpoint of each pending event's owner; marks the events
    fanned out. Returns how many deliveries were created. Unique per (event, endpoint): running it again for the
    same events (a redelivered message) creates nothing."""
    if not event_ids:
        return 0
    ids = sorted(event_ids)
    ev, ep = EVENTS, ENDPOINTS
    moment = bindparam("now", now, type_=UtcDateTime())
    source = (
        select(ev.c.service, ev.c.id, ep.c.id, literal("pending"), literal(0), moment, moment)
        .select_from(ev.join(ep, and_(ep.c.service == ev.c.service, ep.c.owner_id == ev.c.owner_id)))
        .where(
            ev.c.id.in_(ids),
            ev.c.state == "pending",
            ep.c.status == ACTIVE,
            ep.c.deleted_at.is_(None),
            json_list_has(connection.dialect.name, ep.c.events, ev.c.type),
        )
    )
    columns = ["service", "event_id", "endpoint_id", "state", "attempts", "next_attempt_at", "created_at"]
    dialect_insert = sqlite.insert if connection.dialect.name == "sqlite" else postgresql.insert
    statement = (
        dialect_insert(DELIVERIES)
        .from_select(columns, source)
        .on_conflict_do_nothing(index_elements=["event_id", "endpoint_id"])
    )
    created = connection.execute(statement).rowcount
    connection.execute(update(ev).where(ev.c.id.in_(ids), ev.c.state == "pending").values(state="fanned_out"))
    return max(created, 0)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery leased to one member for one attempt, with what sending it needs."""

    delivery_id: int
    attempt: int
    """This attempt's number (1 for the first)."""
    endpoint_id: str
    url: str
    secret_encrypted: str | None
    """None: the endpoint has no secret, its deliveries are unsigned."""
    event_id: str
    body: bytes
    created_at: datetime
    """When the delivery was created: the start of its retry window."""


def _due(*, skipping: bool) -> Select[Any]:
    d, ep = DELIVERIES, ENDPOINTS
    due = (
        select(d.c.id, d.c.endpoint_id)
        .select_from(d.join(ep, ep.c.id == d.c.endpoint_id))
        .where(
            d.c.service == bindparam("service"),
            d.c.next_attempt_at <= bindparam("now", type_=UtcDateTime()),
            d.c.state == "pending",
            ep.c.status == ACTIVE,
            ep.c.deleted_at.is_(None),
        )
        .order_by(d.c.next_attempt_at)
        .limit(bindparam("scan"))
    )
    return due.where(d.c.endpoint_id.not_in(bindparam("skip", expanding=True))) if skipping else due


# The claim's statements, built once: a claim runs several times a second per member under load, and building them
# per call was most of its cost (measured: bench/helpdesk.py).
_DUE, _DUE_SKIPPING = _due(skipping=False), _due(skipping=True)
_LEASE = (
    update(DELIVERIES)
    .where(
        DELIVERIES.c.id.in_(bindparam("ids", expanding=True)),
        DELIVERIES.c.state == "pending",
        DELIVERIES.c.next_attempt_at <= bindparam("now", type_=UtcDateTime()),
    )
    .values(next_attempt_at=bindparam("lease_until", type_=UtcDateTime()), attempts=DELIVERIES.c.attempts + 1)
    .returning(DELIVERIES.c.id, DELIVERIES.c.attempts)
)
_CLAIMED = (
    select(
        DELIVERIES.c.id,
        DELIVERIES.c.endpoint_id,
        DELIVERIES.c.created_at,
        ENDPOINTS.c.url,
        ENDPOINTS.c.secret_encrypted,
        EVENTS.c.id.label("event_id"),
        EVENTS.c.body,
    )
    .select_from(
        DELIVERIES.join(ENDPOINTS, ENDPOINTS.c.id == DELIVERIES.c.endpoint_id).join(
            EVENTS, EVENTS.c.id == DELIVERIES.c.event_id
        )
    )
    .where(DELIVERIES.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(DELIVERIES.c.id)
)


def any_due(connection: Connection, service: str, *, now: datetime) -> bool:
    """Whether a delivery of the service to an active endpoint is due: a read, so that an idle member's polls take no
    write lock (and leave the WAL nothing to copy back)."""
    return connection.execute(_DUE, {"service": service, "now": now, "scan": 1}).first() is not None


def claim_due(
    connection: Connection,
    service: str,
    *,
    now: datetime,
    lease_until: datetime,
    limit: int,
    per_endpoint: int,
    held: Mapping[str, int] | None = None,
    skip_endpoints: Collection[str] = (),
    scan: int | None = None,
) -> list[Claimed]:
    """Lease up to `limit` of the service's due deliveries to active endpoints, oldest first, so that no endpoint
    gets more than `per_endpoint` including the `held` it already has in this member; `skip_endpoints` are not
    looked at. The lease moves `next_attempt_at` to `lease_until` conditionally, so of several members only one
    claims a delivery; one whose member dies is due again when the lease runs out."""
    due = _DUE_SKIPPING if skip_endpoints else _DUE
    parameters = {"service": service, "now": now, "scan": scan or limit * 4, "skip": list(skip_endpoints)}
    taken = dict(held or {})
    chosen: list[int] = []
    for delivery_id, endpoint_id in connection.execute(due, parameters):
        count = taken.get(endpoint_id, 0)
        if count < per_endpoint:
            taken[endpoint_id] = count + 1
            chosen.append(delivery_id)
            if len(chosen) == limit:
                break
    if not chosen:
        return []
    leased = {
        row.id: row.attempts
        for row in connection.execute(_LEASE, {"ids": chosen, "now": now, "lease_until": lease_until})
    }
    if not leased:
        return []
    rows = connection.execute(_CLAIMED, {"ids": list(leased)})
    return [
        Claimed(
            row.id,
            leased[row.id],
            row.endpoint_id,
            row.url,
            row.secret_encrypted,
            row.event_id,
            row.body,
            row.created_at,
        )
        for row in rows
    ]


Outcome = Literal["delivered", "retry", "failed"]


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one attempt of a claimed delivery came to, and what happens next."""

    claimed: Claimed
    attempted_at: datetime
    duration_ms: int
    status_code: int | None
    error: str | None
    response_body: str | None
    outcome: Outcome
    next_attempt_at: datetime | None
    """When `outcome` is `retry`."""


def record_attempts(
    connection: Connection,
    results: Sequence[AttemptResult],
    *,
    disabled_status: str,
    spare_recently_delivered: bool,
    now: datetime,
) -> list[bool]:
    """Log every attempt and move each delivery on, conditionally on still holding the attempt it was claimed for
    (a member whose lease ran out loses to the one that claimed it next; a deleted endpoint's delivery stays
    canceled). A delivery whose schedule ran out disables its endpoint (unless `spare_recently_delivered` and the
    endpoint got a 2xx since the delivery was created) and cancels the endpoint's other pending deliveries.
    Returns, per result, whether it disabled its endpoint."""
    if not results:
        return []
    d = DELIVERIES
    connection.execute(
        insert(ATTEMPTS),
        [
            {
                "delivery_id": r.claimed.delivery_id,
                "attempt": r.claimed.attempt,
                "attempted_at": r.attempted_at,
                "status_code": r.status_code,
                "error": r.error,
                "duration_ms": r.duration_ms,
                "response_body": r.response_body,
            }
            for r in results
        ],
    )
    held = and_(d.c.id == bindparam("b_id"), d.c.attempts == bindparam("b_attempt"), d.c.state == "pending")
    delivered = [r for r in results if r.outcome == "delivered"]
    retries = [r for r in results if r.outcome == "retry"]
    if delivered:
        connection.execute(
            update(d)
            .where(held)
            .values(state="delivered", next_attempt_at=None, finished_at=bindparam("b_at", type_=UtcDateTime())),
            [_held(r) | {"b_at": r.attempted_at} for r in delivered],
        )
        latest: dict[str, datetime] = {}
        for r in delivered:
            latest[r.claimed.endpoint_id] = max(r.attempted_at, latest.get(r.claimed.endpoint_id, r.attempted_at))
        connection.execute(
            update(ENDPOINTS)
            .where(ENDPOINTS.c.id == bindparam("b_endpoint"))
            .values(last_delivered_at=bindparam("b_at", type_=UtcDateTime())),
            [{"b_endpoint": endpoint, "b_at": at} for endpoint, at in latest.items()],
        )
    if retries:
        connection.execute(
            update(d).where(held).values(next_attempt_at=bindparam("b_next", type_=UtcDateTime())),
            [_held(r) | {"b_next": r.next_attempt_at} for r in retries],
        )
    disabled = [False] * len(results)
    for index, r in enumerate(results):
        if r.outcome == "failed":
            disabled[index] = _fail(connection, r, disabled_status, spare_recently_delivered, now)
    return disabled


def _held(result: AttemptResult) -> dict[str, Any]:
    return {"b_id": result.claimed.delivery_id, "b_attempt": result.claimed.attempt}


def _fail(connection: Connection, result: AttemptResult, disabled_status: str, spare: bool, now: datetime) -> bool:
    d, ep, claimed = DELIVERIES, ENDPOINTS, result.claimed
    failed = connection.execute(
        update(d)
        .where(d.c.id == claimed.delivery_id, d.c.attempts == claimed.attempt, d.c.state == "pending")
        .values(state="failed", next_attempt_at=None, finished_at=result.attempted_at)
    )
    if not failed.rowcount:
        return False
    disable = update(ep).where(ep.c.id == claimed.endpoint_id, ep.c.status == ACTIVE, ep.c.deleted_at.is_(None))
    if spare:
        disable = disable.where(ep.c.last_delivered_at.is_(None) | (ep.c.last_delivered_at < claimed.created_at))
    if not connection.execute(disable.values(status=disabled_status, disabled_at=now)).rowcount:
        return False
    cancel_pending(connection, claimed.endpoint_id, now)
    return True


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """One event's delivery to one endpoint as its owner sees it: the event, where it stands, and its last attempt."""

    event_id: str
    event_type: str
    state: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None


def recent_deliveries(connection: Connection, service: str, endpoint_id: str, limit: int) -> list[DeliveryRecord]:
    """An endpoint's newest deliveries first, each with its latest attempt's answer (the caller owns the endpoint)."""

    def latest(column: Any) -> Any:
        last = select(column).where(ATTEMPTS.c.delivery_id == DELIVERIES.c.id).order_by(ATTEMPTS.c.attempt.desc())
        return last.limit(1).scalar_subquery()

    rows = connection.execute(
        select(
            DELIVERIES.c.event_id,
            EVENTS.c.type,
            DELIVERIES.c.state,
            DELIVERIES.c.attempts,
            DELIVERIES.c.created_at,
            DELIVERIES.c.next_attempt_at,
            latest(ATTEMPTS.c.status_code),
            latest(ATTEMPTS.c.error),
        )
        .join(EVENTS, EVENTS.c.id == DELIVERIES.c.event_id)
        .where(DELIVERIES.c.service == service, DELIVERIES.c.endpoint_id == endpoint_id)
        .order_by(DELIVERIES.c.created_at.desc(), DELIVERIES.c.id.desc())
        .limit(limit)
    )
    return [DeliveryRecord(*row) for row in rows]
