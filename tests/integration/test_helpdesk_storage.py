"""Helpdesk identity storage on SQLite and PostgreSQL: users made by their first sign-in, refresh-token rotation with
reuse revoking the whole session, single-use expiring links, kept mail. Races are run for real: of two requests on
one token, exactly one wins."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Connection

from storage.common import mail
from storage.common.db import Database
from storage.helpdesk import accounts
from wire.tokens import digest, opaque

LINK_LIFETIME = timedelta(minutes=15)
REFRESH = timedelta(days=30)
GRACE = timedelta(seconds=10)


def address() -> str:
    return f"Person.{uuid.uuid4().hex[:10]}@Example.COM"


def link(token: str, email: str, redirect_to: str, now: datetime) -> Callable[[Connection], None]:
    """A unit of work storing a sign-in link made `now`."""
    return functools.partial(
        mail.create_link,
        service="helpdesk",
        token_hash=digest(token),
        purpose="sign_in",
        email=email,
        redirect_to=redirect_to,
        now=now,
        lifetime=LINK_LIFETIME,
    )


async def signed_in(db: Database) -> accounts.UserRecord:
    return await db.write(accounts.signed_in_by_email, address(), datetime.now(UTC))


async def test_a_first_sign_in_makes_a_verified_user_and_a_second_finds_the_same_one(db: Database) -> None:
    email = address()
    first = await db.write(accounts.signed_in_by_email, email, datetime.now(UTC))
    again = await db.write(accounts.signed_in_by_email, email.upper(), datetime.now(UTC))
    assert first == again
    assert first.email == email.lower()
    assert first.email_verified
    assert (first.organization_id, first.role, first.password_hash) == (None, None, None)
    assert await db.read(accounts.user_by_email, f"  {email}  ") == first


async def test_rotation_makes_the_successor_current_and_a_reused_token_ends_the_session(db: Database) -> None:
    user = await signed_in(db)
    first, second, third = opaque("rt"), opaque("rt"), opaque("rt")
    now = datetime.now(UTC)
    session = await db.write(accounts.start_session, user.id, digest(first), now)
    rotated = await db.write(accounts.rotate, digest(first), digest(second), now, lifetime=REFRESH, grace=GRACE)
    assert rotated == accounts.Rotation("rotated", session, user.id)
    assert set(await db.read(accounts.alive, [session])) == {session}

    at_once = await db.write(accounts.rotate, digest(first), digest(third), now, lifetime=REFRESH, grace=GRACE)
    assert at_once == accounts.Rotation("concurrent", session, user.id)  # sent together with the first: let through
    later = now + GRACE + timedelta(seconds=1)  # the old one again, later: a stolen copy
    reused = await db.write(accounts.rotate, digest(first), digest(third), later, lifetime=REFRESH, grace=GRACE)
    assert reused == accounts.Rotation("reused", session, user.id)
    assert set(await db.read(accounts.alive, [session])) == set()
    after = await db.write(accounts.rotate, digest(second), digest(third), later, lifetime=REFRESH, grace=GRACE)
    assert after.outcome == "refused"


async def test_requests_sent_together_with_one_token_rotate_it_once_and_keep_the_session(db: Database) -> None:
    user = await signed_in(db)
    token = opaque("rt")
    now = datetime.now(UTC)
    session = await db.write(accounts.start_session, user.id, digest(token), now)
    outcomes = await asyncio.gather(
        *(
            db.write(accounts.rotate, digest(token), digest(opaque("rt")), now, lifetime=REFRESH, grace=GRACE)
            for _ in range(5)
        )
    )
    kinds = sorted(rotation.outcome for rotation in outcomes)
    assert kinds == ["concurrent"] * 4 + ["rotated"]
    assert set(await db.read(accounts.alive, [session])) == {session}


async def test_an_unknown_token_is_refused_and_a_revoked_session_stays_over(db: Database) -> None:
    user = await signed_in(db)
    token = opaque("rt")
    now = datetime.now(UTC)
    session = await db.write(accounts.start_session, user.id, digest(token), now)
    other = await db.write(accounts.start_session, user.id, digest(opaque("rt")), now)
    assert (
        await db.write(accounts.rotate, digest(opaque("rt")), digest(opaque("rt")), now, lifetime=REFRESH, grace=GRACE)
    ).outcome == "refused"
    assert await db.write(accounts.revoke, session, "sign_out", now)
    assert not await db.write(accounts.revoke, session, "sign_out", now)
    assert (
        await db.write(accounts.rotate, digest(token), digest(opaque("rt")), now, lifetime=REFRESH, grace=GRACE)
    ).outcome == "refused"
    assert set(await db.read(accounts.alive, [session, other, str(uuid.uuid4())])) == {other}
    assert await db.read(accounts.alive, []) == {}


async def test_a_link_works_once_for_its_purpose_until_it_expires(db: Database) -> None:
    email = address()
    now = datetime.now(UTC)
    token, expired = opaque("link"), opaque("link")
    await db.write(link(token, email, "/tickets", now))
    await db.write(link(expired, email, "/", now - LINK_LIFETIME))
    assert await db.write(mail.use_link, "helpdesk", digest(token), "reset", now) is None  # another purpose
    assert await db.write(mail.use_link, "photo", digest(token), "sign_in", now) is None  # another service's
    used = await db.write(mail.use_link, "helpdesk", digest(token), "sign_in", now)
    assert used == mail.LinkRecord("sign_in", email.lower(), "/tickets")
    assert await db.write(mail.use_link, "helpdesk", digest(token), "sign_in", now) is None  # once
    assert await db.write(mail.use_link, "helpdesk", digest(expired), "sign_in", now) is None
    assert await db.write(mail.use_link, "helpdesk", digest(opaque("link")), "sign_in", now) is None


async def test_a_link_clicked_twice_at_once_signs_in_once(db: Database) -> None:
    token = opaque("link")
    now = datetime.now(UTC)
    await db.write(link(token, address(), "/", now))
    uses = await asyncio.gather(*(db.write(mail.use_link, "helpdesk", digest(token), "sign_in", now) for _ in range(5)))
    assert sum(use is not None for use in uses) == 1


async def test_kept_mail_is_listed_newest_first_per_recipient(db: Database) -> None:
    to, other = address(), address()
    start = datetime.now(UTC)
    for minute, (recipient, subject) in enumerate([(to, "first"), (other, "else"), (to, "second")]):
        at = start + timedelta(minutes=minute)
        await db.write(mail.keep_mail, "helpdesk", recipient, subject=subject, body=f"body of {subject}", now=at)
    await db.write(mail.keep_mail, "photo", to, subject="photo's", body="another service's", now=start)
    mails = await db.read(mail.kept_mails, "helpdesk", to.upper())
    assert [(kept.recipient, kept.subject) for kept in mails] == [(to.lower(), "second"), (to.lower(), "first")]
    everyone = await db.read(mail.kept_mails, "helpdesk", None, 2)
    assert [kept.subject for kept in everyone][:1] == ["second"]
    assert [kept.subject for kept in await db.read(mail.kept_mails, "photo", to)] == ["photo's"]


async def test_a_refresh_token_older_than_its_lifetime_is_refused(db: Database) -> None:
    user = await signed_in(db)
    token = opaque("rt")
    issued = datetime.now(UTC)
    await db.write(accounts.start_session, user.id, digest(token), issued)
    late = await db.write(
        accounts.rotate, digest(token), digest(opaque("rt")), issued + REFRESH, lifetime=REFRESH, grace=GRACE
    )
    assert late.outcome == "refused"
