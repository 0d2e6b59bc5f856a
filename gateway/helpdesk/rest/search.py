"""`GET /api/v1/search` (scope `search:read`): full-text search over the organization's tickets, conversations and
customers, with the ticket listing's filters."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.params import Parameter

from gateway.common.auth import requires
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.rest.paging import Limit, UuidFilter
from gateway.helpdesk.schemas import SearchHit, SearchResults
from operations.helpdesk import search
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Priority, Status
from operations.helpdesk.search import Search
from storage.helpdesk.search import MAX_RESULTS, Kind


class SearchController(Controller):
    path = "/api/v1/search"
    tags = ["search"]

    @get("/", guards=[requires("search:read")], **docs.SEARCH)
    async def search(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        q: Annotated[str, Parameter(min_length=1, max_length=1000, description="The words to find")],
        kind: Annotated[list[Kind] | None, Parameter(description="Only these kinds (repeat it): ticket, ...")] = None,
        status: Annotated[Status | None, Parameter(description="Tickets in this status")] = None,
        priority: Annotated[Priority | None, Parameter(description="Tickets of this priority")] = None,
        assignee_id: UuidFilter = None,
        customer_id: UuidFilter = None,
        tag: Annotated[str | None, Parameter(min_length=1, max_length=64, description="Tickets with this tag")] = None,
        limit: Limit = 20,
        offset: Annotated[int, Parameter(ge=0, le=MAX_RESULTS - 1, description="Hits to skip")] = 0,
    ) -> SearchResults:
        given = Search(
            q=q,
            kinds=kind,
            status=status,
            priority=priority,
            assignee_id=assignee_id,
            customer_id=customer_id,
            tag=tag,
            limit=limit,
            offset=offset,
        )
        found = await search.query(desk, actor_of(request), given)
        return SearchResults(
            data=[SearchHit.of(hit) for hit in found.hits], has_more=found.has_more, next_offset=found.next_offset
        )
