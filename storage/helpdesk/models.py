"""The helpdesk's identity tables. Secrets (refresh tokens, link tokens) are stored only as their SHA-256; single use
and rotation are conditional updates, so two requests racing on one token cannot both win."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Index, Integer, String, Text, UniqueConstraint
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
    """none (free plan) | incomplete (a paid plan whose checkout has not completed) | active"""
    created_at: Mapped[datetime]


class User(Base):
    """A person who signs in. `organization_id` and `role` are set when signup completes (the first user of an
    organization is its admin)."""

    __tablename__ = "helpdesk_users"

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


class Link(Base):
    """A sign-in or password-reset link, by its token's SHA-256: usable once, until `expires_at`."""

    __tablename__ = "helpdesk_links"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    purpose: Mapped[str] = mapped_column(String(16))
    """sign_in | reset"""
    email: Mapped[str] = mapped_column(String(320))
    redirect_to: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class Mail(Base):
    """A mail the helpdesk sent or, with no SMTP server configured, kept here instead (`signalyard helpdesk mails`
    prints them)."""

    __tablename__ = "helpdesk_mails"
    __table_args__ = (Index("ix_helpdesk_mails_recipient", "recipient", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    recipient: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class Event(Base):
    """The activity log (section 2.3, 6.2): one row per change, written in the change's own transaction. `ticket_id`
    ties a conversation's events to their ticket (`events.listForTicket`). It is also the outbox of the
    `helpdesk.activity.recorded` topic: `state` is `pending` until the relay (processors/helpdesk/activity.py) has the
    broker's acknowledgement, then `published`; `published_at` is when the relay may take it: its creation, then the
    end of a claim's lease (a relay that dies after its claim leaves the row to be taken again then)."""

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
    """A person who writes to an organization (a contact). One per address within an organization."""

    __tablename__ = "helpdesk_customers"
    __table_args__ = (
        UniqueConstraint("organization_id", "email", name="uq_helpdesk_customers_email"),
        Index("ix_helpdesk_customers_listing", "organization_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    email: Mapped[str] = mapped_column(String(320))
    """Lower-cased."""
    name: Mapped[str] = mapped_column(String(255))
    phone: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Ticket(Base):
    """A customer's request. `number` comes from the organization's counter (`last_ticket_number`, incremented in the
    creating transaction), so numbers have neither duplicates nor gaps."""

    __tablename__ = "helpdesk_tickets"
    __table_args__ = (
        UniqueConstraint("organization_id", "number", name="uq_helpdesk_tickets_number"),
        Index("ix_helpdesk_tickets_listing", "organization_id", "created_at", "id"),
        Index("ix_helpdesk_tickets_customer", "customer_id"),
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
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Conversation(Base):
    """One message on a ticket: a reply (from an agent or the customer) or an internal note (agents only)."""

    __tablename__ = "helpdesk_conversations"
    __table_args__ = (Index("ix_helpdesk_conversations_ticket", "ticket_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    ticket_id: Mapped[str] = mapped_column(String(36))
    author_type: Mapped[str] = mapped_column(String(16))
    """agent | customer"""
    author_id: Mapped[str | None] = mapped_column(String(36))
    body: Mapped[str] = mapped_column(Text)
    internal: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
