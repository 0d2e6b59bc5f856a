"""Tickets and their conversations for a signed-in member: `tickets.list`, `tickets.get`, `tickets.create`,
`tickets.update`, `tickets.merge`, `tickets.delete` (admins), `conversations.list`, `conversations.create`,
`conversations.update` and `conversations.delete` (their author or an admin), `conversations.resend` (a failed
reply), with the REST API's rules, filters and paging (the same operations), answering the same bodies; lists as
`{items, nextCursor, hasMore}`."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gateway.helpdesk.procedures.wire import Call, Listing, Procedure
from gateway.helpdesk.schemas import Conversation, Deleted, Ticket
from operations.helpdesk import conversations, tickets
from operations.helpdesk.conversations import AddConversation, EditConversation, ListConversations
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Uuid
from operations.helpdesk.tickets import CreateTicket, ListTickets, MergeTicketInto, TicketId, UpdateTicket


class UpdateTicketById(UpdateTicket, kw_only=True):
    id: Uuid


class AddConversationTo(AddConversation, kw_only=True):
    ticket_id: Uuid


class MergeTicket(MergeTicketInto, kw_only=True):
    id: Uuid


class ConversationId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Uuid


class EditConversationById(EditConversation, kw_only=True):
    id: Uuid


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_tickets(call: Call, given: ListTickets) -> Listing[Ticket]:
        return Listing.of(await tickets.listing(desk, call.actor, given), Ticket.of)

    async def get_ticket(call: Call, given: TicketId) -> Ticket:
        return Ticket.of(await tickets.get(desk, call.actor, given.id))

    async def create_ticket(call: Call, given: CreateTicket) -> Ticket:
        return Ticket.of(await tickets.open_ticket(desk, call.actor, given))

    async def update_ticket(call: Call, given: UpdateTicketById) -> Ticket:
        return Ticket.of(await tickets.change(desk, call.actor, given.id, given))

    async def list_conversations(call: Call, given: ListConversations) -> Listing[Conversation]:
        page = await conversations.listing(desk, call.actor, given)
        return Listing.of(page, lambda conversation: Conversation.of(conversation, desk))

    async def add_conversation(call: Call, given: AddConversationTo) -> Conversation:
        return Conversation.of(await conversations.add(desk, call.actor, given.ticket_id, given), desk)

    async def merge_ticket(call: Call, given: MergeTicket) -> Ticket:
        return Ticket.of(await tickets.merge(desk, call.actor, given.id, given))

    async def delete_ticket(call: Call, given: TicketId) -> Deleted:
        await tickets.delete(desk, call.actor, given.id)
        return Deleted(id=given.id)

    async def edit_conversation(call: Call, given: EditConversationById) -> Conversation:
        return Conversation.of(await conversations.edit(desk, call.actor, given.id, given), desk)

    async def resend_conversation(call: Call, given: ConversationId) -> Conversation:
        return Conversation.of(await conversations.resend(desk, call.actor, given.id), desk)

    async def delete_conversation(call: Call, given: ConversationId) -> Deleted:
        await conversations.delete(desk, call.actor, given.id)
        return Deleted(id=given.id)

    return {
        "tickets.list": Procedure("query", ListTickets, list_tickets),
        "tickets.get": Procedure("query", TicketId, get_ticket),
        "tickets.create": Procedure("mutation", CreateTicket, create_ticket),
        "tickets.update": Procedure("mutation", UpdateTicketById, update_ticket),
        "conversations.list": Procedure("query", ListConversations, list_conversations),
        "conversations.create": Procedure("mutation", AddConversationTo, add_conversation),
        "tickets.merge": Procedure("mutation", MergeTicket, merge_ticket),
        "tickets.delete": Procedure("mutation", TicketId, delete_ticket, "admin"),
        "conversations.update": Procedure("mutation", EditConversationById, edit_conversation),
        "conversations.resend": Procedure("mutation", ConversationId, resend_conversation),
        "conversations.delete": Procedure("mutation", ConversationId, delete_conversation),
    }
