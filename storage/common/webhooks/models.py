"""The tables of every service's webhooks: endpoints, events (the outbox of the fan-out), deliveries and attempts."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.models import Base

ACTIVE = "active"
DISABLED = "disabled"
"""The status of an endpoint its owner disabled (update with enabled=false); a profile's failure status may be the
same word."""
DELIVERY_STATES = ("pending", "delivered", "failed", "canceled")
"""pending: due at `next_attempt_at` (or leased until then); delivered: a 2xx came back; failed: every attempt of the
schedule failed; canceled: its endpoint was deleted or disabled before it was delivered."""
RESPONSE_BODY_LIMIT = 1024
"""Bytes of a receiver's response body kept in the attempt log."""

AutoId = BigInteger().with_variant(Integer(), "sqlite")
"""An auto-incrementing key on both backends (SQLite only auto-increments an INTEGER PRIMARY KEY)."""


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_owner", "service", "owner_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(String(40))
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    """`active`; `disabled` when its owner disabled it; the profile's `disabled_status` once a delivery failed its
    whole retry schedule. Only an active endpoint gets deliveries."""
    secret_encrypted: Mapped[str | None] = mapped_column(String(512))
    """The signing secret as a Fernet token; only the engine decrypts it, to sign. NULL: deliveries are unsigned (a
    profile whose secret is optional, created without one)."""
    secret_sha256: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime]
    disabled_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    last_delivered_at: Mapped[datetime | None]
    """When a delivery last got a 2xx: an endpoint that answered within a failed delivery's window stays active."""


class WebhookEvent(Base):
    """The outbox of webhook events: written `pending` by the service, `fanned_out` once its deliveries exist (at once
    when no endpoint subscribes to it)."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_state", "state", "published_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(String(40))
    type: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    body: Mapped[bytes] = mapped_column(LargeBinary)
    """The exact bytes every endpoint receives (and that are signed)."""
    state: Mapped[str] = mapped_column(String(16))
    published_at: Mapped[datetime]


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "endpoint_id", name="uq_webhook_deliveries_event_endpoint"),
        Index("ix_webhook_deliveries_due", "service", "next_attempt_at"),
        Index("ix_webhook_deliveries_endpoint", "endpoint_id", "state"),
    )

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    service: Mapped[str] = mapped_column(String(16))
    event_id: Mapped[str] = mapped_column(String(40), ForeignKey("webhook_events.id"))
    endpoint_id: Mapped[str] = mapped_column(String(40), ForeignKey("webhook_endpoints.id"))
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    """Attempts claimed so far; a claim increments it, so a result carries the attempt it belongs to."""
    next_attempt_at: Mapped[datetime | None]
    """When it is due (or when the lease of the member sending it runs out); NULL once final."""
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery", "delivery_id"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(AutoId, ForeignKey("webhook_deliveries.id"))
    attempt: Mapped[int] = mapped_column(Integer)
    attempted_at: Mapped[datetime]
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(500))
    duration_ms: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(Text)
    """The first RESPONSE_BODY_LIMIT bytes of the receiver's answer, decoded leniently."""


ENDPOINTS = cast(Table, WebhookEndpoint.__table__)
EVENTS = cast(Table, WebhookEvent.__table__)
DELIVERIES = cast(Table, WebhookDelivery.__table__)
ATTEMPTS = cast(Table, WebhookAttempt.__table__)
