"""Full-text search over the organization's tickets (subject), conversations (bodies) and customers (name, email,
phone), ranked, prefix-aware and paged, with the ticket listing's filters (storage/helpdesk/search.py)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from operations.common.actors import Actor
from operations.common.errors import Invalid
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Limit, Priority, Status, Tag, Uuid
from storage.helpdesk import search
from storage.helpdesk.search import KINDS, MAX_RESULTS, Hit, Kind

Query = Annotated[str, msgspec.Meta(min_length=1, max_length=1000, examples=["refund"])]
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_RESULTS - 1)]


class Search(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`q`: its words must all match, each of 3 characters or more as the beginning of a word. Filters as the ticket
    listing's apply to tickets and to conversations by their ticket; with any of them, no customer is a hit."""

    q: Query
    kinds: Annotated[list[Kind], msgspec.Meta(min_length=1, max_length=len(KINDS))] | None = None
    """Which kinds of thing to find (default: all)."""
    status: Status | None = None
    priority: Priority | None = None
    assignee_id: Uuid | None = None
    customer_id: Uuid | None = None
    tag: Tag | None = None
    limit: Limit = 20
    offset: Offset = 0


class Found(msgspec.Struct, frozen=True):
    """A page of hits, best first."""

    hits: list[Hit]
    has_more: bool
    next_offset: int | None


async def query(desk: Helpdesk, actor: Actor, given: Search) -> Found:
    """A page of hits; a page that would reach past the MAX_RESULTS best is cut there (the last page)."""
    try:
        hits, has_more = await desk.db.read(
            search.search,
            actor.organization_id,
            given.q,
            kinds=given.kinds or KINDS,
            status=given.status,
            priority=given.priority,
            assignee_id=given.assignee_id,
            customer_id=given.customer_id,
            tag=given.tag,
            limit=min(given.limit, MAX_RESULTS - given.offset),
            offset=given.offset,
        )
    except search.BadQuery as bad:
        raise Invalid(str(bad)) from None
    return Found(hits, has_more, given.offset + len(hits) if has_more else None)
