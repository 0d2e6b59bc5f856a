"""Inbound mail, of every provider kind: parsed into one `Mail` (mail.py), classified, its attachments put in the blob
store (only for mail that becomes a message on a ticket), then threaded in the order of section 4.6 (In-Reply-To,
every References id, a `[Ticket #<number>]` subject, a stored Message-ID) onto its ticket, or made a new ticket.

A bounce becomes an internal note on the ticket of the mail it returns and marks the failed addresses bouncing;
auto-replies, our own mail coming back (our header, one of the organization's own addresses as the sender, or the
Message-ID of one of our own sent replies), delayed-delivery notices, delivery reports, feedback reports and mail that
names no one to answer (invalid: no sender, or a header block too broken to show one) make no ticket. A mail already
on its ticket (the same Message-ID, come again through another address or channel) adds nothing. A customer's reply
reopens a resolved or closed ticket, at most REOPENS_PER_HOUR times an hour per ticket (the backstop against a loop
with another machine)."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound import mail as mails
from processors.helpdesk.inbound.mail import Mail
from processors.helpdesk.inbound.service import Apply, Context, put_blob, reopen_if_closed
from storage.helpdesk import customers, outbound, tickets
from storage.helpdesk.inbound import Outcome

OFF_THE_LOOP_BYTES = 256 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def parse(event: Any) -> Mail:
    """The event's mail, by its provider kind."""
    details = event.details or {}
    if event.provider == "email_a":
        return mails.from_mailgun(event.body, event.content_type, recipient=details.get("recipient"))
    if event.provider == "email_b":
        return mails.from_sendgrid(event.body, event.content_type)
    if event.provider == "email_c":
        return mails.from_postmark(event.body, recipient=details.get("recipient"))
    if event.provider == "email_d":
        return mails.from_rfc822(event.body, envelope_to=details.get("envelope_to"))
    raise ValueError(f"no mail parser for {event.provider}")


MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""An inbound mail's attachment is kept up to this size; a larger one is listed on its conversation as refused (an
outage of the blob store, on the other hand, is tried again: the event stays pending)."""
REFUSED = f"over the {MAX_ATTACHMENT_BYTES // 2**20} MiB an inbound attachment may be"


async def handle(context: Context, event: Any) -> Apply:
    # a large mail (attachments) is parsed on a thread: the other senders' events go on meanwhile
    mail = await asyncio.to_thread(parse, event) if len(event.body) > OFF_THE_LOOP_BYTES else parse(event)
    own = await context.own_addresses(event.organization_id, "email")
    kind = mails.classify(mail, own, event.organization_id)
    attachments = []
    if kind in mails.MAKES_CONVERSATION:
        for index, attachment in enumerate(mail.attachments):
            name = _UNSAFE.sub("_", attachment.name)[:100] or "attachment"
            key = f"helpdesk/{event.organization_id}/inbound/{event.id}/{index}-{name}"
            content_type = attachment.content_type or "application/octet-stream"
            kept = {"name": attachment.name, "content_type": content_type, "size": len(attachment.data)}
            if len(attachment.data) > MAX_ATTACHMENT_BYTES:  # refused for good: the mail is a ticket all the same
                attachments.append(kept | {"refused": REFUSED})
                continue
            await put_blob(context, key, attachment.data, content_type)
            attachments.append(kept | {"blob": key})

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if kind == mails.BOUNCE:
            return _bounce(connection, event, mail, now, recorded)
        if kind in mails.NO_TICKET:
            return Outcome(f"no ticket: {kind.replace('_', ' ')}", classification=kind)
        if kind == mails.INVALID:
            return Outcome("no ticket: the mail has no sender", classification=kind)
        return _message(connection, event, mail, own, kind=kind, attachments=attachments, now=now, recorded=recorded)

    return apply


def _thread(
    connection: Connection, organization_id: str, mail: Mail, stored: tickets.ConversationRecord | None
) -> tuple[tickets.TicketRecord, str] | None:
    """The ticket the mail belongs to, and the rule that found it."""
    keys = mails.thread_keys(mail)
    for rule, ids in (("In-Reply-To", keys.in_reply_to), ("References", keys.references)):
        found = tickets.tickets_of_message_ids(connection, organization_id, ids)
        for message_id in ids:
            if message_id in found:
                ticket = tickets.get(connection, organization_id, found[message_id])
                if ticket is not None:
                    return ticket, rule
    if keys.ticket_number is not None:
        ticket = tickets.by_number(connection, organization_id, keys.ticket_number)
        if ticket is not None:
            return ticket, "subject"
    if stored is not None:
        ticket = tickets.get(connection, organization_id, stored.ticket_id)
        if ticket is not None:
            return ticket, "Message-ID"
    return None


def _message(
    connection: Connection,
    event: Any,
    mail: Mail,
    own: list[str],
    *,
    kind: str,
    attachments: list[dict[str, Any]],
    now: datetime,
    recorded: list[str],
) -> Outcome:
    organization_id = event.organization_id
    stored = (
        tickets.conversation_of_message_id(connection, organization_id, mail.message_id) if mail.message_id else None
    )
    if stored is not None and stored.author_type == "agent":
        return Outcome("no ticket: a copy of our own sent reply", classification=mails.OUTBOUND_COPY)
    who = mails.requester(mail, own)
    if who is None:
        return Outcome("no ticket: the mail has no sender", classification="invalid")
    name, address = who
    customer = customers.find_or_create(
        connection, organization_id, email=address, name=name or None, now=now, recorded=recorded
    )
    body = mail.text or "(no text)"
    threaded = _thread(connection, organization_id, mail, stored)
    if threaded is None:
        subject = mails.strip_reply_prefixes(mail.subject)[:255] or "(no subject)"
        ticket = tickets.create(
            connection,
            organization_id,
            subject=subject,
            customer=customer,
            channel="voice" if kind == mails.VOICEMAIL else "email",
            tags=["voicemail"] if kind == mails.VOICEMAIL else (),
            message=body,
            message_id=mail.message_id,
            attachments=attachments,
            actor_id=None,
            now=now,
            recorded=recorded,
        )
        said = None
        if kind == mails.INBOUND:
            said = outbound.automatic(
                connection, ticket, "acknowledgement", channel_id=event.channel_id, recorded=recorded, now=now
            )
        return Outcome("new ticket" + (f"; {said}" if said else ""), classification=kind, ticket_id=ticket.id)
    ticket, rule = threaded
    if stored is not None and stored.ticket_id == ticket.id:
        outcome = f"threaded by {rule}: the same mail is on the ticket already"
        return Outcome(outcome, classification=kind, ticket_id=ticket.id, conversation_id=stored.id)
    conversation = tickets.add_conversation(
        connection,
        ticket,
        author_type="customer",
        author_id=customer.id,
        body=body,
        internal=False,
        message_id=mail.message_id,
        attachments=attachments,
        now=now,
        recorded=recorded,
    )
    outcome = f"threaded by {rule}"
    outcome += reopen_if_closed(connection, ticket, now, recorded)
    return Outcome(outcome, classification=kind, ticket_id=ticket.id, conversation_id=conversation.id)


def _bounce(connection: Connection, event: Any, mail: Mail, now: datetime, recorded: list[str]) -> Outcome:
    """An internal note on the ticket of the mail the bounce returns; the addresses it says failed (else that
    ticket's customer's) marked bouncing. A bounce of no mail we know marks nothing: anyone can send a bounce."""
    organization_id = event.organization_id
    ids = mails.bounced_message_ids(mail)
    found = tickets.tickets_of_message_ids(connection, organization_id, ids)
    ticket = None
    for message_id in ids:
        if message_id in found and (ticket := tickets.get(connection, organization_id, found[message_id])):
            break
    if ticket is None:
        return Outcome("no ticket: a bounce of no mail of ours", classification=mails.BOUNCE)
    failed = mails.bounced_recipients(mail) or ([ticket.customer_email] if ticket.customer_email else [])
    marked = []
    for recipient in failed:
        customer = customers.mark_bouncing(connection, organization_id, recipient, now)
        if customer is not None and customer.email:
            marked.append(customer.email)
    failed_to = f" to {', '.join(failed)}" if failed else ""
    note = tickets.add_conversation(
        connection,
        ticket,
        author_type="agent",
        author_id=None,
        body=f"Delivery failed{failed_to}: {mail.subject}\n\n{mail.text}"[:65536],
        internal=True,
        now=now,
        recorded=recorded,
    )
    outcome = f"bounce noted on its ticket; bouncing: {', '.join(marked) or 'none'}"
    return Outcome(outcome, classification=mails.BOUNCE, ticket_id=ticket.id, conversation_id=note.id)
