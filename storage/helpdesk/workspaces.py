"""Workspace signup (`auth.completeSignup`): the first organization of a verified user, made atomically and once.

A user's workspace is made in one transaction that claims the user with a conditional update (`organization_id IS
NULL`). Of calls racing for one user, the first claim wins; every other finds the user claimed and answers with the
winner's workspace, its own organization row undone. So 20 concurrent calls make one workspace and give one answer.
The user `created` event (email, role) is written in the same transaction."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from slugify import slugify
from sqlalchemy import Table, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from storage.helpdesk import events
from storage.helpdesk.identity import USERS, UserRecord, user_by_id
from storage.helpdesk.models import Organization

ORGANIZATIONS = cast(Table, Organization.__table__)
SLUG_LENGTH = 48
SLUG_ATTEMPTS = 5
"""A workspace's slug is its name's; taken, the name's with a random suffix; after this many tries, CONFLICT."""
FIRST_ROLE = "admin"


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


def slug_candidates(name: str) -> list[str]:
    """The slugs to try for an organization called `name`, in order."""
    base = slugify(name, max_length=SLUG_LENGTH, word_boundary=True) or "workspace"
    return [base] + [f"{base[: SLUG_LENGTH - 7]}-{secrets.token_hex(3)}" for _ in range(SLUG_ATTEMPTS - 1)]


def complete_signup(
    connection: Connection,
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
    user = user_by_id(connection, user_id)
    if user is None:
        raise LookupError(f"no user {user_id}")
    if user.organization_id is not None:
        return _existing(connection, user)
    if not user.email_verified:
        raise NotVerified(user_id)
    organization_id = str(uuid.uuid4())
    claim = connection.begin_nested()  # undone when another call claimed the user first
    slug = _insert_organization(
        connection, organization_id, organization_name, plan, now=now, candidates=slugs(organization_name)
    )
    claimed = connection.execute(
        update(USERS)
        .where(USERS.c.id == user_id, USERS.c.organization_id.is_(None))
        .values(organization_id=organization_id, role=FIRST_ROLE, name=name, updated_at=now)
    )
    if claimed.rowcount != 1:
        claim.rollback()
        winner = user_by_id(connection, user_id)
        assert winner is not None
        return _existing(connection, winner)
    claim.commit()
    user = user_by_id(connection, user_id)
    assert user is not None
    events.record(
        connection,
        organization_id,
        ("user", user_id),
        "created",
        {"email": user.email, "role": FIRST_ROLE},
        actor_id=user_id,
        now=now,
    )
    return Workspace(organization_id, organization_name, slug, plan, user, created=True)


def _insert_organization(
    connection: Connection, organization_id: str, name: str, plan: str, *, now: datetime, candidates: list[str]
) -> str:
    for slug in candidates:
        attempt = connection.begin_nested()
        try:
            connection.execute(
                insert(ORGANIZATIONS).values(id=organization_id, name=name, slug=slug, plan=plan, created_at=now)
            )
        except IntegrityError:
            attempt.rollback()
            continue
        attempt.commit()
        return slug
    raise NoSlug(name)


def _existing(connection: Connection, user: UserRecord) -> Workspace:
    row = connection.execute(select(ORGANIZATIONS).where(ORGANIZATIONS.c.id == user.organization_id)).one()
    return Workspace(row.id, row.name, row.slug, row.plan, user, created=False)
