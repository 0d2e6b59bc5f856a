"""Replies on their way to customers (docs/helpdesk.md, "Replies to customers"): the reply sender's outbox. A reply's
outbound row is written with the reply, in its unit of work; the sender claims what is due (a lease: a sender killed
mid-send leaves its rows to be claimed again once the lease runs out), sends, and records what came of it. Every
change of state is a `delivery_changed` activity event of the conversation; states only move forward."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import make_msgid
from typing import Any, Literal

from sqlalchemy import and_, bindparam, or_, select, update
from sqlalchemy.engine import Connection

from storage.common.secrets import Cipher, unseal
from storage.helpdesk import events
from storage.helpdesk.channels import ADDRESSES, CHANNELS
from storage.helpdesk.inbound import EVENTS as INBOUND
from storage.helpdesk.tickets import CONVERSATIONS, OUTBOUND, TICKETS, Delivery, TicketRecord
from storage.helpdesk.workspaces import ORGANIZATIONS
from wire.ids import new_uuid

State = Literal["queued", "sent", "delivered", "read", "failed", "bounced"]
EMAIL_PROVIDERS = ("email_a", "email_b", "email_c", "email_d")
"""The inbound mail endpoints: a ticket whose customer last wrote through one is answered through that channel."""
RETRY_DELAYS = (
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(hours=2),
    timedelta(hours=4),
)
"""After each failed attempt, the wait before the next: eight attempts over some eight hours, then `failed`."""
THREAD_REFERENCES = 10
"""A reply's References name at most this many of its thread's messages, the newest."""


@dataclass(frozen=True, slots=True)
class Route:
    """How a reply reaches the customer: by which channel, from which of its addresses, to whom."""

    medium: str
    channel_id: str
    sender: str
    recipient: str


@dataclass(frozen=True, slots=True)
class Claimed:
    """A due message and everything its sending needs, read when it was claimed."""

    id: str
    organization_id: str
    organization_name: str
    ticket_id: str
    ticket_number: int
    subject: str
    conversation_id: str
    body: str
    attachments: list[dict[str, Any]]
    sender: str
    recipient: str
    message_id: str
    in_reply_to: str | None
    references: list[str]
    attempts: int
    smtp_url: str | None = field(default=None, repr=False)
    """The channel's own SMTP server (its `smtp_url` secret), if it has one."""


@dataclass(frozen=True, slots=True)
class Result:
    """What came of one attempt: sent (with what the provider said of it), or an error (`final`: not worth a retry)."""

    outbound_id: str
    error: str | None = None
    final: bool = False
    provider_message_id: str | None = None
    note: str | None = None


class NoRoute(Exception):
    """The ticket's customer cannot be reached: no channel to answer through, or no address of theirs (409)."""


def route(connection: Connection, ticket: TicketRecord) -> Route:
    """The way back to the customer: the email channel their latest mail on this ticket (or on a ticket merged into
    it) came through, else the organization's oldest email channel; to the customer's address. NoRoute, in words
    for the agent, when there is no such channel or address."""
    if ticket.customer_email is None:
        raise NoRoute("The ticket's customer has no email address to send the reply to")
    threads = select(TICKETS.c.id).where(TICKETS.c.merged_into_id == ticket.id)
    latest = connection.execute(
        select(INBOUND.c.channel_id)
        .join(CHANNELS, CHANNELS.c.id == INBOUND.c.channel_id)
        .where(
            or_(INBOUND.c.ticket_id == ticket.id, INBOUND.c.ticket_id.in_(threads)),
            INBOUND.c.provider.in_(EMAIL_PROVIDERS),
            INBOUND.c.conversation_id.is_not(None),
            CHANNELS.c.deleted_at.is_(None),
        )
        .order_by(INBOUND.c.created_at.desc())
        .limit(1)
    ).scalar()
    found = connection.execute(
        select(CHANNELS.c.id, ADDRESSES.c.address)
        .join(ADDRESSES, and_(ADDRESSES.c.channel_id == CHANNELS.c.id, ADDRESSES.c.kind == "email"))
        .where(
            CHANNELS.c.organization_id == ticket.organization_id,
            CHANNELS.c.kind == "email",
            CHANNELS.c.deleted_at.is_(None),
            *([CHANNELS.c.id == latest] if latest else []),
        )
        .order_by(CHANNELS.c.created_at, CHANNELS.c.id, ADDRESSES.c.address)
        .limit(1)
    ).first()
    if found is None:
        raise NoRoute("The organization has no email channel to send the reply through: add one (Inbound channels)")
    return Route("email", found.id, found.address, ticket.customer_email)


def message_id(way: Route) -> str:
    """A new Message-ID (without its angle brackets) for a reply that goes by mail, at the sending address's domain."""
    return make_msgid(domain=way.sender.rpartition("@")[2] or None).strip("<>")


def enqueue(
    connection: Connection,
    ticket: TicketRecord,
    conversation_id: str,
    way: Route,
    *,
    provider_message_id: str | None,
    now: datetime,
) -> Delivery:
    """The reply's outbound message, due now (a mail's Message-ID, given: the conversation keeps it too, so that the
    customer's answer threads by it)."""
    outbound_id = new_uuid()
    connection.execute(
        OUTBOUND.insert().values(
            id=outbound_id,
            organization_id=ticket.organization_id,
            ticket_id=ticket.id,
            conversation_id=conversation_id,
            channel_id=way.channel_id,
            medium=way.medium,
            recipient=way.recipient,
            state="queued",
            provider_message_id=provider_message_id,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
    )
    return Delivery(way.medium, way.recipient, "queued", provider_message_id, None, None, 0, now)


_ANY_DUE = (
    select(OUTBOUND.c.id).where(OUTBOUND.c.state == "queued", OUTBOUND.c.next_attempt_at <= bindparam("now")).limit(1)
)


def any_due(connection: Connection, now: datetime) -> bool:
    """Whether a message is due: a read, so that an idle sender's polls take no write lock."""
    return connection.execute(_ANY_DUE, {"now": now}).first() is not None


def claim_due(connection: Connection, cipher: Cipher, *, now: datetime, lease: timedelta, limit: int) -> list[Claimed]:
    """Up to `limit` queued messages due now, each taken for `lease` (another sender takes it only after that), with
    what sending them needs."""
    due = list(
        connection.scalars(
            select(OUTBOUND.c.id)
            .where(OUTBOUND.c.state == "queued", OUTBOUND.c.next_attempt_at <= now)
            .order_by(OUTBOUND.c.next_attempt_at)
            .limit(limit)
        )
    )
    if not due:
        return []
    taken = list(
        connection.scalars(
            update(OUTBOUND)
            .where(OUTBOUND.c.id.in_(due), OUTBOUND.c.state == "queued", OUTBOUND.c.next_attempt_at <= now)
            .values(next_attempt_at=now + lease)
            .returning(OUTBOUND.c.id)
        )
    )
    rows = connection.execute(
        select(
            OUTBOUND,
            ORGANIZATIONS.c.name.label("organization_name"),
            TICKETS.c.number,
            TICKETS.c.subject,
            CONVERSATIONS.c.body,
            CONVERSATIONS.c.attachments,
            CONVERSATIONS.c.created_at.label("written_at"),
            ADDRESSES.c.address.label("sender"),
            CHANNELS.c.secrets_sealed,
        )
        .join(ORGANIZATIONS, ORGANIZATIONS.c.id == OUTBOUND.c.organization_id)
        .join(TICKETS, TICKETS.c.id == OUTBOUND.c.ticket_id)
        .join(CONVERSATIONS, CONVERSATIONS.c.id == OUTBOUND.c.conversation_id)
        .join(CHANNELS, CHANNELS.c.id == OUTBOUND.c.channel_id)
        .outerjoin(ADDRESSES, and_(ADDRESSES.c.channel_id == OUTBOUND.c.channel_id, ADDRESSES.c.kind == "email"))
        .where(OUTBOUND.c.id.in_(taken))
        .order_by(OUTBOUND.c.id, ADDRESSES.c.address)
    ).all()
    claimed: dict[str, Claimed] = {}
    for row in rows:
        if row.id in claimed:
            continue
        thread = _thread(connection, row.ticket_id, row.written_at, row.conversation_id)
        claimed[row.id] = Claimed(
            id=row.id,
            organization_id=row.organization_id,
            organization_name=row.organization_name,
            ticket_id=row.ticket_id,
            ticket_number=row.number,
            subject=row.subject,
            conversation_id=row.conversation_id,
            body=row.body,
            attachments=list(row.attachments or []),
            sender=row.sender or "",
            recipient=row.recipient,
            message_id=row.provider_message_id,
            in_reply_to=thread[-1] if thread else None,
            references=thread[-THREAD_REFERENCES:],
            attempts=row.attempts,
            smtp_url=json.loads(unseal(cipher, row.secrets_sealed)).get("smtp_url"),
        )
    return list(claimed.values())


def _thread(connection: Connection, ticket_id: str, before: datetime, conversation_id: str) -> list[str]:
    """The Message-IDs of the ticket's messages (its merged tickets' too) written before the reply, oldest first."""
    merged = select(TICKETS.c.id).where(TICKETS.c.merged_into_id == ticket_id)
    return list(
        connection.scalars(
            select(CONVERSATIONS.c.message_id)
            .where(
                or_(CONVERSATIONS.c.ticket_id == ticket_id, CONVERSATIONS.c.ticket_id.in_(merged)),
                CONVERSATIONS.c.message_id.is_not(None),
                CONVERSATIONS.c.internal.is_(False),
                CONVERSATIONS.c.created_at <= before,
                CONVERSATIONS.c.id != conversation_id,
            )
            .order_by(CONVERSATIONS.c.created_at, CONVERSATIONS.c.id)
        )
    )


def record(connection: Connection, results: Sequence[Result], *, now: datetime) -> None:
    """What came of each attempt: sent, due again after its backoff, or `failed` once the retries are spent (or at
    once, for an error no retry mends); each change of state a `delivery_changed` event. A message no longer queued
    (erased with its customer, say) is left as it is."""
    activity = []
    for result in results:
        row = connection.execute(
            select(OUTBOUND).where(OUTBOUND.c.id == result.outbound_id, OUTBOUND.c.state == "queued")
        ).first()
        if row is None:
            continue
        attempts = row.attempts + 1
        changes: dict[str, Any] = {"attempts": attempts, "updated_at": now}
        if result.error is None:
            changes |= {"state": "sent", "next_attempt_at": None, "note": result.note, "last_error": None}
            if result.provider_message_id:
                changes["provider_message_id"] = result.provider_message_id
        elif result.final or attempts > len(RETRY_DELAYS):
            changes |= {"state": "failed", "next_attempt_at": None, "last_error": result.error}
        else:
            changes |= {"next_attempt_at": now + RETRY_DELAYS[attempts - 1], "last_error": result.error}
        connection.execute(update(OUTBOUND).where(OUTBOUND.c.id == row.id).values(**changes))
        if changes.get("state", "queued") != "queued":
            activity.append(_changed(row, "queued", changes["state"], changes.get("last_error"), now))
    if activity:
        events.record_rows(connection, activity)


def resend(
    connection: Connection, organization_id: str, conversation_id: str, *, actor_id: str | None, now: datetime
) -> bool:
    """A failed reply queued again, due now, its attempts counted anew; False when it has no failed message."""
    row = connection.execute(
        select(OUTBOUND).where(
            OUTBOUND.c.organization_id == organization_id,
            OUTBOUND.c.conversation_id == conversation_id,
            OUTBOUND.c.state == "failed",
        )
    ).first()
    if row is None:
        return False
    connection.execute(
        update(OUTBOUND)
        .where(OUTBOUND.c.id == row.id, OUTBOUND.c.state == "failed")
        .values(state="queued", attempts=0, next_attempt_at=now, updated_at=now)
    )
    events.record_rows(connection, [_changed(row, "failed", "queued", None, now, actor_id=actor_id)])
    return True


def _changed(
    row: Any, old: str, new: str, error: str | None, now: datetime, *, actor_id: str | None = None
) -> dict[str, Any]:
    data = {"old_state": old, "new_state": new, "error": error, "medium": row.medium, "recipient": row.recipient}
    return events.row(
        row.organization_id,
        ("conversation", row.conversation_id),
        "delivery_changed",
        data,
        actor_id=actor_id,
        now=now,
        ticket_id=row.ticket_id,
    )
