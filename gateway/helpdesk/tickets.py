"""Tickets and their conversations over REST (`/api/v1/tickets`): list with filters and cursor paging, get, create,
update; a ticket's replies and notes; a ticket's activity events. Another organization's ticket is as absent as a
made-up id (404)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.errors import ERRORS, HelpdeskError
from gateway.helpdesk.events import event_object, is_uuid
from gateway.helpdesk.schemas import (
    AddConversation,
    Conversation,
    ConversationList,
    CreateTicket,
    EventList,
    Priority,
    Status,
    Ticket,
    TicketList,
    UpdateTicket,
)
from storage.common.paging import CursorNotFound
from storage.helpdesk import customers, events, tickets
from wire.timestamps import iso

_decode_create = msgspec.json.Decoder(CreateTicket).decode
_decode_update = msgspec.json.Decoder(UpdateTicket).decode
_decode_conversation = msgspec.json.Decoder(AddConversation).decode

Limit = Annotated[int, Parameter(ge=1, le=100, description="Page size, 1 to 100")]
UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
Cursor = Annotated[
    str | None,
    Parameter(description="The `next_cursor` of the previous page: the page starts after it", pattern=UUID),
]
UuidFilter = Annotated[
    str | None,
    Parameter(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="A uuid",
    ),
]


def ticket_object(ticket: tickets.TicketRecord) -> Ticket:
    return Ticket(
        id=ticket.id,
        number=ticket.number,
        subject=ticket.subject,
        status=ticket.status,  # type: ignore[arg-type]
        priority=ticket.priority,  # type: ignore[arg-type]
        channel=ticket.channel,  # type: ignore[arg-type]
        customer_id=ticket.customer_id,
        customer_email=ticket.customer_email,
        assignee_id=ticket.assignee_id,
        tags=ticket.tags,
        created_at=iso(ticket.created_at, "milliseconds"),
        updated_at=iso(ticket.updated_at, "milliseconds"),
    )


def conversation_object(conversation: tickets.ConversationRecord) -> Conversation:
    return Conversation(
        id=conversation.id,
        ticket_id=conversation.ticket_id,
        author_type=conversation.author_type,  # type: ignore[arg-type]
        author_id=conversation.author_id,
        body=conversation.body,
        internal=conversation.internal,
        created_at=iso(conversation.created_at, "milliseconds"),
    )


def next_cursor(ids: list[str], has_more: bool) -> str | None:
    return ids[-1] if has_more and ids else None


async def own_ticket(helpdesk: HelpdeskGateway, organization_id: str, ticket_id: str) -> tickets.TicketRecord:
    ticket = await helpdesk.db.read(tickets.get, organization_id, ticket_id) if is_uuid(ticket_id) else None
    if ticket is None:
        raise HelpdeskError(404, "No ticket with that id in this organization")
    return ticket


class TicketsController(Controller):
    path = "/api/v1/tickets"
    tags = ["tickets"]

    @get("/", guards=[requires("tickets:read")], **docs.LIST_TICKETS)
    async def list_tickets(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        status: Annotated[Status | None, Parameter(description="Tickets in this status")] = None,
        priority: Annotated[Priority | None, Parameter(description="Tickets of this priority")] = None,
        assignee_id: UuidFilter = None,
        customer_id: UuidFilter = None,
        tag: Annotated[str | None, Parameter(min_length=1, max_length=64, description="Tickets with this tag")] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> TicketList:
        try:
            found, has_more = await helpdesk.db.read(
                tickets.listing,
                request.user.owner_id,
                status=status,
                priority=priority,
                assignee_id=assignee_id,
                customer_id=customer_id,
                tag=tag,
                limit=limit,
                cursor=cursor,
            )
        except CursorNotFound:
            raise HelpdeskError(404, "cursor names no ticket of this listing") from None
        data = [ticket_object(ticket) for ticket in found]
        return TicketList(data=data, has_more=has_more, next_cursor=next_cursor([t.id for t in data], has_more))

    @post("/", guards=[requires("tickets:write")], **docs.CREATE_TICKET)
    async def create_ticket(
        self, request: Request[HelpdeskPrincipal, Any, Any], helpdesk: NamedDependency[HelpdeskGateway]
    ) -> Response[Ticket]:
        body = decode_body(_decode_create, await request.body(), ERRORS)
        if (body.customer_id is msgspec.UNSET) == (body.customer_email is msgspec.UNSET):
            raise HelpdeskError(400, "Give the customer as customer_id or as customer_email (one of them)")
        if body.customer_id is not msgspec.UNSET and body.customer_name is not msgspec.UNSET:
            raise HelpdeskError(400, "customer_name names a new customer: give it with customer_email")
        organization_id = request.user.owner_id
        try:
            ticket = await _create(helpdesk, organization_id, body)
        except tickets.UnknownCustomer:
            raise HelpdeskError(404, "customer_id names no customer of this organization") from None
        except tickets.UnknownAssignee:
            raise HelpdeskError(404, "assignee_id names no user of this organization") from None
        return Response(ticket_object(ticket), status_code=201)

    @get("/{ticket_id:str}", guards=[requires("tickets:read")], **docs.GET_TICKET)
    async def get_ticket(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        ticket_id: FromPath[str],
    ) -> Ticket:
        return ticket_object(await own_ticket(helpdesk, request.user.owner_id, ticket_id))

    @patch("/{ticket_id:str}", guards=[requires("tickets:write")], **docs.UPDATE_TICKET)
    async def update_ticket(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        ticket_id: FromPath[str],
    ) -> Ticket:
        body = decode_body(_decode_update, await request.body(), ERRORS)
        organization_id = request.user.owner_id
        await own_ticket(helpdesk, organization_id, ticket_id)
        given = {name: value for name, value in msgspec.structs.asdict(body).items() if value is not msgspec.UNSET}
        if "assignee_id" in given and given["assignee_id"] is None:
            given["assignee_id"] = ""  # storage's "remove the assignee"
        try:
            ticket = await helpdesk.change(
                organization_id,
                tickets.change,
                organization_id,
                ticket_id,
                tickets.Changes(**given),
                actor_id=None,
            )
        except tickets.UnknownAssignee:
            raise HelpdeskError(404, "assignee_id names no user of this organization") from None
        if ticket is None:
            raise HelpdeskError(404, "No ticket with that id in this organization")
        return ticket_object(ticket)

    @get("/{ticket_id:str}/conversations", guards=[requires("conversations:read")], **docs.LIST_CONVERSATIONS)
    async def list_conversations(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        ticket_id: FromPath[str],
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> ConversationList:
        ticket = await own_ticket(helpdesk, request.user.owner_id, ticket_id)
        try:
            found, has_more = await helpdesk.db.read(tickets.conversations, ticket.id, limit=limit, cursor=cursor)
        except CursorNotFound:
            raise HelpdeskError(404, "cursor names no conversation of this ticket") from None
        data = [conversation_object(conversation) for conversation in found]
        return ConversationList(data=data, has_more=has_more, next_cursor=next_cursor([c.id for c in data], has_more))

    @post("/{ticket_id:str}/conversations", guards=[requires("conversations:write")], **docs.ADD_CONVERSATION)
    async def add_conversation(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        ticket_id: FromPath[str],
    ) -> Response[Conversation]:
        body = decode_body(_decode_conversation, await request.body(), ERRORS)
        organization_id = request.user.owner_id
        ticket = await own_ticket(helpdesk, organization_id, ticket_id)
        if body.author_type == "customer" and body.internal:
            raise HelpdeskError(400, "An internal note is written by an agent: author_type customer cannot be internal")
        conversation = await helpdesk.change(
            organization_id,
            tickets.add_conversation,
            ticket,
            author_type=body.author_type,
            author_id=ticket.customer_id if body.author_type == "customer" else None,
            body=body.body,
            internal=body.internal,
        )
        return Response(conversation_object(conversation), status_code=201)

    @get("/{ticket_id:str}/events", guards=[requires("events:read")], **docs.LIST_TICKET_EVENTS)
    async def list_ticket_events(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        ticket_id: FromPath[str],
        limit: Limit = 50,
        cursor: Cursor = None,
    ) -> EventList:
        organization_id = request.user.owner_id
        ticket = await own_ticket(helpdesk, organization_id, ticket_id)
        try:
            page = await helpdesk.db.read(events.of_ticket, organization_id, ticket.id, limit=limit, cursor=cursor)
        except CursorNotFound:
            raise HelpdeskError(404, "cursor names no event of this ticket") from None
        data = [event_object(event) for event in page.events]
        return EventList(
            data=data, has_more=page.has_more, next_cursor=next_cursor([e.id for e in data], page.has_more)
        )


async def _create(helpdesk: HelpdeskGateway, organization_id: str, body: CreateTicket) -> tickets.TicketRecord:
    """The ticket; made again once when a racing create made its new customer first (the second finds it)."""
    for attempt in range(2):
        try:
            return await helpdesk.change(
                organization_id,
                tickets.create,
                organization_id,
                subject=body.subject,
                customer_id=_given(body.customer_id),
                customer_email=_given(body.customer_email),
                customer_name=_given(body.customer_name),
                priority=body.priority,
                status=body.status,
                channel=body.channel,
                assignee_id=body.assignee_id,
                tags=body.tags,
                message=body.message,
                actor_id=None,
            )
        except customers.EmailTaken:
            if attempt:
                raise
    raise AssertionError("unreachable")


def _given(value: str | msgspec.UnsetType) -> str | None:
    return None if value is msgspec.UNSET else value
