"""Workspace signup (`auth.completeSignup`): the first organization of a verified user, made atomically and once.

One transaction inserts the organization, claims the user with a conditional update (`organization_id IS NULL`) and
writes the user `created` event. A call that finds the user claimed by a racing one is undone whole (`Claimed`) and
answers with the winner's workspace; a slug taken by a racing insert undoes it too, and it is tried again. So 20
concurrent calls make one workspace and give one answer. No savepoint is used: SQLite's driver would commit at the
release of the outermost one.

A paid plan's workspace is made `incomplete` (`billing_status`); its payment provider's customer is recorded once
(`record_billing_customer`, a conditional update: of two racing calls, the first's stays) and reused by every later
checkout. The payment provider's events then move the billing state (`change_billing`: active, past_due, canceled)
and the plan (the subscription's price, as the payment provider's customer portal changes it), each event only if it
is newer than the one that set the state."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from slugify import slugify
from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from storage.common.db import Database
from storage.helpdesk import events
from storage.helpdesk.accounts import USERS, UserRecord, user_by_id
from storage.helpdesk.models import Organization
from wire.ids import new_uuid

ORGANIZATIONS = cast(Table, Organization.__table__)
SLUG_LENGTH = 48
SLUG_ATTEMPTS = 5
"""A workspace's slug is its name's; taken, the name's with a random suffix; after this many tries, CONFLICT."""
FIRST_ROLE = "admin"
RACES = 3
"""How many times a signup that lost a slug to a racing insert is tried again before it is CONFLICT."""
FREE_PLAN = "free"
PAID_PLANS = ("pro", "business")
BILLING_NONE = "none"
BILLING_INCOMPLETE = "incomplete"
"""A paid plan whose checkout has not completed: `auth.completeSignup` resumes it."""
BILLING_ACTIVE = "active"
BILLING_PAST_DUE = "past_due"
"""A renewal's payment failed: the provider retries it."""
BILLING_CANCELED = "canceled"
BILLING_STATUSES = (BILLING_NONE, BILLING_INCOMPLETE, BILLING_ACTIVE, BILLING_PAST_DUE, BILLING_CANCELED)


class NotVerified(Exception):
    """The user has no verified address: no workspace (BAD_REQUEST)."""


class NoSlug(Exception):
    """No free slug was found within SLUG_ATTEMPTS (CONFLICT)."""


@dataclass(frozen=True, slots=True)
class Workspace:
    organization_id: str
    name: str
    slug: str
    plan: str
    user: UserRecord
    created: bool
    """False when the user's workspace existed already (a repeated or racing call)."""
    billing_status: str = BILLING_NONE
    """none (free plan) | incomplete (a paid plan whose checkout has not completed) | active | past_due | canceled"""
    billing_customer_id: str | None = None
    """The payment provider's customer, once made."""


def slug_candidates(name: str) -> list[str]:
    """The slugs to try for an organization called `name`, in order."""
    base = slugify(name, max_length=SLUG_LENGTH, word_boundary=True) or "workspace"
    return [base] + [f"{base[: SLUG_LENGTH - 7]}-{secrets.token_hex(3)}" for _ in range(SLUG_ATTEMPTS - 1)]


class Claimed(Exception):
    """A racing call made the user's workspace first; this transaction is undone."""


async def sign_up(
    db: Database,
    user_id: str,
    *,
    name: str,
    organization_name: str,
    plan: str,
    now: datetime,
    slugs: Callable[[str], list[str]] = slug_candidates,
) -> Workspace:
    """The user's workspace, made now when they have none; raises NotVerified, NoSlug, or LookupError (no user).
    `slugs` gives the slugs to try for a name, in order."""
    for _ in range(RACES):
        try:
            return await db.write(
                complete_signup,
                user_id,
                name=name,
                organization_name=organization_name,
                plan=plan,
                now=now,
                slugs=slugs,
            )
        except Claimed:
            workspace = await db.read(existing, user_id)
            assert workspace is not None
            return workspace
        except IntegrityError:
            continue  # a racing insert took the slug between our look and our insert
    raise NoSlug(organization_name)


def complete_signup(
    connection: Connection,
    user_id: str,
    *,
    name: str,
    organization_name: str,
    plan: str,
    now: datetime,
    slugs: Callable[[str], list[str]],
) -> Workspace:
    """One attempt, as one transaction (see `sign_up`): raises Claimed or IntegrityError when a racing call won."""
    user = user_by_id(connection, user_id)
    if user is None:
        raise LookupError(f"no user {user_id}")
    if user.organization_id is not None:
        return _existing(connection, user)
    if not user.email_verified:
        raise NotVerified(user_id)
    candidates = slugs(organization_name)
    taken = set(connection.scalars(select(ORGANIZATIONS.c.slug).where(ORGANIZATIONS.c.slug.in_(candidates))))
    slug = next((candidate for candidate in candidates if candidate not in taken), None)
    if slug is None:
        raise NoSlug(organization_name)
    organization_id = new_uuid()
    billing_status = BILLING_NONE if plan == FREE_PLAN else BILLING_INCOMPLETE
    connection.execute(
        insert(ORGANIZATIONS).values(
            id=organization_id,
            name=organization_name,
            slug=slug,
            plan=plan,
            billing_status=billing_status,
            created_at=now,
        )
    )
    claimed = connection.execute(
        update(USERS)
        .where(USERS.c.id == user_id, USERS.c.organization_id.is_(None))
        .values(organization_id=organization_id, role=FIRST_ROLE, name=name, updated_at=now)
    )
    if claimed.rowcount != 1:
        raise Claimed(user_id)
    user = user_by_id(connection, user_id)
    assert user is not None
    created = events.row(
        organization_id,
        ("user", user_id),
        "created",
        {"email": user.email, "role": FIRST_ROLE},
        actor_id=user_id,
        now=now,
    )
    events.record_rows(connection, [created])
    return Workspace(organization_id, organization_name, slug, plan, user, created=True, billing_status=billing_status)


def existing(connection: Connection, user_id: str) -> Workspace | None:
    """The user's workspace, when they have one."""
    user = user_by_id(connection, user_id)
    return _existing(connection, user) if user is not None and user.organization_id is not None else None


def _existing(connection: Connection, user: UserRecord) -> Workspace:
    row = connection.execute(select(ORGANIZATIONS).where(ORGANIZATIONS.c.id == user.organization_id)).one()
    return Workspace(
        row.id,
        row.name,
        row.slug,
        row.plan,
        user,
        created=False,
        billing_status=row.billing_status,
        billing_customer_id=row.billing_customer_id,
    )


def record_billing_customer(connection: Connection, organization_id: str, customer_id: str) -> str:
    """Stores the organization's payment-provider customer unless one is stored already; answers the stored one (of
    two racing calls, the first's). Raises LookupError when there is no such organization."""
    connection.execute(
        update(ORGANIZATIONS)
        .where(ORGANIZATIONS.c.id == organization_id, ORGANIZATIONS.c.billing_customer_id.is_(None))
        .values(billing_customer_id=customer_id)
    )
    stored = connection.execute(
        select(ORGANIZATIONS.c.billing_customer_id).where(ORGANIZATIONS.c.id == organization_id)
    ).one_or_none()
    if stored is None or stored.billing_customer_id is None:
        raise LookupError(f"no organization {organization_id}")
    return str(stored.billing_customer_id)


@dataclass(frozen=True, slots=True)
class OrganizationRecord:
    id: str
    name: str
    slug: str
    plan: str
    billing_status: str
    created_at: datetime
    billing_customer_id: str | None = None
    """The payment provider's customer, once a checkout made it."""


def _record(r: Any) -> OrganizationRecord:
    return OrganizationRecord(r.id, r.name, r.slug, r.plan, r.billing_status, r.created_at, r.billing_customer_id)


def organization(connection: Connection, organization_id: str) -> OrganizationRecord | None:
    r = connection.execute(select(ORGANIZATIONS).where(ORGANIZATIONS.c.id == organization_id)).first()
    return _record(r) if r else None


def rename(connection: Connection, organization_id: str, name: str) -> OrganizationRecord | None:
    """The organization under its new name (its address, the slug, stays); None when there is no such one."""
    connection.execute(update(ORGANIZATIONS).where(ORGANIZATIONS.c.id == organization_id).values(name=name))
    return organization(connection, organization_id)


def organizations(connection: Connection) -> list[OrganizationRecord]:
    """Every organization, oldest first (for operators)."""
    rows = connection.execute(select(ORGANIZATIONS).order_by(ORGANIZATIONS.c.created_at, ORGANIZATIONS.c.id))
    return [_record(r) for r in rows]


# The payment provider's events (processors/helpdesk/inbound/payments.py) --------------------------------------------

PLATFORM_PAYMENTS_CHANNEL = "platform-payments"
"""The channel id the platform's own billing events are stored under (`/api/webhooks/payments`): they come through no
organization's channel, but through the platform's Stripe account."""
NO_ORGANIZATION = "platform"
"""The organization id of a billing event that names no organization the helpdesk knows."""

_BY_ID = select(ORGANIZATIONS.c.id).where(ORGANIZATIONS.c.id == bindparam("organization_id"))
_BY_BILLING_CUSTOMER = select(ORGANIZATIONS.c.id).where(ORGANIZATIONS.c.billing_customer_id == bindparam("customer"))


def billing_organization(connection: Connection, organization_id: str | None, customer_id: str | None) -> str | None:
    """The organization a payment event concerns: the one it names (a checkout's `client_reference_id`, metadata
    `organization_id`) if it exists, else the one whose provider customer it is; None when neither is known."""
    if organization_id:
        found = connection.execute(_BY_ID, {"organization_id": organization_id}).scalar_one_or_none()
        if found is not None:
            return str(found)
    if customer_id:
        found = connection.execute(_BY_BILLING_CUSTOMER, {"customer": customer_id}).scalars().first()
        if found is not None:
            return str(found)
    return None


@dataclass(frozen=True, slots=True)
class BillingChange:
    """What a payment event did to its organization's billing state."""

    old_status: str
    new_status: str
    applied: bool
    """False: the event was older than the one that set the state (or would move it back to incomplete)."""
    old_plan: str = ""
    new_plan: str = ""


def change_billing(
    connection: Connection,
    organization_id: str,
    status: str,
    *,
    event_at: datetime,
    customer_id: str | None,
    reason: str,
    now: datetime,
    plan: str | None = None,
) -> BillingChange | None:
    """Set the organization's billing state (and, when the event names one, its paid `plan`) from a payment event
    that happened at `event_at`, unless a later event set it already, or it would move it to `incomplete` (only
    signup makes a workspace incomplete); record the provider customer if none is stored; and write the organization
    `billing_changed` activity event (`{old_status, new_status, reason}`) when the state changes, and `plan_changed`
    (`{old_plan, new_plan, reason}`) when the plan does. None when there is no such organization."""
    if status not in BILLING_STATUSES:
        raise ValueError(f"{status!r} is not a billing status")
    if plan is not None and plan not in PAID_PLANS:
        raise ValueError(f"{plan!r} is not a paid plan")
    row = connection.execute(select(ORGANIZATIONS).where(ORGANIZATIONS.c.id == organization_id)).one_or_none()
    if row is None:
        return None
    if customer_id and row.billing_customer_id is None:
        record_billing_customer(connection, organization_id, customer_id)
    older = row.billing_event_at is not None and event_at < row.billing_event_at
    backwards = status == BILLING_INCOMPLETE and row.billing_status != BILLING_INCOMPLETE
    if older or backwards:
        return BillingChange(row.billing_status, row.billing_status, False, row.plan, row.plan)
    new_plan = plan or row.plan
    connection.execute(
        update(ORGANIZATIONS)
        .where(ORGANIZATIONS.c.id == organization_id)
        .values(billing_status=status, billing_event_at=event_at, plan=new_plan)
    )
    changes = []
    if status != row.billing_status:
        data = {"old_status": row.billing_status, "new_status": status, "reason": reason}
        changes.append(("billing_changed", data))
    if new_plan != row.plan:
        changes.append(("plan_changed", {"old_plan": row.plan, "new_plan": new_plan, "reason": reason}))
    events.record_rows(
        connection,
        [
            events.row(organization_id, ("organization", organization_id), kind, data, actor_id=None, now=now)
            for kind, data in changes
        ],
    )
    return BillingChange(row.billing_status, status, applied=True, old_plan=row.plan, new_plan=new_plan)
