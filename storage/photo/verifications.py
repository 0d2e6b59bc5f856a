"""Verifications: the outbox row a verify call writes, its verdict, its review, and the history reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import msgspec
from sqlalchemy import Table, bindparam, func, select, update
from sqlalchemy.engine import Connection, Row

from storage.common.db import per_dialect
from storage.photo import customers
from storage.photo.models import Verification as VerificationRow
from topics.photo import Review, Verdict, Verification
from wire import timestamps
from wire.signed_urls import SignedUrls

VERIFICATIONS = cast(Table, VerificationRow.__table__)
OPEN_STATES = ("pending",)


class CapReached(Exception):
    """The customer's monthly cap is used up: nothing was stored or counted."""


_INSERT = per_dialect(lambda insert_: insert_(VERIFICATIONS).on_conflict_do_nothing().returning(VERIFICATIONS.c.id))
_LOAD = select(VERIFICATIONS).where(VERIFICATIONS.c.id.in_(bindparam("ids", expanding=True)))


def accept(connection: Connection, row: dict[str, Any], monthly_cap: int | None) -> bool:
    """Insert a new `pending` verification and, for a live key (`monthly_cap` given), count it against the month in
    the same transaction. False when the idempotency key is taken (nothing counted); CapReached when counting it
    would pass the cap (nothing stored)."""
    if not connection.execute(_INSERT[connection.dialect.name], row).first():
        return False
    month = customers.month_of(row["created_at"])
    if monthly_cap is not None and not customers.charge(connection, row["customer_id"], month, monthly_cap):
        raise CapReached  # the transaction rolls back, and the insert with it
    return True


def load(connection: Connection, ids: list[str]) -> dict[str, Any]:
    return {row.id: row for row in connection.execute(_LOAD, {"ids": ids})}


_BY_KEY = select(VERIFICATIONS).where(
    VERIFICATIONS.c.customer_id == bindparam("customer_id"),
    VERIFICATIONS.c.environment == bindparam("environment"),
    VERIFICATIONS.c.idempotency_key == bindparam("key"),
)


def find_by_idempotency_key(connection: Connection, customer_id: str, environment: str, key: str) -> Row[Any] | None:
    params = {"customer_id": customer_id, "environment": environment, "key": key}
    return connection.execute(_BY_KEY, params).first()


_PENDING = update(VERIFICATIONS).where(
    VERIFICATIONS.c.id == bindparam("verification_id"), VERIFICATIONS.c.state == "pending"
)
_COMPLETE = _PENDING.values(
    state="completed",
    completed_at=bindparam("now"),
    verdict=bindparam("verdict"),
    is_compliant=bindparam("is_compliant"),
    confidence=bindparam("confidence"),
).returning(*VERIFICATIONS.c)
_FAIL = _PENDING.values(state="failed", error=bindparam("error"), completed_at=bindparam("now"), charged=False)


def complete(connection: Connection, verification_id: str, verdict: Verdict, now: datetime) -> Row[Any] | None:
    """pending -> completed with its verdict, once: the completed row, or None when a redelivered message finds it
    done (nothing changed)."""
    params = {
        "verification_id": verification_id,
        "now": now,
        "verdict": _encode(verdict),
        "is_compliant": verdict.is_compliant,
        "confidence": verdict.confidence,
    }
    return connection.execute(_COMPLETE, params).first()


def fail(connection: Connection, row: Any, error: str, now: datetime) -> bool:
    """pending -> failed (the image could not be judged), refunding its charge: failures are never billed."""
    params = {"verification_id": row.id, "error": error, "now": now}
    failed = bool(connection.execute(_FAIL, params).rowcount)
    if failed and row.charged:
        customers.refund(connection, row.customer_id, customers.month_of(row.created_at))
    return failed


def retry_failed(connection: Connection, row: Any, monthly_cap: int | None, now: datetime) -> bool:
    """A failed verification asked for again with its Idempotency-Key runs again (a 5xx is never a cached answer):
    failed -> pending, charged again for a live key. CapReached when the month's cap is used up meanwhile."""
    retried = bool(
        connection.execute(
            update(VERIFICATIONS)
            .where(VERIFICATIONS.c.id == row.id, VERIFICATIONS.c.state == "failed")
            .values(state="pending", error=None, completed_at=None, published_at=now, charged=monthly_cap is not None)
        ).rowcount
    )
    month = customers.month_of(row.created_at)
    if retried and monthly_cap is not None and not customers.charge(connection, row.customer_id, month, monthly_cap):
        raise CapReached
    return retried


def review(connection: Connection, verification_id: str, verdict: Verdict, review_: Review) -> bool:
    """A completed verification's review recorded, with the verdict it leaves (the same one, when it confirms it):
    it leaves the review queue. False when it is not (or no longer) completed."""
    return bool(
        connection.execute(
            update(VERIFICATIONS)
            .where(VERIFICATIONS.c.id == verification_id, VERIFICATIONS.c.state == "completed")
            .values(
                verdict=_encode(verdict),
                review=_encode(review_),
                is_compliant=verdict.is_compliant,
                confidence=verdict.confidence,
            )
        ).rowcount
    )


@dataclass(frozen=True, slots=True)
class Filters:
    """What a history lists: None is any."""

    state: str | None = None
    is_compliant: bool | None = None
    policy: str | None = None
    reviewed: bool | None = None


EVERY = Filters()


def history(
    connection: Connection,
    customer_id: str,
    environment: str,
    *,
    limit: int,
    before: tuple[datetime, str] | None,
    filters: Filters = EVERY,
) -> list[Row[Any]]:
    """A customer's verifications in one environment, newest first; `before` (created_at, id) is the cursor."""
    v = VERIFICATIONS.c
    statement = select(VERIFICATIONS).where(
        v.customer_id == customer_id, v.environment == environment, v.preview.is_(False)
    )
    if filters.state is not None:
        statement = statement.where(v.state == filters.state)
    if filters.is_compliant is not None:
        statement = statement.where(v.is_compliant == filters.is_compliant)
    if filters.policy is not None:
        statement = statement.where(v.policy == filters.policy)
    if filters.reviewed is not None:
        statement = statement.where(v.review.is_not(None) if filters.reviewed else v.review.is_(None))
    if before is not None:
        at, verification_id = before
        statement = statement.where((v.created_at < at) | ((v.created_at == at) & (v.id < verification_id)))
    return list(connection.execute(statement.order_by(v.created_at.desc(), v.id.desc()).limit(limit)))


def _queued(customer_id: str, environment: str) -> Any:
    v = VERIFICATIONS.c
    return (
        (v.customer_id == customer_id)
        & (v.environment == environment)
        & (v.state == "completed")
        & v.review.is_(None)
        & v.preview.is_(False)
    )


def review_queue(connection: Connection, customer_id: str, environment: str, *, limit: int) -> list[Row[Any]]:
    """The completed verifications no one has reviewed yet: the non-compliant first, then the least certain, then the
    oldest."""
    v = VERIFICATIONS.c
    statement = (
        select(VERIFICATIONS)
        .where(_queued(customer_id, environment))
        .order_by(v.is_compliant, v.confidence, v.created_at, v.id)
        .limit(limit)
    )
    return list(connection.execute(statement))


def queued(connection: Connection, customer_id: str, environment: str) -> int:
    """How many wait in the review queue."""
    statement = select(func.count()).select_from(VERIFICATIONS).where(_queued(customer_id, environment))
    return connection.execute(statement).scalar_one()


def expired_images(connection: Connection, created_before: datetime, limit: int) -> list[tuple[str, str]]:
    """(verification id, image key) of images older than the retention, oldest first."""
    rows = connection.execute(
        select(VERIFICATIONS.c.id, VERIFICATIONS.c.image_key)
        .where(VERIFICATIONS.c.created_at < created_before, VERIFICATIONS.c.image_key.is_not(None))
        .where(VERIFICATIONS.c.state != "pending")
        .order_by(VERIFICATIONS.c.created_at)
        .limit(limit)
    )
    return [(row.id, row.image_key) for row in rows]


def forget_images(connection: Connection, ids: list[str]) -> None:
    if ids:
        connection.execute(update(VERIFICATIONS).where(VERIFICATIONS.c.id.in_(ids)).values(image_key=None))


_encode = msgspec.json.Encoder().encode
decode_verdict = msgspec.json.Decoder(Verdict).decode
decode_review = msgspec.json.Decoder(Review).decode
REVIEW_FEEDBACK = {True: "A reviewer accepted this photo.", False: "A reviewer rejected this photo."}


def iso(at: datetime) -> str:
    """An instant as the photo API shows it: to the millisecond."""
    return timestamps.iso(at, "milliseconds")


def verification_of(row: Any, urls: SignedUrls) -> Verification:
    """The verification object (section 2.3) of a stored row, with a freshly signed `image_url`."""
    verdict = decode_verdict(row.verdict) if row.verdict is not None else None
    return Verification(
        id=row.id,
        status=row.state,
        is_compliant=verdict.is_compliant if verdict else None,
        confidence=verdict.confidence if verdict else None,
        policy=row.policy,
        category=verdict.category if verdict else None,
        violation_reasons=verdict.violation_reasons if verdict else [],
        feedback=verdict.feedback if verdict else None,
        image_url=urls.url(row.id) if row.image_key is not None else None,
        environment=row.environment,
        created_at=iso(row.created_at),
        completed_at=iso(row.completed_at) if row.completed_at else None,
        checks=verdict.checks if verdict else [],
        metadata=msgspec.json.decode(row.metadata_json) if row.metadata_json is not None else None,
        review=decode_review(row.review) if row.review is not None else None,
    )


def reviewed(verdict: Verdict, is_compliant: bool) -> Verdict:
    """A reviewer's verdict replaces the machine's: certain, and explained by the review itself."""
    return Verdict(
        is_compliant=is_compliant,
        confidence=1.0,
        category="compliant" if is_compliant else "rejected_by_review",
        violation_reasons=[] if is_compliant else ["rejected_by_review"],
        feedback=REVIEW_FEEDBACK[is_compliant],
        checks=verdict.checks,
    )
