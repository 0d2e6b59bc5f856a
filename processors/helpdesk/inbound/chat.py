"""A team chat's events (gateway/helpdesk/inbound/chat.py): a person's message becomes a ticket, and the messages of
its chat thread (the same `thread_ts`, or the first message's own `ts`) conversations on that ticket. A reply in the
thread of a resolved or closed ticket reopens it, at most REOPENS_PER_HOUR times an hour. A bot's messages (ours
among them), edits and deletions make nothing: so the helpdesk never answers itself. A message's files are fetched
with the channel's `bot_token` and kept beside their references (media.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.media import Medium, kept
from processors.helpdesk.inbound.service import Apply, Context, failed, reopen_if_closed
from storage.helpdesk import customers, tickets
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import CHAT_CALLBACK, ChatEvent

MESSAGE_TYPES = ("message", "app_mention")
KEPT_SUBTYPES = (None, "file_share", "thread_broadcast")
"""A message of any other subtype (`bot_message`, `message_changed`, `message_deleted`, `channel_join`...) is
recorded and makes no ticket."""
IDENTITY = "chat"
SUBJECT_CHARACTERS = 120


def subject_of(text: str) -> str:
    """A ticket's subject: the message's first line, shortened."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > SUBJECT_CHARACTERS:
        first = first[: SUBJECT_CHARACTERS - 1].rstrip() + "…"
    return first or "Chat message"


def attachments_of(message: ChatEvent) -> list[dict[str, Any]]:
    """A message's files, as references (`url_private`: the chat's, fetched with the bot token)."""
    return [
        {
            "url": file.url_private,
            "content_type": file.mimetype or "application/octet-stream",
            "name": file.name or file.title or "file",
        }
        for file in message.files
        if file.url_private is not None
    ]


def chat_media(files: list[dict[str, Any]]) -> list[Medium]:
    """A message's files, fetched from `url_private` with the channel's bot token."""
    return [
        Medium(reference, str(reference["name"]), url=reference["url"], bearer="bot_token", sign_in_page=True)
        for reference in files
    ]


async def handle(context: Context, event: Any) -> Apply:
    payload = CHAT_CALLBACK.decode(event.body)
    message = payload.event
    kind = message.type
    team = payload.team_id or (event.details or {}).get("team") or ""
    if kind not in MESSAGE_TYPES:
        return _nothing(f"recorded: a {kind} event makes no ticket", kind[:32])
    subtype = message.subtype
    if message.bot_id or subtype == "bot_message":
        return _nothing("no ticket: a bot's message", "bot")
    if subtype not in KEPT_SUBTYPES:
        return _nothing(f"no ticket: a {subtype} message", str(subtype)[:32])
    user, chat_channel, ts = message.user, message.channel, message.ts
    if user is None or chat_channel is None or ts is None:
        return failed("the message has no user, channel or ts")
    text = message.text or ""
    files = await kept(context, event, chat_media(attachments_of(message)))
    thread_key = f"chat:{event.channel_id}:{chat_channel}:{message.thread_ts or ts}"
    profile = message.user_profile
    name = (profile.real_name or profile.display_name if profile else None) or user

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        organization_id = event.organization_id
        customer = customers.find_or_create_by_identity(
            connection,
            organization_id,
            kind=IDENTITY,
            value=f"{team}:{user}",
            name=name[:255],
            now=now,
            recorded=recorded,
        )
        body = text or ("(a file)" if files else "(no text)")
        ticket = tickets.latest_of_thread(connection, organization_id, thread_key)
        if ticket is None:
            made = tickets.create(
                connection,
                organization_id,
                subject=subject_of(text),
                customer=customer,
                channel="chat",
                message=body,
                attachments=files,
                thread_key=thread_key,
                actor_id=None,
                now=now,
                recorded=recorded,
            )
            return Outcome("new ticket", classification="message", ticket_id=made.id)
        conversation = tickets.add_conversation(
            connection,
            ticket,
            author_type="customer",
            author_id=customer.id,
            body=body,
            internal=False,
            attachments=files,
            now=now,
            recorded=recorded,
        )
        outcome = "threaded by chat thread"
        outcome += reopen_if_closed(connection, ticket, now, recorded)
        return Outcome(outcome, classification="message", ticket_id=ticket.id, conversation_id=conversation.id)

    return apply


def _nothing(outcome: str, classification: str) -> Apply:
    def apply(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
        return Outcome(outcome, classification=classification)

    return apply
