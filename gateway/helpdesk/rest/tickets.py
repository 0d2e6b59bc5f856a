"""Tickets and their conversations over REST (`/api/v1/tickets`): list with filters and cursor paging, get, create,
update; a ticket's replies and notes; a ticket's activity events. Another organization's ticket is as absent as a
made-up id (404)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.errors import ERRORS, HelpdeskError
from gateway.helpdesk.files import keep, read_files
from gateway.helpdesk.rest.paging import Cursor, Limit, UuidFilter
from gateway.helpdesk.schemas import Conversation, ConversationList, Deleted, Event, EventList, Ticket, TicketList
from operations.common.actors import Actor
from operations.helpdesk import conversations, events, tickets
from operations.helpdesk.attachments import MAX_ATTACHMENTS
from operations.helpdesk.conversations import AddConversation, EditConversation, ListConversations
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.events import ListTicketEvents
from operations.helpdesk.fields import Priority, Status
from operations.helpdesk.tickets import CreateTicket, ListTickets, MergeTicketInto, UpdateTicket

MAX_REPLY_BODY = 25 * 1024 * 1024
"""A reply or note with its files, sent as multipart/form-data: 25 MiB at most (each file at most MAX_UPLOAD_BYTES)."""
MAX_JSON_BODY = 1024 * 1024
_decode_create = msgspec.json.Decoder(CreateTicket).decode
_decode_update = msgspec.json.Decoder(UpdateTicket).decode
_decode_conversation = msgspec.json.Decoder(AddConversation).decode
_decode_merge = msgspec.json.Decoder(MergeTicketInto).decode
_decode_edit = msgspec.json.Decoder(EditConversation).decode


class TicketsController(Controller):
    path = "/api/v1/tickets"
    tags = ["tickets"]

    @get("/", guards=[requires("tickets:read")], **docs.LIST_TICKETS)
    async def list_tickets(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        status: Annotated[Status | None, Parameter(description="Tickets in this status")] = None,
        priority: Annotated[Priority | None, Parameter(description="Tickets of this priority")] = None,
        assignee_id: UuidFilter = None,
        customer_id: UuidFilter = None,
        tag: Annotated[str | None, Parameter(min_length=1, max_length=64, description="Tickets with this tag")] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> TicketList:
        given = ListTickets(
            status=status,
            priority=priority,
            assignee_id=assignee_id,
            customer_id=customer_id,
            tag=tag,
            limit=limit,
            cursor=cursor,
        )
        page = await tickets.listing(desk, actor_of(request), given)
        return TicketList(data=[Ticket.of(t) for t in page.items], has_more=page.has_more, next_cursor=page.next_cursor)

    @post("/", guards=[requires("tickets:write")], **docs.CREATE_TICKET)
    async def create_ticket(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> Response[Ticket]:
        given = decode_body(_decode_create, await request.body(), ERRORS)
        return Response(Ticket.of(await tickets.open_ticket(desk, actor_of(request), given)), status_code=201)

    @get("/{ticket_id:str}", guards=[requires("tickets:read")], **docs.GET_TICKET)
    async def get_ticket(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], ticket_id: FromPath[str]
    ) -> Ticket:
        return Ticket.of(await tickets.get(desk, actor_of(request), ticket_id))

    @patch("/{ticket_id:str}", guards=[requires("tickets:write")], **docs.UPDATE_TICKET)
    async def update_ticket(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], ticket_id: FromPath[str]
    ) -> Ticket:
        given = decode_body(_decode_update, await request.body(), ERRORS)
        return Ticket.of(await tickets.change(desk, actor_of(request), ticket_id, given))

    @delete("/{ticket_id:str}", guards=[requires("tickets:write")], **docs.DELETE_TICKET)
    async def delete_ticket(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], ticket_id: FromPath[str]
    ) -> Deleted:
        await tickets.delete(desk, actor_of(request), ticket_id)
        return Deleted(id=ticket_id)

    @post("/{ticket_id:str}/merge", guards=[requires("tickets:write")], **docs.MERGE_TICKET)
    async def merge_ticket(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], ticket_id: FromPath[str]
    ) -> Ticket:
        given = decode_body(_decode_merge, await request.body(), ERRORS)
        return Ticket.of(await tickets.merge(desk, actor_of(request), ticket_id, given))

    @get("/{ticket_id:str}/conversations", guards=[requires("conversations:read")], **docs.LIST_CONVERSATIONS)
    async def list_conversations(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        ticket_id: FromPath[str],
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> ConversationList:
        given = ListConversations(ticket_id=ticket_id, limit=limit, cursor=cursor)
        page = await conversations.listing(desk, actor_of(request), given)
        data = [Conversation.of(conversation, desk) for conversation in page.items]
        return ConversationList(data=data, has_more=page.has_more, next_cursor=page.next_cursor)

    @post(
        "/{ticket_id:str}/conversations",
        guards=[requires("conversations:write")],
        request_max_body_size=MAX_REPLY_BODY,
        **docs.ADD_CONVERSATION,
    )
    async def add_conversation(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], ticket_id: FromPath[str]
    ) -> Response[Conversation]:
        actor = actor_of(request)
        if request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
            given = await _with_files(request, desk, actor)
        else:
            if int(request.headers.get("content-length") or 0) > MAX_JSON_BODY:
                raise HelpdeskError(413, "A JSON body is at most 1 MiB: send files as multipart/form-data")
            given = decode_body(_decode_conversation, await request.body(), ERRORS)
        conversation = await conversations.add(desk, actor, ticket_id, given)
        return Response(Conversation.of(conversation, desk), status_code=201)

    @get("/{ticket_id:str}/events", guards=[requires("events:read")], **docs.LIST_TICKET_EVENTS)
    async def list_ticket_events(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        ticket_id: FromPath[str],
        limit: Limit = 50,
        cursor: Cursor = None,
    ) -> EventList:
        actor = actor_of(request)
        await tickets.get(desk, actor, ticket_id)
        page = await events.of_ticket(desk, actor, ListTicketEvents(ticket_id=ticket_id, limit=limit, cursor=cursor))
        return EventList(data=[Event.of(e) for e in page.items], has_more=page.has_more, next_cursor=page.next_cursor)


class ConversationsController(Controller):
    path = "/api/v1/conversations"
    tags = ["conversations"]

    @patch("/{conversation_id:str}", guards=[requires("conversations:write")], **docs.UPDATE_CONVERSATION)
    async def update_conversation(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        conversation_id: FromPath[str],
    ) -> Conversation:
        given = decode_body(_decode_edit, await request.body(), ERRORS)
        return Conversation.of(await conversations.edit(desk, actor_of(request), conversation_id, given), desk)

    @post("/{conversation_id:str}/resend", guards=[requires("conversations:write")], **docs.RESEND_CONVERSATION)
    async def resend_conversation(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        conversation_id: FromPath[str],
    ) -> Response[Conversation]:
        resent = await conversations.resend(desk, actor_of(request), conversation_id)
        return Response(Conversation.of(resent, desk), status_code=200)

    @delete("/{conversation_id:str}", guards=[requires("conversations:write")], **docs.DELETE_CONVERSATION)
    async def delete_conversation(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        conversation_id: FromPath[str],
    ) -> Deleted:
        await conversations.delete(desk, actor_of(request), conversation_id)
        return Deleted(id=conversation_id)


async def _with_files(request: Request[Any, Any, Any], desk: Helpdesk, actor: Actor) -> AddConversation:
    """A reply or note sent as multipart/form-data: its fields, and its files (`file`, repeated) kept as uploads."""
    texts, files = await read_files(request, "file", MAX_ATTACHMENTS)
    if "author_type" in texts or "attachment_ids" in texts:
        raise HelpdeskError(
            400, "A multipart reply is an agent's, its files in it: send author_type and attachment_ids as JSON"
        )
    fields: dict[str, Any] = dict(texts)
    if "internal" in fields:  # a form's booleans are words: `true` or `false`, nothing else
        fields["internal"] = {"true": True, "false": False}.get(texts["internal"], texts["internal"])
    try:
        given = msgspec.convert(fields, AddConversation)
    except msgspec.ValidationError as error:
        raise ERRORS.invalid_body(str(error)) from None
    kept = [await keep(desk, actor, file) for file in files]
    return msgspec.structs.replace(given, attachment_ids=[upload.id for upload in kept])
