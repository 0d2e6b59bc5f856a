"""Full-text search over an organization's tickets (subject), conversations (replies' and notes' bodies) and customers
(name, email, phone): one interface over SQLite FTS5 and PostgreSQL text search (docs/helpdesk.md, "Search").

The index is the database's own: migration 0014 made it, and triggers (SQLite) or generated columns (PostgreSQL) write
it in the transaction that writes the row, so it holds what the rows hold, an edit, an erasure or a delete included.

A query is its words: runs of letters and digits; anything else separates them, so no character of a query is ever
syntax. Every word must match (AND); a word of 3 characters or more matches the words it begins ("ref" finds
"refund"), a shorter one only itself. Hits are ranked by relevance (SQLite: bm25; PostgreSQL: cover density over the
log of the text's length), ties newest first. Of each kind only the newest MAX_RESULTS matches are ranked: ranking
every match of a common word took longer than a search may (bench/README.md, "Helpdesk search"). Pages are by
offset, up to MAX_RESULTS hits."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, Select, bindparam, func, literal, literal_column, select, union_all
from sqlalchemy import column as sql_column
from sqlalchemy import table as sql_table
from sqlalchemy.engine import Connection

from storage.common.models import json_list_has
from storage.helpdesk.customers import CUSTOMERS
from storage.helpdesk.tickets import CONVERSATIONS, TICKETS

Kind = Literal["ticket", "conversation", "customer"]
KINDS: tuple[Kind, ...] = get_args(Kind)
MAX_RESULTS = 200
"""Hits a query reaches (`offset + limit` at most), and how many of each kind's newest matches are ranked."""
MAX_LIMIT = 100
MAX_WORDS = 10
MAX_WORD_CHARACTERS = 64
"""A longer word is cut to this many characters, which still find it (as their prefix)."""
PREFIX_FROM = 3
"""A word this long or longer matches as a prefix. Shorter ones match whole words: the words beginning with one or two
letters are a good part of the index, too many to gather for a search."""
SNIPPET_CHARACTERS = 160

_WORD = re.compile(r"[^\W_]+")


class BadQuery(ValueError):
    """The search cannot be run as asked (too many words, an unknown kind, a page beyond MAX_RESULTS): the caller's
    400."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result. A ticket hit names its ticket; a conversation hit its conversation and that conversation's
    ticket; a customer hit its customer."""

    kind: Kind
    ticket_id: str | None
    conversation_id: str | None
    customer_id: str | None
    rank: float
    """Relevance, higher first: comparable within one result list only (it depends on the database and the index)."""
    snippet: str
    """Up to SNIPPET_CHARACTERS of the text that matched, around its first match, whitespace collapsed, `…` where
    it is cut: the subject; the body; the customer's name, email and phone joined by ` · `."""
    highlights: tuple[tuple[int, int], ...]
    """The matching words in `snippet`, as [start, end) character offsets."""


def words(query: str) -> list[str]:
    """The words a query searches for: lower-cased, each once, in their order; BadQuery past MAX_WORDS."""
    found = list(
        dict.fromkeys(w[:MAX_WORD_CHARACTERS] for w in _WORD.findall(unicodedata.normalize("NFC", query).lower()))
    )
    if len(found) > MAX_WORDS:
        raise BadQuery(f"a search has at most {MAX_WORDS} words, this one {len(found)}")
    return found


def terms(dialect: str, found: Sequence[str]) -> str:
    """`found` (from `words`) in the database's query syntax: FTS5's MATCH (words side by side are ANDed) on SQLite,
    to_tsquery's on PostgreSQL. Each word is quoted, so it is read as a word and never as an operator (FTS5's AND, OR,
    NOT, NEAR, `*`, `^`, `:`, `-`, `+`, parentheses; to_tsquery's `&`, `|`, `!`, `<->`, `:*`); a word holds no
    quote."""
    if dialect == "sqlite":
        return " ".join(f'"{word}"*' if len(word) >= PREFIX_FROM else f'"{word}"' for word in found)
    return " & ".join(f"'{word}':*" if len(word) >= PREFIX_FROM else f"'{word}'" for word in found)


def search(
    connection: Connection,
    organization_id: str,
    query: str,
    *,
    kinds: Iterable[Kind] = KINDS,
    status: str | None = None,
    priority: str | None = None,
    assignee_id: str | None = None,
    customer_id: str | None = None,
    tag: str | None = None,
    limit: int = 20,
    offset: int = 0,
) -> tuple[list[Hit], bool]:
    """The organization's hits for `query`, best first: `limit` of them after the first `offset`, and whether more
    follow (within MAX_RESULTS). A query without a word finds nothing. The ticket filters apply to ticket and
    conversation hits (a conversation's ticket); a search with any of them has no customer hits."""
    wanted = set(kinds)
    if not wanted or not wanted <= set(KINDS):
        raise BadQuery(f"kinds must be some of {', '.join(KINDS)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise BadQuery(f"limit must be 1 to {MAX_LIMIT}")
    if offset < 0 or offset + limit > MAX_RESULTS:
        raise BadQuery(f"offset must be 0 or more, and offset + limit at most {MAX_RESULTS}")
    found = words(query)
    if not found:
        return [], False
    filters = _Filters(status, priority, assignee_id, customer_id, tag)
    if filters.any():
        wanted.discard("customer")
    if not wanted:
        return [], False
    dialect = connection.dialect.name
    candidates = _sqlite_candidates if dialect == "sqlite" else _postgresql_candidates
    # Each kind's candidates as a subquery of their own: SQLite takes no LIMIT on a compound's member itself.
    arms = [candidates(kind, organization_id, filters).subquery(f"{kind}_hits") for kind in KINDS if kind in wanted]
    ranked = union_all(*(select(*arm.c) for arm in arms)).subquery("ranked")
    statement = (
        select(ranked.c.kind, ranked.c.id, ranked.c.ticket_id, ranked.c.score)
        .order_by(ranked.c.score.desc(), ranked.c.created_at.desc(), ranked.c.id.desc())
        .limit(limit + 1)
        .offset(offset)
    )
    params: dict[str, Any] = {"terms": terms(dialect, found), "window": MAX_RESULTS}
    if dialect == "sqlite":
        number = connection.execute(_ORGANIZATION_NUMBER, {"organization_id": organization_id}).scalar()
        if number is None:  # no row of the organization was ever indexed
            return [], False
        params |= {"first": number * ROWS_PER_ORGANIZATION, "last": (number + 1) * ROWS_PER_ORGANIZATION - 1}
    else:
        # Planned for these words and this organization each time: a plan made for any words (PostgreSQL's generic
        # plan of a prepared statement, after five runs) would walk every row for a rare word or gather every match of
        # a common one.
        connection.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    rows = list(connection.execute(statement, params))
    more = len(rows) > limit and offset + limit < MAX_RESULTS
    page = rows[:limit]
    texts = _texts(connection, page)
    matcher = _matcher(found)
    hits = []
    for row in page:
        snippet, highlights = _snippet(texts.get((row.kind, row.id), ""), matcher)
        hits.append(
            Hit(
                row.kind,
                row.ticket_id,
                row.id if row.kind == "conversation" else None,
                row.id if row.kind == "customer" else None,
                float(row.score),
                snippet,
                highlights,
            )
        )
    return hits, more


@dataclass(frozen=True, slots=True)
class _Filters:
    status: str | None
    priority: str | None
    assignee_id: str | None
    customer_id: str | None
    tag: str | None

    def any(self) -> bool:
        return any(
            value is not None for value in (self.status, self.priority, self.assignee_id, self.customer_id, self.tag)
        )


_SOURCES = {"ticket": TICKETS, "conversation": CONVERSATIONS, "customer": CUSTOMERS}
ROWS_PER_ORGANIZATION = 2**32
"""SQLite: an index rowid is the organization's number (`helpdesk_search_organizations`) times this, plus the row's
rowid (migration 0014)."""
_ORGANIZATIONS = sql_table("helpdesk_search_organizations", sql_column("number"), sql_column("organization_id"))
_ORGANIZATION_NUMBER: Select[Any] = select(_ORGANIZATIONS.c.number).where(
    _ORGANIZATIONS.c.organization_id == bindparam("organization_id")
)


def _scope(kind: Kind, dialect: str, organization_id: str, filters: _Filters) -> list[ColumnElement[bool]]:
    """The conditions on a kind's rows besides the words (a conversation's rows joined to its ticket's: `_joined`)."""
    if kind == "customer":
        return [CUSTOMERS.c.organization_id == organization_id, CUSTOMERS.c.deleted_at.is_(None)]
    if kind == "ticket":
        return _ticket_conditions(dialect, organization_id, filters)
    # A conversation is a hit with its ticket, unless it was deleted.
    return [
        CONVERSATIONS.c.organization_id == organization_id,
        CONVERSATIONS.c.deleted_at.is_(None),
        *_ticket_conditions(dialect, organization_id, filters),
    ]


def _joined(kind: Kind, rows: Any) -> Any:
    """`rows` (the kind's table, or what joins it) with a conversation's ticket joined."""
    return rows.join(TICKETS, TICKETS.c.id == CONVERSATIONS.c.ticket_id) if kind == "conversation" else rows


def _ticket_conditions(dialect: str, organization_id: str, filters: _Filters) -> list[ColumnElement[bool]]:
    """What a ticket meets for it and its conversations to be hits: the one place for a condition on the ticket row
    (a deleted ticket is none; a merged one is, closed, and its conversations are its target's)."""
    t = TICKETS.c
    conditions = [t.organization_id == organization_id, t.deleted_at.is_(None)]
    for column, value in (
        (t.status, filters.status),
        (t.priority, filters.priority),
        (t.assignee_id, filters.assignee_id),
        (t.customer_id, filters.customer_id),
    ):
        if value is not None:
            conditions.append(column == value)
    if filters.tag is not None:
        conditions.append(json_list_has(dialect, t.tags, filters.tag))
    return conditions


def _columns(kind: Kind) -> list[ColumnElement[Any]]:
    source = _SOURCES[kind]
    ticket_id = {"ticket": TICKETS.c.id, "conversation": CONVERSATIONS.c.ticket_id}.get(kind)
    return [
        literal(kind).label("kind"),
        source.c.id.label("id"),
        (ticket_id if ticket_id is not None else literal(None, TICKETS.c.id.type)).label("ticket_id"),
        source.c.created_at.label("created_at"),
    ]


def _sqlite_candidates(kind: Kind, organization_id: str, filters: _Filters) -> Select[Any]:
    """FTS5 (`<table>_search`, contentless): the kind's newest matches in the organization's range of rowids (its
    number times ROWS_PER_ORGANIZATION plus the row's rowid), each scored by bm25 as it is taken. The index reads a
    word's rows of that range newest first, and stops at the window."""
    source = _SOURCES[kind]
    index = sql_table(f"{source.name}_search", sql_column("rowid"))
    # The FTS table's own name, as a column, is what MATCH and bm25 take.
    whole: ColumnElement[Any] = literal_column(index.name)
    row = index.c.rowid.op("&")(literal_column(str(ROWS_PER_ORGANIZATION - 1)))
    rows = index.join(source, literal_column(f"{source.name}.rowid") == row)
    return (
        select(*_columns(kind), (-func.bm25(whole)).label("score"))
        .select_from(_joined(kind, rows))
        .where(
            whole.match(bindparam("terms")),
            index.c.rowid.between(bindparam("first"), bindparam("last")),
            *_scope(kind, "sqlite", organization_id, filters),
        )
        .order_by(index.c.rowid.desc())
        .limit(bindparam("window"))
    )


def _postgresql_candidates(kind: Kind, organization_id: str, filters: _Filters) -> Select[Any]:
    """Text search (`search_vector`, a stored generated column, and its GIN index): the kind's newest matches, ranked
    once taken. For a rare word the planner takes the GIN index; for a common one it walks the organization's rows
    newest first (the listing indexes) and stops at the window."""
    source = _SOURCES[kind]
    query = func.to_tsquery(literal_column("'simple'::regconfig"), bindparam("terms"))
    vector: ColumnElement[Any] = literal_column(f"{source.name}.search_vector")
    newest = (
        select(*_columns(kind), vector.label("vector"))
        .select_from(_joined(kind, source))
        .where(vector.op("@@")(query), *_scope(kind, "postgresql", organization_id, filters))
        .order_by(source.c.created_at.desc(), source.c.id.desc())
        .limit(bindparam("window"))
        .subquery(f"newest_{kind}")
    )
    # Ranked outside the window's query, so only the window's rows are. Cover density (how often and how close
    # together the words are) divided by the log of the text's length (normalisation 1), which orders texts as bm25
    # does: more matches first, and of equal matches the shorter text.
    score = func.ts_rank_cd(newest.c.vector, query, 1).label("score")
    return select(newest.c.kind, newest.c.id, newest.c.ticket_id, newest.c.created_at, score)


def _texts(connection: Connection, rows: Sequence[Any]) -> dict[tuple[str, str], str]:
    """(kind, id) -> the text each hit of the page matched, read for the page alone."""
    ids: dict[str, list[str]] = {}
    for row in rows:
        ids.setdefault(row.kind, []).append(row.id)
    texts: dict[tuple[str, str], str] = {}
    if "ticket" in ids:
        statement = select(TICKETS.c.id, TICKETS.c.subject).where(TICKETS.c.id.in_(ids["ticket"]))
        texts |= {("ticket", id_): subject for id_, subject in connection.execute(statement)}
    if "conversation" in ids:
        statement = select(CONVERSATIONS.c.id, CONVERSATIONS.c.body).where(CONVERSATIONS.c.id.in_(ids["conversation"]))
        texts |= {("conversation", id_): body for id_, body in connection.execute(statement)}
    if "customer" in ids:
        c = CUSTOMERS.c
        statement = select(c.id, c.name, c.email, c.phone).where(c.id.in_(ids["customer"]))
        for row in connection.execute(statement):
            texts[("customer", row.id)] = " · ".join(part for part in (row.name, row.email, row.phone) if part)
    return texts


def _matcher(found: Sequence[str]) -> re.Pattern[str]:
    """The text's words that the query's words match, as the index matched them."""
    alternatives = [
        re.escape(word) + (r"[^\W_]*" if len(word) >= PREFIX_FROM else r"(?![^\W_])")
        for word in sorted(found, key=len, reverse=True)
    ]
    return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


_SPACE = re.compile(r"\s+")


def _snippet(text: str, matcher: re.Pattern[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Up to SNIPPET_CHARACTERS of `text` from a little before its first match, and the matches in it."""
    first = matcher.search(text)
    start = 0
    if first is not None and first.start() > SNIPPET_CHARACTERS // 4:
        start = first.start() - SNIPPET_CHARACTERS // 4
        space = _SPACE.search(text, start, first.start())  # begin at a word
        start = space.end() if space else start
    window = text[start : start + SNIPPET_CHARACTERS * 2]
    piece = _SPACE.sub(" ", window).strip()
    cut = len(piece) > SNIPPET_CHARACTERS or start + len(window) < len(text.rstrip())
    if len(piece) > SNIPPET_CHARACTERS:
        space_at = piece.rfind(" ", SNIPPET_CHARACTERS // 2, SNIPPET_CHARACTERS)  # end at a word
        piece = piece[: space_at if space_at > 0 else SNIPPET_CHARACTERS]
    snippet = ("…" if start else "") + piece + ("…" if cut else "")
    return snippet, tuple(match.span() for match in matcher.finditer(snippet))
