"""Workspace signup storage (auth.completeSignup) on SQLite and PostgreSQL: atomic and idempotent per user under real
concurrency, the first user an admin, slugs collision-safe within bounded retries, unverified users refused."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from storage.common.db import Database
from storage.helpdesk import accounts, workspaces
from storage.helpdesk.workspaces import ORGANIZATIONS, SLUG_ATTEMPTS, Workspace


async def verified_user(db: Database) -> accounts.UserRecord:
    return await db.write(accounts.signed_in_by_email, f"{uuid.uuid4().hex[:12]}@example.com", datetime.now(UTC))


async def signup(
    db: Database,
    user_id: str,
    organization: str,
    *,
    name: str = "Ada Agent",
    slugs: Callable[[str], list[str]] = workspaces.slug_candidates,
) -> Workspace:
    return await workspaces.sign_up(
        db, user_id, name=name, organization_name=organization, plan="free", now=datetime.now(UTC), slugs=slugs
    )


def organizations_named(name: str) -> Callable[[Connection], int]:
    count = select(func.count()).select_from(ORGANIZATIONS).where(ORGANIZATIONS.c.name == name)
    return lambda connection: connection.execute(count).scalar_one()


async def test_signup_makes_one_workspace_with_its_user_as_admin(db: Database) -> None:
    user = await verified_user(db)
    name = f"Acme Support {uuid.uuid4().hex[:6]}"
    made = await signup(db, user.id, name)
    assert made.created
    assert (made.name, made.plan) == (name, "free")
    assert made.slug == name.lower().replace(" ", "-")
    assert (made.user.organization_id, made.user.role, made.user.name) == (made.organization_id, "admin", "Ada Agent")


async def test_twenty_concurrent_calls_make_one_workspace_and_give_one_answer(db: Database) -> None:
    user = await verified_user(db)
    name = f"Racing {uuid.uuid4().hex[:6]}"
    answers = await asyncio.gather(*(signup(db, user.id, name) for _ in range(20)))
    assert sum(answer.created for answer in answers) == 1
    assert len({(a.organization_id, a.slug) for a in answers}) == 1
    assert await db.read(organizations_named(name)) == 1


async def test_a_second_call_returns_the_existing_workspace_whatever_it_asks(db: Database) -> None:
    user = await verified_user(db)
    first = await signup(db, user.id, f"First {uuid.uuid4().hex[:6]}")
    again = await signup(db, user.id, "Something Else", name="Other Name")
    assert not again.created
    assert (again.organization_id, again.name, again.slug) == (first.organization_id, first.name, first.slug)
    assert again.user.name == "Ada Agent"


async def test_a_taken_slug_gets_a_suffix_and_names_need_not_be_unique(db: Database) -> None:
    name = f"Same Name {uuid.uuid4().hex[:6]}"
    one = await signup(db, (await verified_user(db)).id, name)
    two = await signup(db, (await verified_user(db)).id, name)
    assert one.name == two.name
    assert one.slug != two.slug
    assert two.slug.startswith(one.slug[:41] + "-")


async def test_when_every_slug_tried_is_taken_it_is_no_slug_and_nothing_is_written(db: Database) -> None:
    name = f"Crowded {uuid.uuid4().hex[:6]}"
    taken = [f"crowded-{uuid.uuid4().hex[:8]}" for _ in range(SLUG_ATTEMPTS)]
    now = datetime.now(UTC)
    rows = [{"id": str(uuid.uuid4()), "name": "x", "slug": slug, "plan": "free", "created_at": now} for slug in taken]
    await db.write(lambda connection: connection.execute(ORGANIZATIONS.insert(), rows))
    user = await verified_user(db)
    with pytest.raises(workspaces.NoSlug):
        await signup(db, user.id, name, slugs=lambda _: taken)
    assert (await db.read(accounts.user_by_id, user.id)).organization_id is None  # type: ignore[union-attr]
    assert await db.read(organizations_named(name)) == 0


async def test_a_user_without_a_verified_address_gets_no_workspace(db: Database) -> None:
    user = await verified_user(db)
    unverify = accounts.USERS.update().where(accounts.USERS.c.id == user.id).values(email_verified=False)
    await db.write(lambda connection: connection.execute(unverify))
    with pytest.raises(workspaces.NotVerified):
        await signup(db, user.id, "Unverified")


def test_slugs_come_from_the_name_in_ascii_with_a_fallback() -> None:
    assert workspaces.slug_candidates("Café Crème & Co.")[0] == "cafe-creme-co"
    assert workspaces.slug_candidates("---")[0] == "workspace"
    candidates = workspaces.slug_candidates("x" * 300)
    assert len(candidates) == SLUG_ATTEMPTS
    assert len(set(candidates)) == SLUG_ATTEMPTS
    assert all(len(slug) <= workspaces.SLUG_LENGTH for slug in candidates)


async def test_the_workspace_and_its_event_are_one_transaction(db: Database) -> None:
    """A signup that fails after its organization row is written leaves nothing behind, on SQLite too."""
    user = await verified_user(db)
    name = f"Undone {uuid.uuid4().hex[:6]}"

    def fails_after_the_claim(connection: Connection) -> None:
        workspaces.complete_signup(
            connection,
            user.id,
            name="x",
            organization_name=name,
            plan="free",
            now=datetime.now(UTC),
            slugs=workspaces.slug_candidates,
        )
        raise RuntimeError("the event could not be written")

    with pytest.raises(RuntimeError):
        await db.write(fails_after_the_claim)
    assert (await db.read(accounts.user_by_id, user.id)).organization_id is None  # type: ignore[union-attr]
    assert await db.read(organizations_named(name)) == 0
