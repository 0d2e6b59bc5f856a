"""Inbound SMS (the SMS provider's form, and the voice provider's SMS events): all messages from one number form one
ticket thread; and the threading by sender that the messaging apps share (`to_thread`).

A sender's thread (`Ticket.thread_key`, e.g. `sms:+15551234567`, `whatsapp:<wa_id>`) is one per organization. A
number's latest ticket takes each of its messages, however long ago it was resolved or closed, and is reopened by it
(at most REOPENS_PER_HOUR times an hour, as inbound mail: the backstop against a loop with another machine; past that
the message is added and the ticket stays as it is). The messaging apps keep their own rule: a resolved or closed
ticket whose last change is more than REOPEN_WITHIN old is left alone, and the message starts a new ticket of the
thread. An MMS's media (`{"url", "content_type"}`) are fetched with the channel's `account_sid` and `auth_token` as
basic auth and kept (media.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.media import Medium, file_name, kept
from processors.helpdesk.inbound.service import CLOSED, Apply, Context, reopen_if_closed
from storage.helpdesk import customers, outbound, tickets
from storage.helpdesk.inbound import Outcome
from storage.helpdesk.outbound import State
from topics.helpdesk.inbound import sms_message, sms_status_of

REOPEN_WITHIN = timedelta(days=7)
"""The messaging apps' rule (`to_thread`'s default): a resolved or closed ticket of a sender's thread is reopened by the
sender's next message up to this long after its last change; after that, the message starts a new ticket. SMS has no
such limit: a number's messages form one thread."""
INBOUND = "inbound"
MAX_MEDIA = 10
"""Media of one MMS, at most (the provider's own limit)."""


@dataclass(frozen=True, slots=True)
class Sms:
    """An incoming SMS or MMS, as its provider's form gave it."""

    sid: str
    sender: str
    to: str
    text: str
    media: list[dict[str, Any]] = field(default_factory=list)
    """Attachment references: `{"url", "content_type"}`."""

    def body(self) -> str:
        """The conversation's text: the message, or what it carried when it has no text."""
        if self.text.strip():
            return self.text
        count = len(self.media)
        return f"({count} attachment{'s' if count != 1 else ''})" if count else "(empty message)"

    def fetched(self) -> list[Medium]:
        """Its media, as the provider's API gives them: with the account's sid and auth token (basic auth)."""
        return [
            Medium(
                reference,
                file_name(None, reference["url"], reference["content_type"], f"mms-{index + 1}"),
                url=reference["url"],
                basic=("account_sid", "auth_token"),
            )
            for index, reference in enumerate(self.media)
        ]


def parse(form: bytes) -> Sms:
    """The SMS provider's form (From, To, Body, MessageSid, NumMedia, MediaUrlN, MediaContentTypeN)."""
    fields = dict(parse_qsl(form.decode("utf-8"), keep_blank_values=True))
    message = sms_message(fields)
    media = [
        {"url": fields[f"MediaUrl{index}"], "content_type": fields.get(f"MediaContentType{index}") or None}
        for index in range(min(message.num_media, MAX_MEDIA))
        if fields.get(f"MediaUrl{index}")
    ]
    return Sms(sid=message.sid, sender=message.sender.strip(), to=message.to.strip(), text=message.text, media=media)


def to_thread(
    connection: Connection,
    organization_id: str,
    *,
    thread_key: str,
    customer_id: str,
    subject: str,
    channel: str,
    body: str,
    message_id: str | None,
    attachments: Sequence[dict[str, Any]] = (),
    tags: Sequence[str] = (),
    classification: str = INBOUND,
    reopen_within: timedelta | None = REOPEN_WITHIN,
    now: datetime,
    recorded: list[str],
) -> Outcome:
    """A sender's message onto its thread's latest ticket (reopened if need be), or a new ticket of the thread: when the
    thread has none, or its latest is resolved or closed and last changed more than `reopen_within` ago (None: never
    a new one)."""
    ticket = tickets.latest_of_thread(connection, organization_id, thread_key)
    if (
        ticket is not None
        and reopen_within is not None
        and ticket.status in CLOSED
        and now - ticket.updated_at > reopen_within
    ):
        ticket = None
    if ticket is None:
        created = tickets.create(
            connection,
            organization_id,
            subject=subject[:255],
            customer_id=customer_id,
            channel=channel,
            tags=tags,
            message=body,
            message_id=message_id,
            attachments=attachments,
            thread_key=thread_key,
            actor_id=None,
            now=now,
            recorded=recorded,
        )
        return Outcome("new ticket", classification=classification, ticket_id=created.id)
    conversation = tickets.add_conversation(
        connection,
        ticket,
        author_type="customer",
        author_id=customer_id,
        body=body,
        internal=False,
        message_id=message_id,
        attachments=attachments,
        now=now,
        recorded=recorded,
    )
    outcome = "threaded by sender"
    outcome += reopen_if_closed(connection, ticket, now, recorded)
    return Outcome(outcome, classification=classification, ticket_id=ticket.id, conversation_id=conversation.id)


def from_number(
    connection: Connection,
    organization_id: str,
    *,
    number: str,
    text: str,
    message_id: str | None,
    attachments: Sequence[dict[str, Any]] = (),
    now: datetime,
    recorded: list[str],
) -> Outcome:
    """An SMS from `number` (E.164): its customer (identity `phone`), onto the number's thread, whose latest ticket
    takes it however long ago it was resolved."""
    customer = customers.find_or_create_by_identity(
        connection, organization_id, kind="phone", value=number, name=None, phone=number, now=now, recorded=recorded
    )
    return to_thread(
        connection,
        organization_id,
        thread_key=f"sms:{number}",
        customer_id=customer.id,
        subject=f"SMS from {number}",
        channel="sms",
        body=text,
        message_id=message_id,
        attachments=attachments,
        reopen_within=None,
        now=now,
        recorded=recorded,
    )


async def handle(context: Context, event: Any) -> Apply:
    sms = parse(event.body)
    attachments = await kept(context, event, sms.fetched()) if sms.sender else []

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if not sms.sender:
            return Outcome("no ticket: the message has no sender", classification="invalid")
        return from_number(
            connection,
            event.organization_id,
            number=sms.sender,
            text=sms.body(),
            message_id=sms.sid or None,
            attachments=attachments,
            now=now,
            recorded=recorded,
        )

    return apply


REPORTED: dict[str, State] = {
    "sent": "sent",
    "delivered": "delivered",
    "read": "read",
    "undelivered": "failed",
    "failed": "failed",
}
"""The SMS provider's message states as a reply's delivery states (its `queued`, `accepted`, `sending` and
`scheduled` say nothing a `sent` reply does not)."""


async def handle_status(_context: Context, event: Any) -> Apply:
    """A status report of a reply we sent: its delivery state moves forward (outbound.report)."""
    status = sms_status_of(dict(parse_qsl(event.body.decode("utf-8"), keep_blank_values=True)))
    state = REPORTED.get(status.status.lower())
    error = None
    if state == "failed":
        error = f"the provider reported it {status.status}" + (
            f", error {status.error_code}" if status.error_code else ""
        )
        error += f": {status.error_message}" if status.error_message else ""

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if state is None:
            return Outcome(f"status {status.status}: nothing new", classification="status")
        changed = outbound.report(
            connection, event.organization_id, status.sid, state, channel_id=event.channel_id, error=error, now=now
        )
        return Outcome(
            f"delivery {state}" if changed else f"status {status.status}: nothing new", classification="status"
        )

    return apply
