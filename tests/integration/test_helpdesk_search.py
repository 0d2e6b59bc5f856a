"""Helpdesk search (storage/helpdesk/search.py) on SQLite and PostgreSQL, as a user sees it: the rows written by the
storage functions that write them are found by their words, ranked, filtered and paged; an edit, an erasure or a
delete shows at once; no query is read as syntax; no other organization's row is ever a hit; the migration fills the
index of rows already there and goes back cleanly.

Each test works in organizations of its own and searches for words made up for it, so the tests are independent of
each other and of what else the session's database holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import delete, insert, update
from sqlalchemy.engine import Connection

from storage.common.db import MIGRATIONS, Database, create_engine, migrate, sqlite_url
from storage.helpdesk import customers, orders, search, tickets
from storage.helpdesk.accounts import USERS
from storage.helpdesk.workspaces import ORGANIZATIONS
from storage.tables import METADATA, modelled
from tests.conftest import PG_URL, fresh_postgres_database

Found = list[tuple[str, str]]
"""(kind, id) of each hit, in order: the conversation's id for a conversation, the customer's for a customer."""


def word() -> str:
    """A word no other row holds: letters only, so it is one word to both databases."""
    return "zq" + "".join(chr(ord("a") + int(digit, 16) % 26) for digit in uuid.uuid4().hex[:10])


async def organization(db: Database) -> str:
    organization_id = str(uuid.uuid4())
    row = {"id": organization_id, "name": "Acme", "slug": f"acme-{organization_id[:8]}", "plan": "free"}
    await db.write(lambda c: c.execute(insert(ORGANIZATIONS).values(created_at=datetime.now(UTC), **row)))
    return organization_id


async def agent(db: Database, organization_id: str) -> str:
    user_id, now = str(uuid.uuid4()), datetime.now(UTC)
    row = {"id": user_id, "email": f"agent-{user_id}@example.com", "email_verified": True, "name": "Agent"}
    row |= {"organization_id": organization_id, "role": "agent", "preferences": {}, "created_at": now}
    await db.write(lambda c: c.execute(insert(USERS).values(updated_at=now, **row)))
    return user_id


async def ticket(
    db: Database,
    organization_id: str,
    subject: str,
    *,
    message: str | None = None,
    email: str | None = None,
    name: str | None = None,
    at: datetime | None = None,
    **given: Any,
) -> tickets.TicketRecord:
    return await db.write(
        tickets.create,
        organization_id,
        subject=subject,
        customer_email=email or f"{uuid.uuid4().hex[:12]}@example.com",
        customer_name=name,
        message=message,
        actor_id=None,
        now=at or datetime.now(UTC),
        recorded=[],
        **given,
    )


async def reply(db: Database, made: tickets.TicketRecord, body: str, *, internal: bool = False) -> str:
    conversation = await db.write(
        tickets.add_conversation,
        made,
        author_type="agent",
        author_id=None,
        body=body,
        internal=internal,
        now=datetime.now(UTC),
        recorded=[],
    )
    return conversation.id


async def hits(db: Database, organization_id: str, query: str, **given: Any) -> list[search.Hit]:
    found, _more = await db.read(search.search, organization_id, query, **given)
    return found


async def found(db: Database, organization_id: str, query: str, **given: Any) -> Found:
    return [(hit.kind, _id(hit)) for hit in await hits(db, organization_id, query, **given)]


def _id(hit: search.Hit) -> str:
    named = {"ticket": hit.ticket_id, "conversation": hit.conversation_id, "customer": hit.customer_id}[hit.kind]
    assert named is not None
    return named


# ------------------------------------------------------------------------------------------------ words


async def test_each_word_finds_the_words_it_begins_and_every_word_must_match(db: Database) -> None:
    organization_id, teapot = await organization(db), word()
    made = await ticket(db, organization_id, f"Refund for a broken {teapot}")
    second = await ticket(db, organization_id, f"Where is my {teapot}? It has not arrived")

    assert await found(db, organization_id, teapot) == [("ticket", made.id), ("ticket", second.id)]  # shorter first
    assert await found(db, organization_id, f"{teapot} ref") == [("ticket", made.id)]  # 3 letters: a prefix
    assert await found(db, organization_id, f"REFUND {teapot[:3].upper()}") == [("ticket", made.id)]
    assert await found(db, organization_id, f"{teapot} broke arriv") == []  # every word must match
    assert await found(db, organization_id, f"{teapot} re") == []  # 2 letters: a whole word only
    assert await found(db, organization_id, f"{teapot} is") == [("ticket", second.id)]
    assert await found(db, organization_id, f"{teapot} a is") == []  # "a" is in the first, "is" in the second


async def test_a_reply_a_note_and_a_customer_are_found_by_their_words(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    made = await ticket(
        db,
        organization_id,
        "Order question",
        message=f"Hello, the {marker} I ordered is missing",
        email=f"alice.{marker}@example.com",
        name="Alice Liddell",
    )
    answer = await reply(db, made, f"We sent another {marker} today")
    note = await reply(db, made, f"Courier lost the {marker} again", internal=True)
    phoned = await db.write(
        customers.create,
        organization_id,
        email=None,
        name=f"Bob {marker}",
        phone="+1 (415) 555-0100",
        now=datetime.now(UTC),
        recorded=[],
    )

    everything = await found(db, organization_id, marker)
    first_message = next(id_ for kind, id_ in everything if kind == "conversation" and id_ not in (answer, note))
    assert sorted(everything) == sorted(
        [
            ("conversation", first_message),
            ("conversation", answer),
            ("conversation", note),
            ("customer", made.customer_id),  # by the address
            ("customer", phoned.id),  # by the name
        ]
    )
    assert await found(db, organization_id, f"courier {marker}") == [("conversation", note)]
    conversation_hit = (await hits(db, organization_id, f"courier {marker}"))[0]
    assert conversation_hit.ticket_id == made.id
    assert await found(db, organization_id, f"alice.{marker}@exa") == [("customer", made.customer_id)]
    assert await found(db, organization_id, f"alice liddell {marker}") == [("customer", made.customer_id)]
    assert await found(db, organization_id, f"{marker} 555-0100") == [("customer", phoned.id)]
    assert await found(db, organization_id, marker, kinds=["customer"]) == [
        ("customer", phoned.id),
        ("customer", made.customer_id),
    ]


async def test_words_are_letters_and_digits_of_any_script_in_any_case(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    made = await ticket(db, organization_id, f"Café Zoë {marker}-7 東京 Ñandú")
    for query in ("CAFÉ", "caf", "zoë", "7", "東京", "ñandú", "ÑAN"):
        assert await found(db, organization_id, f"{query} {marker}") == [("ticket", made.id)], query
    # Accents are kept: "cafe" is another word than "café", on both databases alike.
    assert await found(db, organization_id, f"cafe {marker}") == []


# ------------------------------------------------------------------------------------------------ ranking


async def test_hits_are_ranked_by_relevance_then_newest_first(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    start = datetime.now(UTC) - timedelta(hours=1)
    # Filler rows make the word rare in the index, as a searched word is.
    for index in range(6):
        await ticket(db, organization_id, f"Unrelated subject number {index}", at=start)
    long_one = await ticket(db, organization_id, f"{marker} is in a long subject with many other words", at=start)
    short_one = await ticket(db, organization_id, f"{marker} subject", at=start)
    thrice = await ticket(db, organization_id, f"{marker} {marker} {marker} subject", at=start)
    tie_old = await ticket(db, organization_id, f"{marker} tied", at=start + timedelta(minutes=1))
    tie_new = await ticket(db, organization_id, f"{marker} tied", at=start + timedelta(minutes=2))

    ranked = await hits(db, organization_id, marker)
    assert [hit.ticket_id for hit in ranked] == [thrice.id, tie_new.id, tie_old.id, short_one.id, long_one.id]
    assert [hit.rank for hit in ranked] == sorted((hit.rank for hit in ranked), reverse=True)
    assert ranked[1].rank == ranked[2].rank


async def test_a_hit_shows_where_its_words_are(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    made = await ticket(db, organization_id, "Delivery")
    await reply(
        db,
        made,
        "Lorem ipsum dolor sit amet. " * 30 + f"The {marker}s arrived broken.\n\n\nThanks " * 3 + "Lorem ipsum. " * 30,
    )

    [hit] = await hits(db, organization_id, marker[:6])
    assert hit.snippet.startswith("…")
    assert hit.snippet.endswith("…")
    assert len(hit.snippet) <= search.SNIPPET_CHARACTERS + 2
    assert "\n" not in hit.snippet
    assert [hit.snippet[start:end] for start, end in hit.highlights] == [f"{marker}s"] * len(hit.highlights)
    assert hit.highlights


# ------------------------------------------------------------------------------------------------ filters and pages


async def test_ticket_filters_combine_with_the_words_and_leave_out_customer_hits(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    assignee = await agent(db, organization_id)
    plain = await ticket(db, organization_id, f"{marker} plain", email=f"{marker}@example.com")
    urgent = await ticket(db, organization_id, f"{marker} urgent", priority="urgent", tags=["vip", "billing"])
    assigned = await ticket(db, organization_id, f"{marker} assigned", status="pending", assignee_id=assignee)
    on_urgent = await reply(db, urgent, f"About the {marker}")

    assert await found(db, organization_id, marker, status="pending") == [("ticket", assigned.id)]
    assert await found(db, organization_id, marker, assignee_id=assignee) == [("ticket", assigned.id)]
    assert sorted(await found(db, organization_id, marker, priority="urgent")) == sorted(
        [("ticket", urgent.id), ("conversation", on_urgent)]
    )
    assert sorted(await found(db, organization_id, marker, tag="vip")) == sorted(
        [("ticket", urgent.id), ("conversation", on_urgent)]
    )
    assert await found(db, organization_id, marker, tag="vi") == []
    assert await found(db, organization_id, marker, customer_id=plain.customer_id) == [("ticket", plain.id)]
    assert await found(db, organization_id, marker, status="open", kinds=["conversation"]) == [
        ("conversation", on_urgent)
    ]
    # The customer named by the address is a hit without a filter, none with one.
    assert ("customer", plain.customer_id) in await found(db, organization_id, marker)
    assert await found(db, organization_id, marker, kinds=["customer"], status="open") == []


async def test_pages_follow_one_another_up_to_the_maximum(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    start = datetime.now(UTC) - timedelta(hours=1)
    made = [
        await ticket(db, organization_id, f"{marker} number {i}", at=start + timedelta(seconds=i)) for i in range(25)
    ]

    pages = [await db.read(search.search, organization_id, marker, limit=10, offset=offset) for offset in (0, 10, 20)]
    assert [more for _, more in pages] == [True, True, False]
    assert [len(page) for page, _ in pages] == [10, 10, 5]
    seen = [hit.ticket_id for page, _ in pages for hit in page]
    assert seen == [t.id for t in reversed(made)]  # none skipped nor repeated; equal ranks, newest first

    last, more = await db.read(search.search, organization_id, marker, limit=20, offset=search.MAX_RESULTS - 20)
    assert (last, more) == ([], False)
    beyond: list[dict[str, Any]] = [{"offset": search.MAX_RESULTS - 19, "limit": 20}, {"offset": -1}, {"limit": 0}]
    for wrong in [*beyond, {"limit": search.MAX_LIMIT + 1}]:
        with pytest.raises(search.BadQuery):
            await db.read(search.search, organization_id, marker, **wrong)
    with pytest.raises(search.BadQuery):
        await db.read(search.search, organization_id, marker, kinds=["tickets"])  # type: ignore[list-item]


# ------------------------------------------------------------------------------------------------ changes


async def test_an_edited_subject_is_found_by_its_new_words_and_not_its_old_ones(db: Database) -> None:
    organization_id, old, new = await organization(db), word(), word()
    made = await ticket(db, organization_id, f"Broken {old}")
    changed = tickets.Changes(subject=f"Broken {new}")
    await db.write(tickets.change, organization_id, made.id, changed, actor_id=None, now=datetime.now(UTC), recorded=[])
    pending = tickets.Changes(status="pending")  # a change of another column leaves the index as it was
    await db.write(tickets.change, organization_id, made.id, pending, actor_id=None, now=datetime.now(UTC), recorded=[])

    assert await found(db, organization_id, old) == []
    assert await found(db, organization_id, new) == [("ticket", made.id)]
    assert await found(db, organization_id, f"broken {new}", status="pending") == [("ticket", made.id)]


async def test_an_edited_body_and_customer_are_found_by_their_new_words_only(db: Database) -> None:
    organization_id, old, new = await organization(db), word(), word()
    made = await ticket(db, organization_id, "Hello", email=f"{old}@example.com", name=f"Old {old}")
    answer = await reply(db, made, f"The {old} is on its way")
    await db.write(
        lambda c: c.execute(
            update(tickets.CONVERSATIONS).where(tickets.CONVERSATIONS.c.id == answer).values(body=f"The {new} is here")
        )
    )
    await db.write(
        customers.update_customer,
        organization_id,
        made.customer_id,
        {"name": f"New {new}", "email": f"{new}@example.com"},
        now=datetime.now(UTC),
        recorded=[],
    )

    assert await found(db, organization_id, old) == []
    assert sorted(await found(db, organization_id, new)) == sorted(
        [("conversation", answer), ("customer", made.customer_id)]
    )


async def test_an_erased_customer_and_their_tickets_are_no_longer_found_by_what_they_said(db: Database) -> None:
    organization_id, name, said = await organization(db), word(), word()
    made = await ticket(
        db, organization_id, f"Teapot for {name}", message=f"{said}, call me", email=f"{name}@example.com", name=name
    )
    await reply(db, made, f"Hi {name}, about the {said}")
    assert len(await found(db, organization_id, name)) == 3  # the ticket, the reply, the customer

    await db.write(orders.erase, organization_id, customer_ids=[made.customer_id], now=datetime.now(UTC), recorded=[])

    assert await found(db, organization_id, name) == []
    assert await found(db, organization_id, said) == []
    assert ("ticket", made.id) in await found(db, organization_id, "redacted")
    assert ("customer", made.customer_id) in await found(db, organization_id, "redacted customer")


async def test_a_deleted_row_is_no_longer_a_hit(db: Database) -> None:
    organization_id, marker = await organization(db), word()
    made = await ticket(db, organization_id, f"{marker} subject", email=f"{marker}@example.com")
    answer = await reply(db, made, f"{marker} body")
    kept = await ticket(db, organization_id, f"{marker} kept")

    def delete_them(connection: Connection) -> None:
        connection.execute(delete(tickets.CONVERSATIONS).where(tickets.CONVERSATIONS.c.id == answer))
        connection.execute(delete(tickets.TICKETS).where(tickets.TICKETS.c.id == made.id))
        connection.execute(delete(customers.CUSTOMERS).where(customers.CUSTOMERS.c.id == made.customer_id))

    assert sorted(await found(db, organization_id, marker)) == sorted(
        [("ticket", made.id), ("conversation", answer), ("customer", made.customer_id), ("ticket", kept.id)]
    )
    await db.write(delete_them)
    assert await found(db, organization_id, marker) == [("ticket", kept.id)]


# ------------------------------------------------------------------------------------------------ isolation


@pytest.mark.parametrize(
    ("query", "finds"),
    [
        ('refund" OR "kettle', False),  # the words refund, or, kettle
        ("refund OR kettle", False),
        ("refund AND NOT kettle", False),
        ("NEAR(refund teapot, 2)", False),
        ("subject:refund", False),
        ("{subject}: refund", False),
        ("refund') OR 1=1 --", False),
        ("'refund':* | kettle", False),
        ("refund & !kettle", False),
        ("refund*", True),
        ("-refund", True),
        ("+refund", True),
        ("^refund", True),
        ('"refund teapot"', True),
        ("refund <-> teapot", True),
        ("(((refund", True),
        ("\\refund\\", True),
        ("refund\x00teapot", True),
        ("refund;teapot", True),
    ],
)
async def test_no_query_is_read_as_syntax(db: Database, query: str, finds: bool) -> None:
    """Whatever a query holds, it is its words, ANDed: either database's operators are words or nothing. A query
    that would find both tickets, were an operator obeyed, finds the first only when its words are all there."""
    organization_id, marker = await organization(db), word()
    made = await ticket(db, organization_id, f"Refund for a teapot {marker}")
    await ticket(db, organization_id, f"The kettle is cold {marker}")
    assert await found(db, organization_id, f"{query} {marker}") == ([("ticket", made.id)] if finds else [])


async def test_a_query_without_words_finds_nothing_and_too_many_words_are_refused(db: Database) -> None:
    organization_id = await organization(db)
    await ticket(db, organization_id, "Anything at all")
    for query in ("", "   ", "!!! --- ***", '"', "'", "*", "()", "🙂"):
        assert await db.read(search.search, organization_id, query) == ([], False)
    with pytest.raises(search.BadQuery):
        await db.read(search.search, organization_id, " ".join(f"w{i}" for i in range(search.MAX_WORDS + 1)))


async def test_another_organizations_rows_are_never_hits(db: Database) -> None:
    ours, theirs, marker = await organization(db), await organization(db), word()
    mine = await ticket(db, ours, f"{marker} ours", message=f"{marker} our message", email=f"{marker}@ours.example")
    other = await ticket(
        db, theirs, f"{marker} theirs", message=f"{marker} their message", email=f"{marker}@ours.example"
    )
    await reply(db, other, f"{marker} their reply")

    ours_found = await found(db, ours, marker)
    assert len(ours_found) == 3
    assert {id_ for _, id_ in ours_found} >= {mine.id, mine.customer_id}
    assert all(hit.ticket_id in (mine.id, None) for hit in await hits(db, ours, marker))
    assert len(await found(db, theirs, marker)) == 4
    assert await found(db, str(uuid.uuid4()), marker) == []


# ------------------------------------------------------------------------------------------------ migration


@asynccontextmanager
async def empty_database(like_url: str, tmp_path: Path) -> AsyncIterator[str]:
    if like_url.startswith("sqlite"):
        yield sqlite_url(tmp_path / "search.db")
        return
    async with fresh_postgres_database(PG_URL or "") as url:
        yield url


async def test_the_migration_indexes_rows_already_there_and_goes_back_cleanly(
    database_url: str, tmp_path: Path
) -> None:
    async with empty_database(database_url, tmp_path) as url:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.set_main_option("sqlalchemy.url", url)
        await asyncio.to_thread(command.upgrade, config, "0013")
        db = Database(url)
        try:
            organization_id, marker = await organization(db), word()
            made = await ticket(db, organization_id, f"Old {marker}", message=f"Older {marker}", name=f"Ann {marker}")
            await asyncio.to_thread(migrate, url)
            before = await found(db, organization_id, marker)
            await asyncio.to_thread(command.downgrade, config, "0013")
            await ticket(db, organization_id, f"Made while there was no index {marker}")
            await asyncio.to_thread(migrate, url)
            after = await found(db, organization_id, marker)
            drift = await _drift(url)
        finally:
            await db.dispose()

    assert sorted(kind for kind, _ in before) == ["conversation", "customer", "ticket"]
    assert ("ticket", made.id) in before
    assert len(after) == 4  # and the ticket made meanwhile
    assert drift == []


async def _drift(url: str) -> list[Any]:
    """How the schema differs from the models, the search index's own objects aside (storage.tables.modelled)."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(
                lambda sync: compare_metadata(
                    MigrationContext.configure(sync, opts={"include_name": modelled}), METADATA
                )
            )
    finally:
        await engine.dispose()
