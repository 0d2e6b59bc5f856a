"""A ticket's conversations: replies (to the customer) and internal notes (agents only), listed newest first. A
person's reply or note is theirs (`author_id`) and its events carry them as the actor."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from sqlalchemy.engine import Connection

from operations.common.actors import Actor
from operations.common.errors import Conflict, Invalid, NotFound, StaleCursor
from operations.common.pages import Page
from operations.helpdesk import tickets as ticket_operations
from operations.helpdesk.attachments import MAX_ATTACHMENTS
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Body, Cursor, Limit, Uuid, is_uuid
from storage.common.paging import CursorNotFound
from storage.common.secrets import Cipher
from storage.helpdesk import outbound, tickets, uploads
from storage.helpdesk.tickets import ConversationRecord

NOT_FOUND = "No conversation with that id in this organization"


class AddConversation(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A reply (to the customer) or, with `internal: true`, a note only agents see. `author_type: customer` records
    the customer's own message (an integration relaying it)."""

    never_together: ClassVar = {"author_type": "customer", "internal": True}

    body: Body
    internal: bool = False
    author_type: Literal["agent", "customer"] = "agent"
    attachment_ids: Annotated[list[Uuid], msgspec.Meta(max_length=MAX_ATTACHMENTS)] = msgspec.field(
        default_factory=list
    )
    """Files uploaded for it (each taken by one conversation)."""


class ListConversations(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    ticket_id: Uuid
    limit: Limit = 20
    cursor: Cursor | None = None


async def add(desk: Helpdesk, actor: Actor, ticket_id: str, given: AddConversation) -> ConversationRecord:
    if given.author_type == "customer" and given.internal:
        raise Invalid("An internal note is written by an agent: author_type customer cannot be internal")
    if not is_uuid(ticket_id):
        raise NotFound(ticket_operations.NOT_FOUND)
    try:
        outcome = await desk.changes.run(
            actor.organization_id,
            _add,
            desk.cipher,
            actor.organization_id,
            ticket_id,
            list(dict.fromkeys(given.attachment_ids)),
            author_type=given.author_type,
            author_id=actor.user_id,
            body=given.body,
            internal=given.internal,
            actor_id=actor.user_id,
        )
    except uploads.UploadUnavailable as unavailable:
        if unavailable.taken:
            raise Conflict(f"attachment_ids names a file attached to another reply already: {unavailable}") from None
        raise NotFound(f"attachment_ids names no upload of this organization: {unavailable}") from None
    if outcome is None:
        raise NotFound(ticket_operations.NOT_FOUND)
    if isinstance(outcome, outbound.NoRoute):
        raise Conflict(f"The reply cannot reach the customer: {outcome}")
    return outcome


def _add(
    connection: Connection,
    cipher: Cipher,
    organization_id: str,
    ticket_id: str,
    upload_ids: list[str],
    **fields: Any,
) -> ConversationRecord | outbound.NoRoute | None:
    """The conversation on the organization's ticket, the uploads it names taken by it, and for an agent's reply
    its messages to the customer the way back to them (outbound.replying: the way the customer's latest message
    came, when it is written), in one unit of work. None when the organization has no such ticket, and the NoRoute
    when a reply cannot reach the customer: returned, not raised, as nothing is written then (a unit that raises has
    its round's other units run again one by one)."""
    way: outbound.Route | None = None
    if fields["author_type"] == "agent" and not fields["internal"]:
        found = outbound.replying(connection, cipher, organization_id, ticket_id, fields["now"])
        if found is None:
            return None
        ticket, routed = found
        if isinstance(routed, outbound.NoRoute):
            return routed
        way = routed
    else:
        read = tickets.get(connection, organization_id, ticket_id)
        if read is None:
            return None
        ticket = read
        if fields["author_type"] == "customer":
            fields["author_id"] = ticket.customer_id
    attached = uploads.unattached(connection, ticket.organization_id, upload_ids) if upload_ids else []
    sent_as = outbound.message_id(way) if way is not None and way.medium == "email" else None
    conversation = tickets.add_conversation(
        connection, ticket, attachments=[upload.attachment() for upload in attached], message_id=sent_as, **fields
    )
    if upload_ids:
        uploads.take(connection, ticket.organization_id, upload_ids, conversation.id)
    if way is None:
        return conversation
    delivery = outbound.enqueue(
        connection, ticket, conversation.id, way, fields["body"], provider_message_id=sent_as, now=fields["now"]
    )
    return dataclasses.replace(conversation, delivery=delivery)


async def listing(desk: Helpdesk, actor: Actor, given: ListConversations) -> Page[ConversationRecord]:
    ticket = await ticket_operations.own(desk, actor, given.ticket_id)
    try:
        found, has_more = await desk.db.read(tickets.conversations, ticket.id, limit=given.limit, cursor=given.cursor)
    except CursorNotFound:
        raise StaleCursor("cursor names no conversation of this ticket") from None
    return Page(found, has_more)


class EditConversation(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    body: Body


async def own(desk: Helpdesk, actor: Actor, conversation_id: str) -> ConversationRecord:
    found = None
    if is_uuid(conversation_id):
        found = await desk.db.read(tickets.conversation, actor.organization_id, conversation_id)
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


def _may_change(actor: Actor, conversation: ConversationRecord) -> None:
    """A reply or a note is changed by its author or an admin."""
    if conversation.author_type == "agent" and actor.is_user(conversation.author_id):
        return
    actor.require_admin("change another's reply or note")


async def edit(desk: Helpdesk, actor: Actor, conversation_id: str, given: EditConversation) -> ConversationRecord:
    """The new body, with an `updated` event holding the old and the new content."""
    _may_change(actor, await own(desk, actor, conversation_id))
    edited = await desk.db.write(
        tickets.edit_conversation,
        actor.organization_id,
        conversation_id,
        given.body,
        actor_id=actor.user_id,
        now=desk.clock(),
    )
    if edited is None:
        raise NotFound(NOT_FOUND)
    return edited


async def delete(desk: Helpdesk, actor: Actor, conversation_id: str) -> None:
    _may_change(actor, await own(desk, actor, conversation_id))
    deleted = await desk.db.write(
        tickets.delete_conversation, actor.organization_id, conversation_id, actor_id=actor.user_id, now=desk.clock()
    )
    if not deleted:
        raise NotFound(NOT_FOUND)


async def resend(desk: Helpdesk, actor: Actor, conversation_id: str) -> ConversationRecord:
    """A reply whose message failed, queued again (by any member: the customer should get the answer)."""
    await own(desk, actor, conversation_id)
    resent = await desk.db.write(
        outbound.resend, actor.organization_id, conversation_id, actor_id=actor.user_id, now=desk.clock()
    )
    if not resent:
        raise Conflict("Only a reply whose message failed can be sent again")
    return await own(desk, actor, conversation_id)
