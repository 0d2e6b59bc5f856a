"""Self-inspection sessions (docs/photo.md, "Self-inspection"): a key makes one for a recipient (a policy, a reference,
metadata, an expiry) and gets its single-use link; the recipient previews photos (at most PREVIEWS, never billed) and
submits one, which runs the normal verify and fires `inspection.submitted` with the verification; the account can
read, list and cancel them. The link's token is stored as its SHA-256 only."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec

from operations.common.changes import announce
from operations.common.errors import Conflict, Invalid, NotFound, StaleCursor
from operations.common.pages import Page
from operations.photo.account import Account, Photo
from storage.common.webhooks.events import record_event
from storage.photo import inspections, verifications
from storage.photo.verifications import iso
from topics.photo import POLICIES, WEBHOOKS, Inspection, Verification
from wire.ids import new_id
from wire.tokens import digest, opaque

PATH = "/inspect"
"""Where a recipient's link leads: `<public URL>/inspect/<token>`."""
DEFAULT_LIFETIME = timedelta(days=7)
LONGEST = timedelta(days=30)
PREVIEWS = 20
"""Previews one inspection may ask for: they are judged like any photo, for free."""
MAX_METADATA_BYTES = 16 * 1024
STATES = {"submitted": "was submitted already", "cancelled": "was cancelled", "expired": "has expired"}


def status_of(row: Any, now: datetime) -> str:
    """What an inspection is now: an open one past its expiry is expired."""
    return "expired" if row.status == "open" and row.expires_at <= now else row.status


def inspection_of(row: Any, now: datetime, verification: Verification | None = None) -> Inspection:
    return Inspection(
        id=row.id,
        status=status_of(row, now),  # type: ignore[arg-type]
        policy=row.policy,
        reference=row.reference,
        metadata=msgspec.json.decode(row.metadata_json) if row.metadata_json is not None else None,
        environment=row.environment,
        created_at=iso(row.created_at),
        expires_at=iso(row.expires_at),
        submitted_at=iso(row.submitted_at) if row.submitted_at else None,
        cancelled_at=iso(row.cancelled_at) if row.cancelled_at else None,
        verification=verification,
    )


async def create(
    photo: Photo,
    account: Account,
    key_id: str,
    *,
    policy: str,
    reference: str | None,
    metadata: dict[str, Any] | None,
    expires_in_s: int | None,
    now: datetime,
) -> tuple[Inspection, str]:
    """A new open inspection and its link, which is shown this once."""
    if policy not in POLICIES:
        raise Invalid(f"Unknown policy {policy!r}: use one of {', '.join(POLICIES)}")
    lifetime = DEFAULT_LIFETIME if expires_in_s is None else timedelta(seconds=expires_in_s)
    if not timedelta(minutes=5) <= lifetime <= LONGEST:
        raise Invalid("expires_in must be between 300 seconds and 30 days (2592000 seconds)")
    encoded = msgspec.json.encode(metadata) if metadata is not None else None
    if encoded is not None and len(encoded) > MAX_METADATA_BYTES:
        raise Invalid(f"metadata must encode to at most {MAX_METADATA_BYTES} bytes")
    token, inspection_id = opaque("inspect", "pc"), new_id("ins")
    row = {
        "id": inspection_id,
        "customer_id": account.customer_id,
        "environment": account.environment,
        "key_id": key_id,
        "policy": policy,
        "reference": reference,
        "metadata_json": encoded,
        "token_hash": digest(token),
        "created_at": now,
        "expires_at": now + lifetime,
    }
    await photo.db.write(inspections.create, row)
    made = await photo.db.read(inspections.load, inspection_id)
    return inspection_of(made, now), f"{photo.public_url.rstrip('/')}{PATH}/{token}"


async def own(photo: Photo, account: Account, inspection_id: str) -> Any:
    row = await photo.db.read(inspections.load, inspection_id)
    if row is None or row.customer_id != account.customer_id or row.environment != account.environment:
        raise NotFound("No inspection with that id on this account")
    return row


async def shown(photo: Photo, row: Any, now: datetime) -> Inspection:
    """The inspection with its verification, once submitted."""
    verification = None
    if row.verification_id is not None:
        found = (await photo.db.read(verifications.load, [row.verification_id])).get(row.verification_id)
        verification = verifications.verification_of(found, photo.urls) if found is not None else None
    return inspection_of(row, now, verification)


async def listed(
    photo: Photo, account: Account, *, limit: int, starting_after: str | None, now: datetime
) -> Page[Inspection]:
    before = None
    if starting_after is not None:
        try:
            cursor = await own(photo, account, starting_after)
        except NotFound:
            raise StaleCursor("starting_after names no inspection on this account") from None
        before = (cursor.created_at, cursor.id)
    rows = await photo.db.read(
        inspections.listed, account.customer_id, account.environment, limit=limit + 1, before=before
    )
    return Page([await shown(photo, row, now) for row in rows[:limit]], len(rows) > limit)


async def cancel(photo: Photo, account: Account, inspection_id: str, now: datetime) -> Inspection:
    """An open inspection cancelled: its link says so and takes nothing more."""
    row = await own(photo, account, inspection_id)
    if not await photo.db.write(inspections.cancel, row.id, now):
        raise Conflict(f"Only an open inspection can be cancelled: this one {STATES[status_of(row, now)]}")
    return await shown(photo, await own(photo, account, inspection_id), now)


async def opened(photo: Photo, token: str, now: datetime) -> Any:
    """The open inspection a recipient's link names; NotFound for no such link, Conflict for one no longer open."""
    row = await photo.db.read(inspections.by_token, digest(token)) if token else None
    if row is None:
        raise NotFound("This link is unknown: check that you opened the whole link you were sent")
    state = status_of(row, now)
    if state != "open":
        raise Conflict(f"This inspection {STATES[state]}: nothing more can be sent with this link")
    return row


async def may_preview(photo: Photo, row: Any, now: datetime) -> None:
    if not await photo.db.write(inspections.count_preview, row.id, now, PREVIEWS):
        raise Conflict(f"This inspection has had its {PREVIEWS} previews: submit the photo you have")


async def submitted(photo: Photo, row: Any, verification: Verification, now: datetime) -> Inspection:
    """The recipient's photo, verified, recorded as the inspection's submission with its `inspection.submitted`
    event in one unit; once (a second submission that reached its verdict too changes nothing more)."""

    def store(connection: Any) -> tuple[str | None, Inspection] | None:
        if not inspections.submit(connection, row.id, verification.id, now):
            return None
        inspection = inspection_of(inspections.load(connection, row.id), now, verification)
        data = msgspec.to_builtins(inspection)
        return record_event(connection, WEBHOOKS, row.customer_id, "inspection.submitted", data), inspection

    stored = await photo.db.write(store)
    if stored is None:
        return await shown(photo, await photo.db.read(inspections.load, row.id), now)
    event_id, inspection = stored
    if event_id is not None:
        await announce(photo.publish_event, row.customer_id, [event_id])
    return inspection
