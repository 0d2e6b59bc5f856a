"""The helpdesk's agent app (docs/helpdesk.md, "The agent app"): pages at the gateway's root where a member signs in
(a password, or a mailed link) and works the inbox: the views with their counts, a ticket's thread with each reply's
delivery state, a reply or an internal note, its status and assignee. Each page signs in by the session cookies the
procedures use (gateway/helpdesk/accounts/sessions.py) and calls the operations REST and the procedures call, so a
page holds no rule of its own; forms post and are answered by a redirect (or the page again with what was wrong)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from uuid import uuid4

import msgspec
from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, ServerSentEvent, Template
from litestar.response.sse import ServerSentEventMessage
from litestar.router import Router
from litestar.status_codes import HTTP_303_SEE_OTHER

from gateway.common.app import DRAINING
from gateway.common.pages import assets_router, pages_router
from gateway.helpdesk.accounts.redirects import is_safe_local_path
from gateway.helpdesk.accounts.signin import (
    SignInWithEmail,
    SignInWithPassword,
    password_sign_in,
    send_sign_in_link,
    start_social_sign_in,
)
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.pages import account, channels, people, settings, signup
from gateway.helpdesk.pages.site import PRODUCT, SIGN_IN, Form, Member, Site
from gateway.helpdesk.procedures.wire import ProcedureError
from operations.common.actors import Actor
from operations.common.errors import OperationError, TooLarge
from operations.helpdesk import attachments, conversations, customers, events, team
from operations.helpdesk import tickets as ticket_operations
from operations.helpdesk.conversations import AddConversation, ListConversations
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.events import ListTicketEvents
from operations.helpdesk.tickets import ListTickets, MergeTicketInto, UpdateTicket
from storage.helpdesk.tickets import INBOX_VIEWS, InboxView

TEMPLATES = Path(__file__).parent / "templates"
CSRF_COOKIE = "hd-csrf"
INBOX_PAGE = 25
"""Tickets an inbox page lists."""
THREAD_PAGE = 50
"""Messages a ticket's page shows, newest first."""
COMPOSER_MAX_BYTES = 25 * 1024 * 1024
"""A reply or note written on the page, its files included (each at most 10 MiB, at most 10 of them)."""
LIVE_EVERY_S = 2.0
"""How often a ticket's open page is checked for new activity (docs/helpdesk.md, "The agent app")."""
LIVE_FOR_S = 300.0
TIMELINE = 50
"""Events of the ticket (and its conversations) its page shows, newest first."""
CUSTOMER_TICKETS = 10
"""The customer's other tickets a ticket's page lists beside it, newest first."""
VIEW_NAMES: dict[InboxView, str] = {
    "mine": "Mine",
    "unassigned": "Unassigned",
    "open": "All open",
    "pending": "Pending",
    "resolved": "Resolved",
}


def routes(helpdesk: HelpdeskGateway) -> list[Router]:
    """The agent app's pages (behind the CSRF check) and the assets they use."""
    desk, deps = helpdesk.desk, helpdesk.accounts
    sessions = deps.sessions

    site = Site(helpdesk)
    page, go = site.page, site.go

    @get(SIGN_IN, name="sign_in")
    async def sign_in_page(next: FromQuery[str] = "/") -> Template:
        return site.sign_in(next=_local(next))

    @get(f"{SIGN_IN}/social")
    async def sign_in_by_social(request: Request[Any, Any, Any], next: FromQuery[str] = "/") -> Template | Redirect:
        """Off to the configured provider (a link, not a form: the pages' forms may only lead to this site); its
        callback signs the browser in and goes on to `next`."""
        client = request.client.host if request.client else "unknown"
        try:
            url, cookie = await start_social_sign_in(deps, _local(next), client)
        except ProcedureError as refused:
            return site.sign_in(refused.status, next=_local(next), error=refused.message)
        return Redirect(path=url, status_code=HTTP_303_SEE_OTHER, cookies=[cookie])

    @post(f"{SIGN_IN}/link", status_code=200)
    async def sign_in_by_link(data: Form) -> Template:
        email, next_ = data.get("email", "").strip(), _local(data.get("next", "/"))
        try:
            given = msgspec.convert({"email": email, "redirectTo": next_}, SignInWithEmail)
        except msgspec.ValidationError:
            error = "Give the address you sign in with, such as ada@example.com"
            return site.sign_in(400, next=next_, email=email, error=error)
        try:
            await send_sign_in_link(deps, given.email, given.redirectTo)
        except ProcedureError as refused:
            return site.sign_in(refused.status, next=next_, email=email, error=refused.message)
        return page("link_sent.html", email=email)

    @post(f"{SIGN_IN}/password", status_code=HTTP_303_SEE_OTHER)
    async def sign_in_by_password(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        email, next_ = data.get("email", "").strip(), _local(data.get("next", "/"))
        try:
            given = msgspec.convert({"email": email, "password": data.get("password", "")}, SignInWithPassword)
        except msgspec.ValidationError:
            error = "Give your address and your password (at least 6 characters)"
            return site.sign_in(400, next=next_, email=email, error=error)
        try:
            _, started = await password_sign_in(deps, given, request.client.host if request.client else "unknown")
        except ProcedureError as refused:
            return site.sign_in(refused.status, next=next_, email=email, error=refused.message)
        return go(next_, started.cookies)

    @post("/sign-out", status_code=HTTP_303_SEE_OTHER)
    async def sign_out(request: Request[Any, Any, Any]) -> Redirect:
        resolved = await sessions.resolve(request.cookies)
        if resolved.signed_in is None:
            return go(SIGN_IN, resolved.cookies)
        return go(SIGN_IN, await sessions.end(resolved.signed_in.session_id))

    @get("/dashboard", status_code=HTTP_303_SEE_OTHER)
    async def dashboard() -> Redirect:
        """Where the contract's signup sends the browser by default (`redirectPath`): the inbox."""
        return go("/")

    @get("/", name="inbox")
    async def inbox(
        request: Request[Any, Any, Any], view: FromQuery[str] = "mine", cursor: FromQuery[str | None] = None
    ) -> Template | Redirect:
        who = await site.signed_in(request)
        if isinstance(who, Redirect):
            return who
        chosen: InboxView = view if view in INBOX_VIEWS else "mine"  # type: ignore[assignment]
        counts = await ticket_operations.inbox_counts(desk, who.actor)
        try:
            found = await ticket_operations.inbox(desk, who.actor, chosen, limit=INBOX_PAGE, cursor=cursor)
        except OperationError:
            return go(f"/?{urlencode({'view': chosen})}", who.cookies)
        return page(
            "inbox.html",
            cookies=who.cookies,
            views=[(name, VIEW_NAMES[name], counts[name]) for name in INBOX_VIEWS],
            view=chosen,
            tickets=found.items,
            next_cursor=found.items[-1].id if found.has_more else None,
        )

    async def ticket_page(who: Member, ticket_id: str, status: int = 200, **values: Any) -> Template:
        ticket = await ticket_operations.get(desk, who.actor, ticket_id)
        thread = await conversations.listing(desk, who.actor, ListConversations(ticket_id=ticket.id, limit=THREAD_PAGE))
        members = {person.id: person for person in await team.members(desk, who.actor)}
        theirs = await ticket_operations.listing(
            desk, who.actor, ListTickets(customer_id=ticket.customer_id, limit=CUSTOMER_TICKETS + 1)
        )
        activity = await events.of_ticket(desk, who.actor, ListTicketEvents(ticket_id=ticket.id, limit=TIMELINE))
        bought = await customers.orders_of(desk, who.actor, ticket.customer_id)
        files = {message.id: attachments.shown(desk, message) for message in thread.items}
        return page(
            "ticket.html",
            status=status,
            cookies=who.cookies,
            ticket=ticket,
            thread=thread.items,
            members=members,
            others=[other for other in theirs.items if other.id != ticket.id][:CUSTOMER_TICKETS],
            me=who.actor.user_id,
            activity=activity.items,
            orders=bought,
            files=files,
            **values,
        )

    @get("/tickets/{ticket_id:str}", name="ticket")
    async def ticket(request: Request[Any, Any, Any], ticket_id: FromPath[str]) -> Template | Redirect:
        return await site.shown(request, lambda who: ticket_page(who, ticket_id))

    @get("/tickets/{ticket_id:str}/live")
    async def live(
        request: Request[Any, Any, Any], ticket_id: FromPath[str], since: FromQuery[str] = ""
    ) -> ServerSentEvent | Redirect:
        """Server-sent events for an open ticket's page: `changed` (with the newest activity event's id) whenever the
        ticket's activity log grows past `since`, the newest event the page showed (a message, a delivery state, a
        status...; so nothing between the page and this stream is missed), read every LIVE_EVERY_S seconds, for up to
        LIVE_FOR_S (the browser's EventSource then connects again)."""
        who = await site.signed_in(request)
        if isinstance(who, Redirect):
            return who
        newest = since or await _newest_event(desk, who.actor, ticket_id)

        draining: asyncio.Event = request.app.state[DRAINING]

        async def changes() -> AsyncIterator[ServerSentEventMessage]:
            last, loop = newest, asyncio.get_running_loop()
            until, wait = loop.time() + LIVE_FOR_S, 0.0
            while loop.time() < until:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(draining.wait(), wait)
                if draining.is_set():  # the server is stopping: the browser connects again elsewhere or later
                    return
                wait = LIVE_EVERY_S
                now = await _newest_event(desk, who.actor, ticket_id)
                if now != last:
                    last = now
                    yield ServerSentEventMessage(event="changed", data=now or "")
                else:
                    yield ServerSentEventMessage(comment="quiet")

        return ServerSentEvent(changes(), headers={"Cache-Control": "no-store"})

    @post(
        "/tickets/{ticket_id:str}/conversations",
        status_code=HTTP_303_SEE_OTHER,
        request_max_body_size=COMPOSER_MAX_BYTES,
    )
    async def write(request: Request[Any, Any, Any], ticket_id: FromPath[str]) -> Template | Redirect:
        """A reply (`kind=reply`) or an internal note (`kind=note`) on the ticket, with the files chosen (`files`),
        each kept as an upload (operations/helpdesk/attachments.py) and attached."""
        form = await request.form()
        # a browser sends a textarea's line breaks as CRLF (HTML's form submission): kept as the text's own \n
        body = str(form.get("body", "")).replace("\r\n", "\n")
        given: dict[str, Any] = {"body": body, "internal": form.get("kind") == "note"}
        files = [item for item in form.getall("files", []) if isinstance(item, UploadFile) and item.filename]

        async def act(who: Member) -> Redirect:
            # The message as it will be (placeholder ids: as many as files) is checked before any file is kept, and
            # every file's size too, so that a refused message leaves no upload behind.
            wanted = msgspec.convert({**given, "attachment_ids": [str(uuid4())] * len(files)}, AddConversation)
            chosen = [(item, await item.read()) for item in files]
            for item, data in chosen:
                if len(data) > attachments.MAX_UPLOAD_BYTES:
                    raise TooLarge(f"{item.filename} is over {attachments.MAX_UPLOAD_BYTES // (1024 * 1024)} MiB")
            kept = [
                await attachments.upload(
                    desk,
                    who.actor,
                    name=item.filename,
                    content_type=item.content_type or "application/octet-stream",
                    data=data,
                )
                for item, data in chosen
            ]
            wanted = msgspec.structs.replace(wanted, attachment_ids=[upload.id for upload in kept])
            await conversations.add(desk, who.actor, ticket_id, wanted)
            return go(f"/tickets/{ticket_id}", who.cookies)

        return await site.submitted(request, act, again(ticket_id), draft=given["body"])

    @post("/tickets/{ticket_id:str}/changes", status_code=HTTP_303_SEE_OTHER)
    async def change(request: Request[Any, Any, Any], ticket_id: FromPath[str], data: Form) -> Template | Redirect:
        """The ticket's status, priority or assignee (`assignee_id` empty: nobody)."""
        given: dict[str, Any] = {name: data[name] for name in ("status", "priority") if data.get(name)}
        if "assignee_id" in data:
            given["assignee_id"] = data["assignee_id"] or None
        if "tags" in data:
            given["tags"] = [tag for tag in (part.strip() for part in data["tags"].split(",")) if tag]

        async def act(who: Member) -> Redirect:
            await ticket_operations.change(desk, who.actor, ticket_id, msgspec.convert(given, UpdateTicket))
            return go(f"/tickets/{ticket_id}", who.cookies)

        return await site.submitted(request, act, again(ticket_id))

    @post("/tickets/{ticket_id:str}/merge", status_code=HTTP_303_SEE_OTHER)
    async def merge(request: Request[Any, Any, Any], ticket_id: FromPath[str], data: Form) -> Template | Redirect:
        """The ticket merged into another of its customer's (chosen on the page): the browser goes to that one."""
        given = {"into_id": data.get("into_id", "")}

        async def act(who: Member) -> Redirect:
            into = await ticket_operations.merge(desk, who.actor, ticket_id, msgspec.convert(given, MergeTicketInto))
            return go(f"/tickets/{into.id}", who.cookies)

        return await site.submitted(request, act, again(ticket_id))

    def again(ticket_id: str) -> Callable[..., Awaitable[Template]]:
        """The ticket's page with what was wrong with its form."""
        return lambda who, **values: ticket_page(who, ticket_id, **values)

    handlers = [
        sign_in_page,
        sign_in_by_social,
        sign_in_by_link,
        sign_in_by_password,
        sign_out,
        dashboard,
        inbox,
        ticket,
        live,
        write,
        change,
        merge,
    ]
    pages = pages_router(
        [
            *handlers,
            *settings.routes(site),
            *signup.routes(site),
            *account.routes(site),
            *people.routes(site),
            *channels.routes(site),
        ],
        product=PRODUCT,
        csrf_secret=sessions.tokens.derived("pages-csrf"),
        cookie_name=CSRF_COOKIE,
        secure=sessions.secure,
    )
    return [pages, assets_router()]


async def _newest_event(desk: Helpdesk, actor: Actor, ticket_id: str) -> str | None:
    """The id of the newest event of the ticket and its conversations (a refusal, as for its page, raised)."""
    found = await events.of_ticket(desk, actor, ListTicketEvents(ticket_id=ticket_id, limit=1))
    return found.items[0].id if found.items else None


def _local(path: str) -> str:
    """A path of this site to go on to after signing in; `/` for anything else."""
    return path if path and is_safe_local_path(path) else "/"
