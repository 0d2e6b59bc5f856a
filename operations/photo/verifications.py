"""An account's verifications: one read, the history (newest first, filtered), the review queue, the human review
(section 6: a review that changes the verdict fires `verification.reviewed`), and the month's usage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from operations.common.changes import announce
from operations.common.errors import Conflict, Invalid, NotFound, StaleCursor
from operations.common.pages import Page
from operations.photo.account import Account, Photo
from storage.common.webhooks.events import record_event
from storage.photo import customers, verifications
from storage.photo.verifications import EVERY, Filters
from topics.photo import WEBHOOKS, Review, Verification

MAX_NOTE = 1000
"""A review's note, at most (the REST body's schema says the same: gateway/photo/schemas.py ReviewRequest)."""


async def own(photo: Photo, account: Account, verification_id: str) -> Any:
    """The account's verification in its environment; anyone else's is as absent as a made-up id."""
    row = (await photo.db.read(verifications.load, [verification_id])).get(verification_id)
    if row is None or row.preview or row.customer_id != account.customer_id or row.environment != account.environment:
        raise NotFound("No verification with that id on this account")
    return row


async def history(
    photo: Photo, account: Account, *, limit: int, starting_after: str | None, filters: Filters = EVERY
) -> Page[Verification]:
    """A page of the account's verifications, newest first, after the `starting_after` one."""
    before = None
    if starting_after is not None:
        try:
            cursor = await own(photo, account, starting_after)
        except NotFound:
            raise StaleCursor("starting_after names no verification on this account") from None
        before = (cursor.created_at, cursor.id)
    rows = await photo.db.read(
        verifications.history,
        account.customer_id,
        account.environment,
        limit=limit + 1,
        before=before,
        filters=filters,
    )
    return Page([verifications.verification_of(row, photo.urls) for row in rows[:limit]], len(rows) > limit)


async def review_queue(photo: Photo, account: Account, *, limit: int) -> tuple[list[Verification], int]:
    """The verifications waiting for a review, the non-compliant and the least certain first, and how many wait."""
    rows = await photo.db.read(verifications.review_queue, account.customer_id, account.environment, limit=limit)
    waiting = await photo.db.read(verifications.queued, account.customer_id, account.environment)
    return [verifications.verification_of(row, photo.urls) for row in rows], waiting


async def review(
    photo: Photo, account: Account, verification_id: str, *, is_compliant: bool, note: str | None, now: datetime
) -> Verification:
    """A human review, recorded with its note (it leaves the review queue). One that changes the verdict makes it
    certain, keeps the original in `review`, and fires `verification.reviewed`; one that agrees changes the verdict
    in nothing and fires nothing."""
    if note is not None and len(note) > MAX_NOTE:
        raise Invalid(f"note is at most {MAX_NOTE:,} characters")
    row = await own(photo, account, verification_id)
    if row.state != "completed" or row.verdict is None:
        raise Conflict("Only a completed verification can be reviewed")
    verdict = verifications.decode_verdict(row.verdict)
    original = verifications.decode_review(row.review).original_is_compliant if row.review else verdict.is_compliant
    changes = verdict.is_compliant != is_compliant
    at = verifications.iso(now)
    given = Review(is_compliant=is_compliant, note=note, reviewed_at=at, original_is_compliant=original)
    judged = verifications.reviewed(verdict, is_compliant) if changes else verdict

    def store(connection: Any) -> tuple[str | None, Verification] | None:
        """The reviewed verification and, when its verdict changed, its event, in one transaction; None if it is no
        longer completed."""
        if not verifications.review(connection, row.id, judged, given):
            return None
        updated = verifications.verification_of(verifications.load(connection, [row.id])[row.id], photo.urls)
        if not changes:
            return None, updated
        data = msgspec.to_builtins(updated)
        return record_event(connection, WEBHOOKS, account.customer_id, "verification.reviewed", data), updated

    stored = await photo.db.write(store)
    if stored is None:
        raise Conflict("Only a completed verification can be reviewed")
    event_id, updated = stored
    if event_id is not None:  # None: unchanged, or no endpoint subscribes to it
        await announce(photo.publish_event, account.customer_id, [event_id])
    return updated


@dataclass(frozen=True, slots=True)
class Usage:
    """The month's live verifications against the plan's cap (sandbox ones never count)."""

    month: str
    used: int
    plan: str
    monthly_cap: int
    subscription_active: bool


async def usage(photo: Photo, account: Account, now: datetime) -> Usage:
    month = customers.month_of(now)
    customer = await photo.db.read(customers.customer, account.customer_id)
    if customer is None:
        raise NotFound("No such account")
    used = await photo.db.read(customers.usage, account.customer_id, month)
    return Usage(month, used, customer.plan, customer.monthly_cap, customer.subscription_active)
