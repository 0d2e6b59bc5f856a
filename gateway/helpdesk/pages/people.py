"""The agent app's customers and search (docs/helpdesk.md, "The agent app"): the customers, newest first or by
address; a customer's page with their tickets; the search over tickets, messages and customers. Each calls the
operations REST and the procedures call."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import msgspec
from litestar import Request, get
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template
from litestar.types import ControllerRouterHandler

from gateway.helpdesk.pages.site import Member, Site, readable
from operations.helpdesk import customers, search
from operations.helpdesk import tickets as ticket_operations
from operations.helpdesk.customers import ListCustomers
from operations.helpdesk.search import Search
from operations.helpdesk.tickets import ListTickets

CUSTOMERS_PAGE = 25
THEIR_TICKETS = 25
SEARCH_PAGE = 20


def routes(site: Site) -> list[ControllerRouterHandler]:
    desk = site.helpdesk.desk

    @get("/customers")
    async def customer_list(
        request: Request[Any, Any, Any], email: FromQuery[str] = "", cursor: FromQuery[str | None] = None
    ) -> Template | Redirect:
        async def render(who: Member) -> Template:
            try:
                given = msgspec.convert(
                    {"email": email.strip() or None, "limit": CUSTOMERS_PAGE, "cursor": cursor}, ListCustomers
                )
            except msgspec.ValidationError as wrong:
                return site.page(
                    "customers.html",
                    status=400,
                    cookies=who.cookies,
                    customers=[],
                    email=email,
                    error=readable(str(wrong)),
                )
            found = await customers.listing(desk, who.actor, given)
            more = None
            if found.has_more and found.items:
                more = "/customers?" + urlencode({"email": email, "cursor": found.items[-1].id})
            return site.page("customers.html", cookies=who.cookies, customers=found.items, email=email, more=more)

        return await site.shown(request, render)

    @get("/customers/{customer_id:str}")
    async def customer(request: Request[Any, Any, Any], customer_id: FromPath[str]) -> Template | Redirect:
        async def render(who: Member) -> Template:
            person = await customers.get(desk, who.actor, customer_id)
            theirs = await ticket_operations.listing(
                desk, who.actor, ListTickets(customer_id=person.id, limit=THEIR_TICKETS)
            )
            bought = await customers.orders_of(desk, who.actor, person.id)
            return site.page("customer.html", cookies=who.cookies, customer=person, tickets=theirs.items, orders=bought)

        return await site.shown(request, render)

    @get("/search")
    async def find(
        request: Request[Any, Any, Any], q: FromQuery[str] = "", offset: FromQuery[int] = 0
    ) -> Template | Redirect:
        async def render(who: Member) -> Template:
            if not q.strip():
                return site.page("search.html", cookies=who.cookies, q="", hits=[])
            try:
                given = msgspec.convert({"q": q.strip(), "limit": SEARCH_PAGE, "offset": offset}, Search)
            except msgspec.ValidationError as wrong:
                return site.page(
                    "search.html", status=400, cookies=who.cookies, q=q, hits=[], error=readable(str(wrong))
                )
            found = await search.query(desk, who.actor, given)
            more = f"/search?{urlencode({'q': q, 'offset': found.next_offset})}" if found.next_offset else None
            return site.page("search.html", cookies=who.cookies, q=q, hits=found.hits, more=more)

        return await site.shown(request, render)

    return [customer_list, customer, find]
