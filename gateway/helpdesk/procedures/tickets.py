"""Tickets and their conversations for a signed-in member: `tickets.list`, `tickets.get`, `tickets.create`,
`tickets.update`, `conversations.list` and `conversations.create`, with the REST API's rules, filters and paging
(the same operations), answering the same bodies; lists as `{items, nextCursor, hasMore}`."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gateway.helpdesk.procedures.wire import Call, Procedure
from gateway.helpdesk.schemas import Conversation, Ticket
from operations.helpdesk import conversations, tickets
from operations.helpdesk.conversations import AddConversation, ListConversations
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Uuid
from operations.helpdesk.tickets import CreateTicket, ListTickets, TicketId, UpdateTicket


class TicketPage(msgspec.Struct):
    items: list[Ticket]
    nextCursor: str | None
    hasMore: bool


class ConversationPage(msgspec.Struct):
    items: list[Conversation]
    nextCursor: str | None
    hasMore: bool


class UpdateTicketById(UpdateTicket, kw_only=True):
    id: Uuid


class AddConversationTo(AddConversation, kw_only=True):
    ticket_id: Uuid


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_tickets(call: Call, given: ListTickets) -> TicketPage:
        page = await tickets.listing(desk, call.actor, given)
        return TicketPage([Ticket.of(ticket) for ticket in page.items], page.next_cursor, page.has_more)

    async def get_ticket(call: Call, given: TicketId) -> Ticket:
        return Ticket.of(await tickets.get(desk, call.actor, given.id))

    async def create_ticket(call: Call, given: CreateTicket) -> Ticket:
        return Ticket.of(await tickets.open_ticket(desk, call.actor, given))

    async def update_ticket(call: Call, given: UpdateTicketById) -> Ticket:
        return Ticket.of(await tickets.change(desk, call.actor, given.id, given))

    async def list_conversations(call: Call, given: ListConversations) -> ConversationPage:
        page = await conversations.listing(desk, call.actor, given)
        return ConversationPage([Conversation.of(c) for c in page.items], page.next_cursor, page.has_more)

    async def add_conversation(call: Call, given: AddConversationTo) -> Conversation:
        return Conversation.of(await conversations.add(desk, call.actor, given.ticket_id, given))

    return {
        "tickets.list": Procedure("query", ListTickets, list_tickets),
        "tickets.get": Procedure("query", TicketId, get_ticket),
        "tickets.create": Procedure("mutation", CreateTicket, create_ticket),
        "tickets.update": Procedure("mutation", UpdateTicketById, update_ticket),
        "conversations.list": Procedure("query", ListConversations, list_conversations),
        "conversations.create": Procedure("mutation", AddConversationTo, add_conversation),
    }
