"""Replies on their way to customers (docs/helpdesk.md, "Replies to customers"): the reply sender's outbox. A reply's
outbound row is written with the reply, in its unit of work; the sender claims what is due (a lease: a sender killed
mid-send leaves its rows to be claimed again once the lease runs out), sends, and records what came of it. Every
change of state is a `delivery_changed` activity event of the conversation; states only move forward."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import make_msgid
from typing import Any, Literal, get_args

from cryptography.fernet import InvalidToken
from sqlalchemy import Select, and_, bindparam, func, insert, literal, or_, select, union_all, update
from sqlalchemy.engine import Connection

from storage.common import later, mail
from storage.common.models import among
from storage.common.secrets import Cipher, unseal
from storage.helpdesk import events, tickets
from storage.helpdesk.channels import ADDRESSES, CHANNELS, organization_addresses
from storage.helpdesk.customers import CUSTOMERS
from storage.helpdesk.inbound import EVENTS as INBOUND
from storage.helpdesk.keys import SERVICE
from storage.helpdesk.tickets import CONVERSATIONS, OUTBOUND, TICKETS, Delivery, TicketRecord
from storage.helpdesk.workspaces import ORGANIZATIONS
from wire.ids import new_uuid
from wire.mailboxes import machine

State = Literal["queued", "sent", "delivered", "read", "failed", "bounced"]
Medium = Literal["email", "sms", "business_messaging", "page_messaging", "chat"]
Messaging = Literal["business_messaging", "page_messaging", "chat"]
MESSAGING: tuple[Messaging, ...] = get_args(Messaging)
"""The media whose reply goes into the customer's conversation on the provider (their inbound endpoint's name)."""
EMAIL_PROVIDERS = ("email_a", "email_b", "email_c", "email_d")
"""The inbound mail endpoints: a ticket whose customer last wrote through one is answered through that channel."""
ANSWERED_THROUGH = (*EMAIL_PROVIDERS, "sms", *MESSAGING)
"""The inbound endpoints whose channel a reply goes back through (the others' replies go by email, or by SMS to a
caller: `route`)."""
SEND_CREDENTIALS: dict[Medium, tuple[str, ...]] = {
    "email": (),
    "sms": ("account_sid", "auth_token"),
    "business_messaging": ("access_token",),
    "page_messaging": ("page_access_token",),
    "chat": ("bot_token",),
}
"""The secrets a channel needs to send on its medium (an email channel sends through an SMTP server it may name)."""
ADDRESS_KINDS: dict[Medium, str] = {
    "email": "email",
    "sms": "sms_number",
    "business_messaging": "phone_number_id",
    "page_messaging": "page_id",
    "chat": "team",
}
"""The kind of the channel's address a message goes from."""
NAMES: dict[Medium, str] = {
    "email": "email",
    "sms": "SMS",
    "business_messaging": "business messaging",
    "page_messaging": "page messaging",
    "chat": "team chat",
}
SMS_MAX_CHARS = 1600
PART_CHARS: dict[Medium, int] = {
    "sms": SMS_MAX_CHARS,
    "business_messaging": 4096,
    "page_messaging": 2000,
    "chat": 40000,
}
"""Each provider's longest message text: a longer reply goes as several messages, in order (`split`)."""
BUSINESS_WINDOW = timedelta(hours=24)
"""Business messaging's customer-service window: a free-form reply goes only this long after the customer's latest
message (past it the provider takes only template messages, which the helpdesk does not send)."""
PAGE_WINDOW = timedelta(hours=24)
"""Page messaging's standard window: a reply within it is a `RESPONSE`."""
HUMAN_AGENT_WINDOW = timedelta(days=7)
"""Past PAGE_WINDOW, a person's reply goes with the `HUMAN_AGENT` tag, up to this long after the customer wrote."""
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
UNOPENED = "its secrets were sealed with a key this platform does not have (SIGNALYARD_SECRET_KEYS)"
"""Why a message whose channel's secrets cannot be opened fails at once, rather than stopping every send after it."""
THREAD_REFERENCES = 10
"""A reply's References name at most this many of its thread's messages, the newest."""
Automatic = Literal["acknowledgement", "resolved_notice"]
AUTO_SUBMITTED: dict[Automatic, str] = {"acknowledgement": "auto-replied", "resolved_notice": "auto-generated"}
"""The automatic mail an email channel may send (the text is its setting of that name; unset, none is sent), and
its Auto-Submitted value (RFC 3834): an acknowledgement answers the customer's mail, a notice is made by an event."""
AUTOMATIC_WINDOW = timedelta(hours=1)
"""No address gets the same kind of automatic mail twice within this long (a loop with an auto-responder ends)."""
PROGRESS: dict[str, int] = {"queued": 0, "sent": 1, "delivered": 2, "read": 3, "failed": 4, "bounced": 4}
"""How far along each state is: a provider's report moves a message forward only (a late `sent` after `delivered`
changes nothing); `failed` and `bounced` end it."""


@dataclass(frozen=True, slots=True)
class Route:
    """How a reply reaches the customer: by which medium and channel, from which of its addresses, to whom."""

    medium: Medium
    channel_id: str
    sender: str
    recipient: str


@dataclass(frozen=True, slots=True)
class Claimed:
    """A due message and everything its sending needs, read when it was claimed."""

    id: str
    medium: Medium
    organization_id: str
    organization_name: str
    ticket_id: str
    ticket_number: int
    subject: str
    conversation_id: str | None
    """The reply it sends; None for a member's notice (storage/helpdesk/tickets.py, `notify`)."""
    body: str
    attachments: list[dict[str, Any]]
    sender: str
    recipient: str
    message_id: str | None
    in_reply_to: str | None
    references: list[str]
    attempts: int
    part: int = 0
    auto_submitted: str | None = None
    """The automatic mail's Auto-Submitted value; None for a person's reply."""
    media: list[str] = field(default_factory=list)
    """Signed URLs of the reply's stored files, for a provider that fetches them (an SMS reply's)."""
    customer_wrote_at: datetime | None = None
    """When the customer last wrote through the channel on this ticket (business and page messaging: the provider's
    windows count from it)."""
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    """The channel's secrets: its send credentials, an email channel's own SMTP server (`smtp_url`)."""


@dataclass(frozen=True, slots=True)
class Result:
    """What came of one attempt: sent (with what the provider said of it), or an error (`final`: not worth a retry)."""

    outbound_id: str
    error: str | None = None
    final: bool = False
    provider_message_id: str | None = None
    note: str | None = None


class NoRoute(Exception):
    """The ticket's customer cannot be reached: no channel to answer through, no send credentials on it, no address
    of theirs, or the provider's window for a reply has closed (409)."""


def replying(
    connection: Connection, cipher: Cipher, organization_id: str, ticket_id: str, now: datetime
) -> tuple[TicketRecord, Route | NoRoute] | None:
    """The organization's ticket and the way back to its customer (`route`), read in one statement; None when the
    organization has no such ticket."""
    row = connection.execute(_REPLYING, {"organization_id": organization_id, "id": ticket_id}).first()
    if row is None:
        return None
    ticket = tickets.record(row)
    try:
        return ticket, _way(connection, cipher, ticket, row, now)
    except NoRoute as nowhere:
        return ticket, nowhere


def route(connection: Connection, cipher: Cipher, ticket: TicketRecord, now: datetime) -> Route:
    """The way back to the customer: the channel their latest message on this ticket (or on a ticket merged into it)
    came through of those that can answer (ANSWERED_THROUGH), into the same conversation there; a caller's
    (voice) by SMS from the organization's oldest SMS channel when their number is known; else the organization's
    oldest email channel, to the customer's address. NoRoute, in words for the agent, when there is no such
    channel, it lacks its send credentials, the customer has no address on it, or the provider's window for a reply
    has closed."""
    row = connection.execute(_REPLYING, {"organization_id": ticket.organization_id, "id": ticket.id}).first()
    if row is None:
        raise NoRoute("The ticket is deleted")
    return _way(connection, cipher, ticket, row, now)


def _way(connection: Connection, cipher: Cipher, ticket: TicketRecord, latest: Any, now: datetime) -> Route:
    """`route`, from the row `_REPLYING` read."""
    provider = latest.provider
    if provider in MESSAGING:
        return _messaging(connection, cipher, latest, now=now)
    if provider in ("sms", "voice"):
        phone = latest.customer_phone
        if phone and provider == "sms":
            return _through(connection, cipher, "sms", phone, **_back_through(latest))
        if phone:
            try:
                return _through(connection, cipher, "sms", phone, organization_id=ticket.organization_id)
            except NoRoute:
                if ticket.customer_email is None:
                    raise
    if ticket.customer_email is None:
        raise NoRoute("The ticket's customer has no email address or number to send the reply to")
    if provider in EMAIL_PROVIDERS:
        return _through(connection, cipher, "email", ticket.customer_email, channel_id=latest.latest_channel_id)
    return _through(connection, cipher, "email", ticket.customer_email, organization_id=ticket.organization_id)


_MERGED, _LANDED, _LATEST = TICKETS.alias("merged"), TICKETS.alias("landed"), INBOUND.alias("latest")


def _on_ticket(ticket_id: Any) -> Any:
    """An inbound message on the ticket `ticket_id` (a parameter, or the outer query's ticket) or on one merged into
    it: the tickets found by their indexes, then their messages by theirs (an OR of the ticket and the merged ones'
    subquery made PostgreSQL scan every message)."""
    tickets_of = select(_MERGED.c.id).where(or_(_MERGED.c.id == ticket_id, _MERGED.c.merged_into_id == ticket_id))
    return INBOUND.c.ticket_id.in_(tickets_of.correlate(TICKETS))


_LATEST_ID = (
    select(INBOUND.c.id)
    .join(CHANNELS, CHANNELS.c.id == INBOUND.c.channel_id)
    .where(
        _on_ticket(TICKETS.c.id),
        among(INBOUND.c.provider, (*ANSWERED_THROUGH, "voice")),
        CHANNELS.c.deleted_at.is_(None),
    )
    .order_by(INBOUND.c.created_at.desc())
    .limit(1)
    .correlate(TICKETS)
    .scalar_subquery()
)
"""The customer's latest message on the ticket (or on one merged into it) through a live channel."""
_REPLYING = (
    tickets.selected()
    .add_columns(
        CUSTOMERS.c.phone.label("customer_phone"),
        _LATEST.c.provider,
        _LATEST.c.channel_id.label("latest_channel_id"),
        _LATEST.c.details,
        _LATEST.c.created_at.label("wrote_at"),
        _LANDED.c.thread_key.label("latest_thread_key"),
    )
    .outerjoin(_LATEST, _LATEST.c.id == _LATEST_ID)
    .outerjoin(_LANDED, _LANDED.c.id == _LATEST.c.ticket_id)
    .where(TICKETS.c.organization_id == bindparam("organization_id"), TICKETS.c.id == bindparam("id"))
    .where(TICKETS.c.deleted_at.is_(None))
)
"""A live ticket (tickets.get), with its customer's number and their latest message (`_LATEST_ID`) with the thread
key of the ticket it landed on."""


def _back_through(latest: Any) -> dict[str, Any]:
    """The channel the customer's message came through, from the address they wrote to (where the call names it)."""
    return {"channel_id": latest.latest_channel_id, "address": (latest.details or {}).get("to")}


def _messaging(connection: Connection, cipher: Cipher, latest: Any, *, now: datetime) -> Route:
    """Into the customer's conversation on the messaging channel they wrote through: their WhatsApp id, their
    page-scoped id, or the chat thread (`<chat channel>:<thread ts>`), each read from the thread key of the ticket
    their message landed on; refused once the provider's window for a reply has closed."""
    medium: Messaging = latest.provider
    thread = (latest.latest_thread_key or "").split(":", 2 if medium == "chat" else 1)
    recipient = thread[-1] if len(thread) > 1 else ""
    if not recipient:
        raise NoRoute(f"The customer's {NAMES[medium]} conversation the reply would go to is not known")
    waited = now - latest.wrote_at
    if medium == "business_messaging" and waited > BUSINESS_WINDOW:
        raise NoRoute(
            f"The customer last wrote on business messaging {_hours(waited)} ago: the provider takes a free-form reply "
            "only within 24 hours of the customer's latest message (template messages are not sent by this helpdesk); "
            "answer by another channel or wait for the customer to write again"
        )
    if medium == "page_messaging" and waited > HUMAN_AGENT_WINDOW:
        raise NoRoute(
            f"The customer last wrote on page messaging {_hours(waited)} ago: the provider takes a person's reply only "
            "within 7 days of the customer's latest message; answer by another channel or wait for the customer to "
            "write again"
        )
    return _through(connection, cipher, medium, recipient, **_back_through(latest))


def _hours(waited: timedelta) -> str:
    hours = int(waited.total_seconds() // 3600)
    return f"{hours} hours" if hours < 48 else f"{hours // 24} days"


@functools.cache
def _channel_query(medium: Medium, by_channel: bool, by_address: bool) -> Select[Any]:
    """The live channel of the medium by its id, or the organization's of its kind (the oldest first), and its first
    address of the medium's kind (or the one given): one statement per shape, built once."""
    query = (
        select(CHANNELS.c.id, CHANNELS.c.name, CHANNELS.c.secrets_sealed, CHANNELS.c.settings, ADDRESSES.c.address)
        .join(ADDRESSES, and_(ADDRESSES.c.channel_id == CHANNELS.c.id, ADDRESSES.c.kind == ADDRESS_KINDS[medium]))
        .where(CHANNELS.c.deleted_at.is_(None))
    )
    if by_channel:
        query = query.where(CHANNELS.c.id == bindparam("channel_id"))
    else:
        query = query.where(CHANNELS.c.organization_id == bindparam("organization_id"), CHANNELS.c.kind == medium)
    if by_address:
        query = query.where(ADDRESSES.c.address == bindparam("address"))
    return query.order_by(CHANNELS.c.created_at, CHANNELS.c.id, ADDRESSES.c.address).limit(1)


def _through(
    connection: Connection,
    cipher: Cipher,
    medium: Medium,
    recipient: str,
    *,
    channel_id: str | None = None,
    organization_id: str | None = None,
    address: str | None = None,
) -> Route:
    """The live channel `channel_id`, else the organization's oldest of the medium's kind, from its first address of
    the medium's kind (or `address`, where the customer wrote to it). Found once per round of replies (channels
    change in transactions of their own: storage/common/later.py)."""
    given = {"channel_id": channel_id, "organization_id": organization_id, "address": address}
    key = ("reply channel", medium, channel_id, organization_id, address)
    found_id, sender = later.once(connection, key, lambda: _sending_channel(connection, cipher, medium, given))
    return Route(medium, found_id, sender, recipient)


def _sending_channel(
    connection: Connection, cipher: Cipher, medium: Medium, given: dict[str, str | None]
) -> tuple[str, str]:
    """The channel's id and the address a reply goes from, or NoRoute (`_through`)."""
    query = _channel_query(medium, given["channel_id"] is not None, given["address"] is not None)
    found = connection.execute(query, {name: value for name, value in given.items() if value is not None}).first()
    if found is None:
        raise NoRoute(
            "The organization has no email channel to send the reply through: add one (Inbound channels)"
            if medium == "email"
            else f"The organization has no {NAMES[medium]} channel to send the reply through"
        )
    try:
        opened = _secrets(cipher, found.secrets_sealed)
    except InvalidToken:
        raise NoRoute(f"The {NAMES[medium]} channel {found.name!r}: {UNOPENED}") from None
    missing = [name for name in SEND_CREDENTIALS[medium] if name not in opened]
    if missing:
        raise NoRoute(
            f"The {NAMES[medium]} channel {found.name!r} has no send credentials ({', '.join(missing)}): "
            "set them (Changing a channel)"
        )
    return found.id, found.address


def _secrets(cipher: Cipher, sealed: bytes) -> dict[str, str]:
    opened: dict[str, str] = json.loads(unseal(cipher, sealed))
    return opened


def split(text: str, limit: int = SMS_MAX_CHARS) -> list[str]:
    """A text as messages of at most `limit` characters, cut at the last line break or space before the limit where
    there is one (the provider refuses a longer body)."""
    parts = []
    while len(text) > limit:
        cut = max(text.rfind("\n", 0, limit + 1), text.rfind(" ", 0, limit + 1))
        cut = cut if cut > limit // 2 else limit
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return [*parts, text]


def message_id(way: Route) -> str:
    """A new Message-ID (without its angle brackets) for a reply that goes by mail, at the sending address's domain."""
    return make_msgid(domain=way.sender.rpartition("@")[2] or None).strip("<>")


_INSERT = insert(OUTBOUND)


def enqueue(
    connection: Connection,
    ticket: TicketRecord,
    conversation_id: str,
    way: Route,
    body: str,
    *,
    provider_message_id: str | None,
    auto_submitted: str | None = None,
    now: datetime,
) -> Delivery:
    """The reply's outbound messages, due now: one, or for a text past its provider's PART_CHARS one per part (a mail's
    Message-ID is given: the conversation keeps it too, so that the customer's answer threads by it)."""
    parts = split(body, PART_CHARS[way.medium]) if way.medium in PART_CHARS else [body]
    rows = [
        {
            "id": new_uuid(),
            "organization_id": ticket.organization_id,
            "ticket_id": ticket.id,
            "conversation_id": conversation_id,
            "channel_id": way.channel_id,
            "medium": way.medium,
            "sender": way.sender,
            "recipient": way.recipient,
            "state": "queued",
            "provider_message_id": provider_message_id,
            "body": text,
            "part": part,
            "auto_submitted": auto_submitted,
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        }
        for part, text in enumerate(parts)
    ]
    later.insert(connection, _INSERT, rows)
    return Delivery(way.medium, way.recipient, "queued", provider_message_id, None, None, 0, now, len(parts), body)


_EARLIER = OUTBOUND.alias("earlier")
_IN_TURN = ~(
    select(_EARLIER.c.id)
    .where(
        _EARLIER.c.conversation_id == OUTBOUND.c.conversation_id,
        _EARLIER.c.part < OUTBOUND.c.part,
        among(_EARLIER.c.state, ("queued", "failed")),
    )
    .exists()
)
"""A part of a reply goes only once the parts before it are sent: the customer reads them in order."""
_ANY_DUE = (
    select(OUTBOUND.c.id)
    .where(OUTBOUND.c.state == "queued", OUTBOUND.c.next_attempt_at <= bindparam("now"), _IN_TURN)
    .limit(1)
)


def any_due(connection: Connection, now: datetime) -> bool:
    """Whether a message is due: a read, so that an idle sender's polls take no write lock."""
    return connection.execute(_ANY_DUE, {"now": now}).first() is not None


_DUE = (
    select(OUTBOUND.c.id)
    .where(OUTBOUND.c.state == "queued", OUTBOUND.c.next_attempt_at <= bindparam("now"), _IN_TURN)
    .order_by(OUTBOUND.c.next_attempt_at)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True)
)
"""Up to `limit` due messages; on PostgreSQL locked, skipping those another sender's claim holds."""
_CLAIM = (
    update(OUTBOUND)
    .where(OUTBOUND.c.id.in_(bindparam("ids", expanding=True)))
    .values(next_attempt_at=bindparam("until"))
    .returning(OUTBOUND.c.id)
)
"""The messages `_DUE` chose taken, by their ids alone: in the same transaction nothing changes them meanwhile (on
PostgreSQL `_DUE` locked them; on SQLite the transaction writes only if nothing was written since it read), and with
their state in the WHERE too, the planner's generic plan combines the ids with the due index's whole queue
(`_QUEUED`)."""


def claim_due(connection: Connection, *, now: datetime, lease: timedelta, limit: int) -> list[str]:
    """Up to `limit` queued messages due now (of a reply in several parts, the first not yet sent), each taken for
    `lease` (another sender takes it only after that): their ids. The write is these two statements (a writer holds
    SQLite's lock for them alone): what sending them needs is read after (`claimed`), outside it. (One UPDATE whose
    WHERE holds the LIMITed choice is no bound on PostgreSQL: its plan may run the choice again per row, and with
    SKIP LOCKED each run picks others.)"""
    due = list(connection.scalars(_DUE, {"now": now, "limit": limit}))
    if not due:
        return []
    return list(connection.scalars(_CLAIM, {"ids": due, "until": now + lease}))


def give_back(connection: Connection, ids: Sequence[str], *, now: datetime) -> None:
    """Claimed messages not sent, due again at once (a sender that stops gives back what it claimed ahead)."""
    connection.execute(
        update(OUTBOUND).where(OUTBOUND.c.id.in_(list(ids)), OUTBOUND.c.state == "queued").values(next_attempt_at=now)
    )


_CLAIMED = (
    select(
        OUTBOUND,
        ORGANIZATIONS.c.name.label("organization_name"),
        TICKETS.c.number,
        TICKETS.c.subject,
        func.coalesce(OUTBOUND.c.body, CONVERSATIONS.c.body).label("text"),
        CONVERSATIONS.c.attachments,
        CONVERSATIONS.c.created_at.label("written_at"),
        func.coalesce(OUTBOUND.c.sender, ADDRESSES.c.address).label("from_address"),
        CHANNELS.c.secrets_sealed,
    )
    .join(ORGANIZATIONS, ORGANIZATIONS.c.id == OUTBOUND.c.organization_id)
    .join(TICKETS, TICKETS.c.id == OUTBOUND.c.ticket_id)
    .outerjoin(CONVERSATIONS, CONVERSATIONS.c.id == OUTBOUND.c.conversation_id)
    .outerjoin(CHANNELS, CHANNELS.c.id == OUTBOUND.c.channel_id)
    .outerjoin(ADDRESSES, and_(ADDRESSES.c.channel_id == OUTBOUND.c.channel_id, ADDRESSES.c.kind == "email"))
    .where(OUTBOUND.c.id.in_(bindparam("ids", expanding=True)), OUTBOUND.c.state == "queued")
    .order_by(OUTBOUND.c.id, ADDRESSES.c.address)
)


def claimed(connection: Connection, cipher: Cipher, ids: Sequence[str]) -> tuple[list[Claimed], list[Result]]:
    """The claimed messages still queued, each with what sending it needs; and a final failure for each whose
    channel's secrets no key of this platform opens (no retry opens them)."""
    rows = connection.execute(_CLAIMED, {"ids": list(ids)}).all()
    threads = _threads(connection, [row for row in rows if row.medium == "email" and row.conversation_id is not None])
    found: dict[str, Claimed] = {}
    unopened: dict[str, Result] = {}
    for row in rows:
        if row.id in found or row.id in unopened:
            continue
        try:
            opened = _secrets(cipher, row.secrets_sealed) if row.secrets_sealed is not None else {}
        except InvalidToken:
            unopened[row.id] = Result(row.id, error=UNOPENED, final=True)
            continue
        thread = threads.get(row.id, [])
        wrote_at = _customer_wrote_at(connection, row.ticket_id, row.channel_id) if row.medium in MESSAGING else None
        found[row.id] = Claimed(
            id=row.id,
            medium=row.medium,
            organization_id=row.organization_id,
            organization_name=row.organization_name,
            ticket_id=row.ticket_id,
            ticket_number=row.number,
            subject=row.subject,
            conversation_id=row.conversation_id,
            body=row.text,
            attachments=list(row.attachments or []) if row.part == 0 else [],
            sender=row.from_address or "",
            recipient=row.recipient,
            message_id=row.provider_message_id if row.medium == "email" else None,
            in_reply_to=thread[-1] if thread else None,
            references=thread[-THREAD_REFERENCES:],
            attempts=row.attempts,
            part=row.part,
            auto_submitted=row.auto_submitted,
            customer_wrote_at=wrote_at,
            secrets=opened,
        )
    return list(found.values()), list(unopened.values())


def automatic(
    connection: Connection,
    ticket: TicketRecord,
    purpose: Automatic,
    *,
    channel_id: str,
    recorded: list[str],
    now: datetime,
) -> str | None:
    """The email channel's automatic mail of `purpose` to the ticket's customer, as a reply on the ticket (written
    with what caused it, in its unit of work), unless it must not go: the channel has no such text, or the customer's
    address is bouncing (or complained), no person's (wire/mailboxes.py), one of the organization's own, or got this
    kind of automatic mail within AUTOMATIC_WINDOW. What became of it, in words for the inbound event's outcome; None
    when the channel sends no such mail."""
    name = purpose.replace("_", " ")
    channel = connection.execute(_channel_query("email", True, False), {"channel_id": channel_id}).first()
    text = str((channel.settings or {}).get(purpose) or "") if channel is not None else ""
    if channel is None or not text.strip():
        return None
    address = ticket.customer_email
    why_not = _no_automatic_mail(connection, ticket, address, AUTO_SUBMITTED[purpose], now)
    if why_not or address is None:
        return f"no {name}: {why_not}"
    way = Route("email", channel_id, channel.address, address)
    sent_as = message_id(way)
    conversation = tickets.add_conversation(
        connection,
        ticket,
        author_type="agent",
        author_id=None,
        body=text,
        internal=False,
        message_id=sent_as,
        now=now,
        recorded=recorded,
    )
    enqueue(
        connection,
        ticket,
        conversation.id,
        way,
        text,
        provider_message_id=sent_as,
        auto_submitted=AUTO_SUBMITTED[purpose],
        now=now,
    )
    return f"{name} queued"


def _no_automatic_mail(
    connection: Connection, ticket: TicketRecord, address: str | None, auto_submitted: str, now: datetime
) -> str | None:
    """Why `address` must get no automatic mail of this kind now, or None."""
    if address is None:
        return "the customer has no address"
    if (whose := machine(address)) is not None:
        return f"{address} is {whose}"
    bouncing = connection.execute(select(CUSTOMERS.c.bouncing).where(CUSTOMERS.c.id == ticket.customer_id)).scalar()
    if bouncing:
        return f"{address} is marked bouncing"
    if address.lower() in (own.lower() for own in organization_addresses(connection, ticket.organization_id, "email")):
        return f"{address} is one of the organization's own addresses"
    later.flush_table(connection, OUTBOUND)  # an automatic mail queued earlier in this round counts
    recent = connection.execute(
        select(OUTBOUND.c.id)
        .where(
            OUTBOUND.c.organization_id == ticket.organization_id,
            OUTBOUND.c.recipient == address,
            OUTBOUND.c.created_at > now - AUTOMATIC_WINDOW,
            OUTBOUND.c.auto_submitted == auto_submitted,
        )
        .limit(1)
    ).first()
    if recent is not None:
        return f"{address} got one within the last hour"
    return None


_WROTE_AT = select(func.max(INBOUND.c.created_at)).where(
    _on_ticket(bindparam("ticket_id")), INBOUND.c.channel_id == bindparam("channel_id")
)


def _customer_wrote_at(connection: Connection, ticket_id: str, channel_id: str) -> datetime | None:
    """When the customer's latest message on the ticket (or one merged into it) came through the channel."""
    latest: datetime | None = connection.execute(_WROTE_AT, {"ticket_id": ticket_id, "channel_id": channel_id}).scalar()
    return latest


_MERGED_INTO = select(TICKETS.c.id, TICKETS.c.merged_into_id).where(
    TICKETS.c.merged_into_id.in_(bindparam("ids", expanding=True))
)


@functools.cache
def _message_ids(replies: int) -> Any:
    """For each of `replies` replies (by its place, `n`), the newest THREAD_REFERENCES Message-IDs of its tickets'
    messages written before it, oldest first: one statement for a round's replies (a statement a reply made a
    round's reads twice as many), built once per count. Each reply's tickets are a list (`threads_n`): with the
    merged tickets in a subquery, PostgreSQL read each ticket's every message to sort them, where by the ticket's
    id its index gives the newest ten."""
    arms = [
        select(
            select(literal(n).label("n"), CONVERSATIONS.c.message_id, CONVERSATIONS.c.created_at, CONVERSATIONS.c.id)
            .where(
                CONVERSATIONS.c.ticket_id.in_(bindparam(f"threads_{n}", expanding=True)),
                CONVERSATIONS.c.message_id.is_not(None),
                CONVERSATIONS.c.internal.is_(False),
                CONVERSATIONS.c.created_at <= bindparam(f"before_{n}"),
                CONVERSATIONS.c.id != bindparam(f"conversation_{n}"),
            )
            .order_by(CONVERSATIONS.c.created_at.desc(), CONVERSATIONS.c.id.desc())
            .limit(THREAD_REFERENCES)
            .subquery()
        )
        for n in range(replies)
    ]
    newest = (arms[0] if replies == 1 else union_all(*arms)).subquery()
    return select(newest.c.n, newest.c.message_id).order_by(newest.c.n, newest.c.created_at, newest.c.id)


def _threads(connection: Connection, replies: Sequence[Any]) -> dict[str, list[str]]:
    """For each mailed reply, the Message-IDs of its ticket's messages (its merged tickets' too) written before it,
    oldest first, the newest THREAD_REFERENCES of them (a ticket's thread grows without end; its References need
    not)."""
    if not replies:
        return {}
    merged: dict[str, list[str]] = {}
    for ticket in connection.execute(_MERGED_INTO, {"ids": list({row.ticket_id for row in replies})}):
        merged.setdefault(ticket.merged_into_id, []).append(ticket.id)
    given: dict[str, Any] = {}
    for n, row in enumerate(replies):
        given |= {
            f"threads_{n}": [row.ticket_id, *merged.get(row.ticket_id, [])],
            f"before_{n}": row.written_at,
            f"conversation_{n}": row.conversation_id,
        }
    threads: dict[int, list[str]] = {}
    for found in connection.execute(_message_ids(len(replies)), given):
        threads.setdefault(found.n, []).append(found.message_id)
    return {row.id: threads.get(n, []) for n, row in enumerate(replies)}


_QUEUED = (
    select(
        OUTBOUND.c.id,
        OUTBOUND.c.organization_id,
        OUTBOUND.c.ticket_id,
        OUTBOUND.c.conversation_id,
        OUTBOUND.c.medium,
        OUTBOUND.c.recipient,
        OUTBOUND.c.attempts,
        OUTBOUND.c.state,
    )
    .where(OUTBOUND.c.id.in_(bindparam("ids", expanding=True)))
    .with_for_update()
)
"""What recording results reads of the claimed messages, locked: the columns that the changes and their events need,
no more (it is read holding the write lock). It goes by the ids alone, and `record` checks the state in the rows: with
the state in the WHERE too, PostgreSQL's planner (its generic plan, or short of statistics on a young table)
combines the ids with the whole queue's entries of the due index, for this read and for the updates after it (0.17
ms a row's update where one by its id takes 0.04: bench/README.md, "Helpdesk replies")."""


def record(
    connection: Connection, results: Sequence[Result], *, now: datetime, sent_at: datetime | None = None
) -> None:
    """What came of each attempt: sent (at `sent_at`, when the round of sends began: before the provider took it),
    due again after its backoff, or `failed` once the retries are spent (or at once, for an error no retry mends);
    each change of state a `delivery_changed` event. A message no longer queued (erased with its customer, say) is
    left as it is. The rows are read and locked first, then written one UPDATE per change: the messages with the same
    change (a round's mails sent, say) together."""
    if not results:
        return
    given = {result.outbound_id: result for result in results}
    activity = []
    alike: dict[tuple[tuple[str, Any], ...], list[str]] = {}
    for row in connection.execute(_QUEUED, {"ids": list(given)}):
        if row.state != "queued":
            continue
        changes = _changes(given[row.id], row.attempts + 1, now=now, sent_at=sent_at)
        alike.setdefault(tuple(changes.items()), []).append(row.id)
        if changes.get("state", "queued") != "queued" and row.conversation_id is not None:
            activity.append(_changed(row, "queued", changes["state"], changes.get("last_error"), now))
    for shape, ids in alike.items():
        connection.execute(_recorded(tuple(name for name, _ in shape)), {"ids": ids, **dict(shape)})
    if activity:
        events.record_rows(connection, activity)


def _changes(result: Result, attempt: int, *, now: datetime, sent_at: datetime | None) -> dict[str, Any]:
    """The columns that the result of a message's `attempt`-th attempt sets, but its count of attempts (`_recorded`
    adds one)."""
    changes: dict[str, Any] = {"updated_at": now}
    if result.error is None:
        changes |= {
            "state": "sent",
            "next_attempt_at": None,
            "note": result.note,
            "last_error": None,
            "sent_at": sent_at or now,
        }
        if result.provider_message_id:
            changes["provider_message_id"] = result.provider_message_id
    elif result.final or attempt > len(RETRY_DELAYS):
        changes |= {"state": "failed", "next_attempt_at": None, "last_error": result.error}
    else:
        changes |= {"next_attempt_at": now + RETRY_DELAYS[attempt - 1], "last_error": result.error}
    return changes


def record_then_claim(
    connection: Connection,
    results: Sequence[Result],
    *,
    now: datetime,
    sent_at: datetime | None,
    lease: timedelta,
    limit: int,
) -> list[str]:
    """`record`, then `claim_due` of up to `limit` more (none when 0), in one transaction."""
    record(connection, results, now=now, sent_at=sent_at)
    return claim_due(connection, now=now, lease=lease, limit=limit) if limit else []


@functools.cache
def _recorded(names: tuple[str, ...]) -> Any:
    """The update of the messages `ids` (`record` read them queued and locked them) to the values `names`, their
    attempts counted: one statement per shape of change, built once."""
    return (
        update(OUTBOUND)
        .where(OUTBOUND.c.id.in_(bindparam("ids", expanding=True)))
        .values({**{name: bindparam(name) for name in names}, "attempts": OUTBOUND.c.attempts + 1})
    )


def resend(
    connection: Connection, organization_id: str, conversation_id: str, *, actor_id: str | None, now: datetime
) -> bool:
    """A failed reply's failed messages queued again, due now, their attempts counted anew; False when it has none."""
    rows = connection.execute(
        select(OUTBOUND).where(
            OUTBOUND.c.organization_id == organization_id,
            OUTBOUND.c.conversation_id == conversation_id,
            OUTBOUND.c.state == "failed",
        )
    ).all()
    if not rows:
        return False
    connection.execute(
        update(OUTBOUND)
        .where(OUTBOUND.c.id.in_([row.id for row in rows]), OUTBOUND.c.state == "failed")
        .values(state="queued", attempts=0, next_attempt_at=now, updated_at=now)
    )
    events.record_rows(connection, [_changed(row, "failed", "queued", None, now, actor_id=actor_id) for row in rows])
    return True


def report(
    connection: Connection,
    organization_id: str,
    provider_message_id: str,
    state: State,
    *,
    channel_id: str | None = None,
    medium: Medium | None = None,
    error: str | None,
    now: datetime,
) -> bool:
    """A provider's report of a message it took from the channel (or, for the mail sending provider, which reports
    on the organization's mail whichever channel it went from, of the medium): its state moves forward (never back:
    a report that comes late changes nothing), with the error it gave. False when no such message was sent, or the
    report tells nothing new."""
    later.flush_table(connection, OUTBOUND)
    where = [OUTBOUND.c.channel_id == channel_id] if channel_id is not None else []
    where += [OUTBOUND.c.medium == medium] if medium is not None else []
    rows = connection.execute(
        select(OUTBOUND).where(
            OUTBOUND.c.organization_id == organization_id,
            OUTBOUND.c.provider_message_id == provider_message_id,
            OUTBOUND.c.state != "queued",
            *where,
        )
    ).all()
    return _moved(connection, rows, state, error, now) > 0


def report_until(
    connection: Connection,
    organization_id: str,
    channel_id: str,
    recipient: str,
    state: State,
    *,
    until: datetime,
    now: datetime,
) -> int:
    """A provider's report by watermark (page messaging's `delivery` and `read`): every message the channel sent the
    recipient up to `until` has reached `state`; those it moves forward, how many."""
    later.flush_table(connection, OUTBOUND)
    rows = connection.execute(
        select(OUTBOUND).where(
            OUTBOUND.c.organization_id == organization_id,
            OUTBOUND.c.channel_id == channel_id,
            OUTBOUND.c.recipient == recipient,
            OUTBOUND.c.state.in_([name for name, step in PROGRESS.items() if 0 < step < PROGRESS[state]]),
            OUTBOUND.c.sent_at <= until,
        )
    ).all()
    return _moved(connection, rows, state, None, now)


def _moved(connection: Connection, rows: Sequence[Any], state: State, error: str | None, now: datetime) -> int:
    """The rows moved forward to `state` (those already as far, or ended, stay), each a `delivery_changed` event."""
    activity = []
    for row in rows:
        if PROGRESS[state] <= PROGRESS[row.state] or PROGRESS[row.state] == PROGRESS["failed"]:
            continue
        moved = connection.execute(
            update(OUTBOUND)
            .where(OUTBOUND.c.id == row.id, OUTBOUND.c.state == row.state)
            .values(state=state, last_error=error if error is not None else row.last_error, updated_at=now)
        ).rowcount
        if moved and row.conversation_id is not None:
            activity.append(_changed(row, row.state, state, error, now))
    if activity:
        events.record_rows(connection, activity)
    return len(activity)


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


def keep(connection: Connection, outbound_id: str, recipient: str, *, subject: str, body: str, now: datetime) -> bool:
    """A reply's mail kept in the kept-mail outbox (the embedded default's sending), while its message is still there:
    False, nothing kept, when an erasure deleted it meanwhile. The message's row stays locked until this commits, so
    an erasure deleting it waits, then forgets this mail with the rest (storage/helpdesk/orders.py `erase`)."""
    if connection.execute(select(OUTBOUND.c.id).where(OUTBOUND.c.id == outbound_id).with_for_update()).first() is None:
        return False
    mail.keep_mail(connection, SERVICE, recipient, subject=subject, body=body, now=now)
    return True
