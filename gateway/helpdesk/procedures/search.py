"""`search.query` for a signed-in member: the REST search's input (camelCase) and hits."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gateway.helpdesk.procedures.wire import Call, Procedure
from gateway.helpdesk.schemas import SearchHit
from operations.helpdesk import search
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.search import Search


class Hits(msgspec.Struct):
    items: list[SearchHit]
    nextOffset: int | None  # camelCase, as the procedures' pages are
    hasMore: bool


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def query(call: Call, given: Search) -> Hits:
        found = await search.query(desk, call.actor, given)
        return Hits([SearchHit.of(hit) for hit in found.hits], found.next_offset, found.has_more)

    return {"search.query": Procedure("query", Search, query)}
