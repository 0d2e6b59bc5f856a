"""The helpdesk's tables: identity, the domain, the activity log, inbound channels and their events. Identity's
secrets (refresh tokens, link tokens) are stored only as their SHA-256; single use and rotation are conditional
updates, so two requests racing on one token cannot both win."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Index, Integer, LargeBinary, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.models import Base


class Organization(Base):
    """A workspace: made by `auth.completeSignup`, its slug allocated unique."""

    __tablename__ = "helpdesk_organizations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    plan: Mapped[str] = mapped_column(String(16))
    last_ticket_number: Mapped[int] = mapped_column(Integer, default=0)
    """The organization's ticket counter: a create increments it in its own transaction."""
    billing_customer_id: Mapped[str | None] = mapped_column(String(255))
    """The payment provider's customer of a paid plan, made once and reused by every later checkout."""
    billing_status: Mapped[str] = mapped_column(String(16), default="none")
    """none (free plan) | incomplete (a paid plan whose checkout has not completed) | active | past_due | canceled"""
    billing_event_at: Mapped[datetime | None]
    """When the payment provider's event that set `billing_status` happened (its `created`): an older event that
    arrives later changes nothing."""
    created_at: Mapped[datetime]


class User(Base):
    """A person who signs in. `organization_id` and `role` are set when signup completes (the first user of an
    organization is its admin) or when they accept an invitation (as an agent)."""

    __tablename__ = "helpdesk_users"
    __table_args__ = (Index("ix_helpdesk_users_organization", "organization_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    """Lower-cased: one account per address."""
    email_verified: Mapped[bool] = mapped_column(Boolean)
    name: Mapped[str] = mapped_column(String(255))
    avatar_url: Mapped[str | None] = mapped_column(Text)
    organization_id: Mapped[str | None] = mapped_column(String(36))
    role: Mapped[str | None] = mapped_column(String(16))
    preferences: Mapped[dict[str, Any]] = mapped_column(JSON)
    password_hash: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    deactivated_at: Mapped[datetime | None]
    """An admin deactivated the member: their sessions ended then, and they cannot sign in or be assigned until an
    admin reactivates them."""


class Invitation(Base):
    """An admin's invitation to join the organization as an agent: a mailed single-use link, by its token's SHA-256,
    usable until `expires_at` unless revoked."""

    __tablename__ = "helpdesk_invitations"
    __table_args__ = (
        UniqueConstraint("token_hash", name="uq_helpdesk_invitations_token"),
        Index("ix_helpdesk_invitations_organization", "organization_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    email: Mapped[str] = mapped_column(String(320))
    """Lower-cased."""
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64))
    invited_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    accepted_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class Session(Base):
    """A signed-in browser: one family of refresh tokens. Revoked by sign-out, or when a rotated token of the family
    is presented again (a stolen copy at work): from then on neither the family's tokens nor its access tokens work."""

    __tablename__ = "helpdesk_sessions"
    __table_args__ = (Index("ix_helpdesk_sessions_user", "user_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    revoked_because: Mapped[str | None] = mapped_column(String(32))


class RefreshToken(Base):
    """One refresh token of a session, by its SHA-256. Only the newest of a family is current (`rotated_at` None)."""

    __tablename__ = "helpdesk_refresh_tokens"
    __table_args__ = (Index("ix_helpdesk_refresh_tokens_session", "session_id"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(36))
    issued_at: Mapped[datetime]
    rotated_at: Mapped[datetime | None]


class Event(Base):
    """The activity log (section 2.3, 6.2): one row per change, written in the change's own transaction. `ticket_id`
    ties a conversation's events to their ticket (`events.listForTicket`). It is also the outbox of the
    `helpdesk.activity.recorded` topic: `state` is `pending` until the relay (processors/helpdesk/activity.py) has the
    broker's acknowledgement, then `published`; `published_at` is its creation, the order the relay publishes in."""

    __tablename__ = "helpdesk_events"
    __table_args__ = (
        Index("ix_helpdesk_events_aggregate", "aggregate_type", "aggregate_id", "created_at", "id"),
        Index("ix_helpdesk_events_ticket", "ticket_id", "created_at", "id"),
        Index("ix_helpdesk_events_outbox", "state", "published_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    aggregate_type: Mapped[str] = mapped_column(String(16))
    aggregate_id: Mapped[str] = mapped_column(String(36))
    ticket_id: Mapped[str | None] = mapped_column(String(36))
    event_type: Mapped[str] = mapped_column(String(32))
    event_data: Mapped[dict[str, Any]] = mapped_column(JSON)
    actor_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime]
    state: Mapped[str] = mapped_column(String(16))
    """pending | published"""
    published_at: Mapped[datetime]


class Customer(Base):
    """A person who writes to an organization (a contact). One per address within an organization; one who wrote by
    SMS or a messaging app may have no address (their identities say who they are)."""

    __tablename__ = "helpdesk_customers"
    __table_args__ = (
        UniqueConstraint("organization_id", "email", name="uq_helpdesk_customers_email"),
        Index("ix_helpdesk_customers_listing", "organization_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    email: Mapped[str | None] = mapped_column(String(320))
    """Lower-cased."""
    name: Mapped[str] = mapped_column(String(255))
    phone: Mapped[str | None] = mapped_column(String(32))
    bouncing: Mapped[bool] = mapped_column(Boolean, default=False)
    """Mail to the address bounced: the helpdesk sends it nothing automatic."""
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]
    """An admin deleted the customer: their personal data was erased then, and they are listed nowhere."""


class CustomerIdentity(Base):
    """How a channel names a customer: an address, a phone number, a messaging app's id, a shop's customer id. One
    customer per identity within an organization, so a sender's messages find their customer again."""

    __tablename__ = "helpdesk_customer_identities"
    __table_args__ = (Index("ix_helpdesk_customer_identities_customer", "customer_id"),)

    organization_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    """email | phone | whatsapp | messenger | shop | marketplace | chat"""
    value: Mapped[str] = mapped_column(String(320), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(36))


class Ticket(Base):
    """A customer's request. `number` comes from the organization's counter (`last_ticket_number`, incremented in the
    creating transaction), so numbers have neither duplicates nor gaps."""

    __tablename__ = "helpdesk_tickets"
    __table_args__ = (
        UniqueConstraint("organization_id", "number", name="uq_helpdesk_tickets_number"),
        Index("ix_helpdesk_tickets_listing", "organization_id", "created_at", "id"),
        Index("ix_helpdesk_tickets_customer", "customer_id"),
        Index("ix_helpdesk_tickets_thread", "organization_id", "thread_key", "created_at"),
        # The tickets merged into one (a reply's route and thread read them), among the few merged.
        Index(
            "ix_helpdesk_tickets_merged_into",
            "merged_into_id",
            sqlite_where=text("merged_into_id IS NOT NULL"),
            postgresql_where=text("merged_into_id IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    number: Mapped[int] = mapped_column(Integer)
    subject: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    priority: Mapped[str] = mapped_column(String(16))
    channel: Mapped[str] = mapped_column(String(16))
    customer_id: Mapped[str] = mapped_column(String(36))
    assignee_id: Mapped[str | None] = mapped_column(String(36))
    tags: Mapped[list[str]] = mapped_column(JSON)
    thread_key: Mapped[str | None] = mapped_column(String(255))
    """For channels that thread by sender (SMS, messaging apps, chat): the channel and the sender, so that a sender's
    next message finds this ticket (`sms:<channel>:<number>`)."""
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    merged_into_id: Mapped[str | None] = mapped_column(String(36))
    """The ticket this one was merged into: it is closed, its conversations are the target's, and what would thread
    to it threads to the target."""
    deleted_at: Mapped[datetime | None]
    """Deleted: listed nowhere and absent to every read but the admins' of its activity log."""


class Conversation(Base):
    """One message on a ticket: a reply (from an agent or the customer) or an internal note (agents only)."""

    __tablename__ = "helpdesk_conversations"
    __table_args__ = (
        Index("ix_helpdesk_conversations_ticket", "ticket_id", "created_at", "id"),
        Index("ix_helpdesk_conversations_message_id", "organization_id", "message_id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    ticket_id: Mapped[str] = mapped_column(String(36))
    author_type: Mapped[str] = mapped_column(String(16))
    """agent | customer"""
    author_id: Mapped[str | None] = mapped_column(String(36))
    body: Mapped[str] = mapped_column(Text)
    internal: Mapped[bool] = mapped_column(Boolean)
    message_id: Mapped[str | None] = mapped_column(String(998))
    """The mail's Message-ID (an inbound mail's own; an agent's reply's, as it is mailed): how replies thread."""
    attachments: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    """What came with the message: `{name, content_type, size, blob}` (in the blob store) or `{url, content_type}`."""
    created_at: Mapped[datetime]
    edited_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]


class Upload(Base):
    """A file a member or a key uploaded to attach to a reply or note: kept in the blob store until a conversation names
    it (`attached_to`)."""

    __tablename__ = "helpdesk_uploads"
    __table_args__ = (Index("ix_helpdesk_uploads_organization", "organization_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    uploaded_by: Mapped[str] = mapped_column(String(40))
    """The member's user id, or the key's id."""
    name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(Integer)
    blob: Mapped[str] = mapped_column(String(1024))
    created_at: Mapped[datetime]
    attached_to: Mapped[str | None] = mapped_column(String(36))
    """The conversation it was attached to (once only)."""


class Channel(Base):
    """Where an organization's customers reach it: a mailbox, a phone number, a messaging app's number or page, a
    shop, a payments account, a notification topic. Its provider secrets are sealed (storage/common/secrets.py);
    `settings` holds the rest (an SMS auto-reply, allowed topics)."""

    __tablename__ = "helpdesk_channels"
    __table_args__ = (Index("ix_helpdesk_channels_organization", "organization_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    kind: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(255))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    secrets_sealed: Mapped[str] = mapped_column(Text)
    """The channel's secrets as one sealed JSON object."""
    created_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class ChannelAddress(Base):
    """What routes a provider's call to its channel: an inbound address, a phone number, an id. Each belongs to one
    channel at a time."""

    __tablename__ = "helpdesk_channel_addresses"
    __table_args__ = (Index("ix_helpdesk_channel_addresses_channel", "channel_id"),)

    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    """email | phone | phone_number_id | page_id | shop | account | topic_arn | team | token"""
    address: Mapped[str] = mapped_column(String(320), primary_key=True)
    channel_id: Mapped[str] = mapped_column(String(36))


SMS_ONLY = "provider = 'sms'"
"""The partial index's condition: a query that would use it says it too (a literal, not a bound parameter)."""


class CommerceInstall(Base):
    """An admin's connection of a commerce store under way (docs/helpdesk.md, "Commerce"): the app-install flow's
    `state`, stored as its SHA-256 only, bound to the session that started it and to the shop it was made for; spent by
    the first callback that presents it (a conditional update), and good for 10 minutes."""

    __tablename__ = "helpdesk_commerce_installs"
    __table_args__ = (Index("ix_helpdesk_commerce_installs_expires", "expires_at"),)

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    user_id: Mapped[str] = mapped_column(String(36))
    session_id: Mapped[str] = mapped_column(String(36))
    shop: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class InboundEvent(Base):
    """A provider's call as it came, stored (with its de-duplication key) before it is acknowledged; the outbox of
    `helpdesk.inbound.received`, and then the record of what it became."""

    __tablename__ = "helpdesk_inbound_events"
    __table_args__ = (
        UniqueConstraint("channel_id", "dedup_key", name="uq_helpdesk_inbound_events_dedup"),
        Index("ix_helpdesk_inbound_events_outbox", "state", "published_at"),
        Index("ix_helpdesk_inbound_events_listing", "organization_id", "created_at", "id"),
        Index("ix_helpdesk_inbound_events_ticket", "ticket_id", "created_at"),
        # A sender's earlier SMS to a channel (an SMS auto-reply goes only to the first after a quiet spell).
        Index(
            "ix_helpdesk_inbound_events_sms_sender",
            "channel_id",
            "partition_key",
            "created_at",
            sqlite_where=text(SMS_ONLY),
            postgresql_where=text(SMS_ONLY),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    channel_id: Mapped[str] = mapped_column(String(36))
    provider: Mapped[str] = mapped_column(String(32))
    """The endpoint and its kind: a `topics.helpdesk.inbound.Provider`."""
    dedup_key: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(255))
    body: Mapped[bytes] = mapped_column(LargeBinary)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    """What the call said outside its body that processing needs: its headers (a forwarder's envelope, a shop's
    topic), the routing address it came to."""
    partition_key: Mapped[str] = mapped_column(String(255))
    """What orders its processing: one sender's events are processed one after the other."""
    created_at: Mapped[datetime]
    state: Mapped[str] = mapped_column(String(16))
    """pending | processed"""
    published_at: Mapped[datetime]
    classification: Mapped[str | None] = mapped_column(String(32))
    ticket_id: Mapped[str | None] = mapped_column(String(36))
    conversation_id: Mapped[str | None] = mapped_column(String(36))
    outcome: Mapped[str | None] = mapped_column(Text)
    """What processing did with it, for people: `new ticket`, `threaded by In-Reply-To`, `delivery state`, ..."""
    processed_at: Mapped[datetime | None]


class Outbound(Base):
    """A reply on its way to the customer: the outbox of the reply sender (written with the reply, in its unit of
    work), then the record of its delivery. States only move forward: queued -> sent -> delivered -> read, or
    failed / bounced (docs/helpdesk.md, "Replies to customers")."""

    __tablename__ = "helpdesk_outbound"
    __table_args__ = (
        Index("ix_helpdesk_outbound_due", "state", "next_attempt_at"),
        Index("ix_helpdesk_outbound_conversation", "conversation_id"),
        Index("ix_helpdesk_outbound_provider_id", "organization_id", "provider_message_id"),
        Index("ix_helpdesk_outbound_recipient", "organization_id", "recipient", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    ticket_id: Mapped[str] = mapped_column(String(36))
    conversation_id: Mapped[str | None] = mapped_column(String(36))
    """The reply it sends; None for a member's notice (storage/helpdesk/tickets.py, `notify`)."""
    channel_id: Mapped[str | None] = mapped_column(String(36))
    """The channel it goes through; None for a member's notice, which goes from the helpdesk's own address."""
    medium: Mapped[str] = mapped_column(String(32))
    """How it goes: `email`, `sms`, `business_messaging`, `page_messaging` or `chat`."""
    sender: Mapped[str | None] = mapped_column(String(320))
    """The channel's address or number it goes from."""
    recipient: Mapped[str] = mapped_column(String(320))
    state: Mapped[str] = mapped_column(String(16))
    """queued | sent | delivered | read | failed | bounced"""
    provider_message_id: Mapped[str | None] = mapped_column(String(998))
    """What the provider calls it: a mail's Message-ID (ours, made when it is queued), an SMS's sid, ..."""
    last_error: Mapped[str | None] = mapped_column(Text)
    note: Mapped[str | None] = mapped_column(Text)
    """What people should know of a send that went well: `kept locally` when no SMTP server is configured."""
    body: Mapped[str | None] = mapped_column(Text)
    """The text it sends (or sent): what the customer got, whatever becomes of the reply afterwards."""
    part: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Its place among the messages of a reply too long for one (an SMS past 1,600 characters), from 0."""
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None]
    """When it is due (queued: to be sent; claimed: when its lease runs out); None once it is no longer queued."""
    sent_at: Mapped[datetime | None]
    """When the provider took it (a page's delivery and read reports name a time: every message sent up to it)."""
    auto_submitted: Mapped[str | None] = mapped_column(String(16))
    """The helpdesk's automatic mail (RFC 3834): `auto-replied` (an acknowledgement), `auto-generated` (a notice);
    None for a person's reply."""
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Call(Base):
    """A voice provider's call, its state as its events tell it, and its voicemail: the audio and the transcription,
    which make one ticket once both are there, in whatever order the events came, or once the call has been quiet
    for the wait (processors/helpdesk/inbound/voice.py)."""

    __tablename__ = "helpdesk_calls"
    __table_args__ = (
        UniqueConstraint("channel_id", "call_id", name="uq_helpdesk_calls_call"),
        # Voicemails still without their ticket, by their call's last event: the processors' wait runs out.
        Index("ix_helpdesk_calls_voicemail_waiting", "voicemail", "ticket_id", "updated_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    channel_id: Mapped[str] = mapped_column(String(36))
    call_id: Mapped[str] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(32))
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    voicemail: Mapped[bool] = mapped_column(Boolean, default=False)
    recording_url: Mapped[str | None] = mapped_column(Text)
    transcription: Mapped[str | None] = mapped_column(Text)
    ticket_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Order(Base):
    """A shop's or marketplace's order (or return) as its events tell it, attached to its customer."""

    __tablename__ = "helpdesk_orders"
    __table_args__ = (
        UniqueConstraint("channel_id", "order_id", name="uq_helpdesk_orders_order"),
        Index("ix_helpdesk_orders_customer", "customer_id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    channel_id: Mapped[str] = mapped_column(String(36))
    customer_id: Mapped[str | None] = mapped_column(String(36))
    order_id: Mapped[str] = mapped_column(String(128))
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


SEARCHED = {
    "helpdesk_tickets": ("subject",),
    "helpdesk_conversations": ("body",),
    "helpdesk_customers": ("name", "email", "phone"),
}
"""What full-text search indexes (storage/helpdesk/search.py): a table and its columns. The index is made by migration
0014 in each database's own terms, outside these models: on SQLite an FTS5 table `<table>_search` (with its shadow
tables `<table>_search_data|idx|docsize|config`) kept by triggers, and `helpdesk_search_organizations`; on
PostgreSQL a generated column `search_vector`, a GIN index `ix_<table>_search`, and
`ix_helpdesk_conversations_search_recent`."""
SEARCH_INDEXES = {
    *(f"ix_{table}_search" for table in SEARCHED),
    "ix_helpdesk_conversations_search_recent",
}
SEARCH_TABLES = {
    "helpdesk_search_organizations",
    *(f"{table}_search{shadow}" for table in SEARCHED for shadow in ("", "_data", "_idx", "_docsize", "_config")),
}
"""SQLite's: each FTS5 table and its shadow tables, and the organizations' numbers in the index's rowids."""
