"""The photo service's tables. Unique constraints and conditional updates carry the no-loss, no-double-charge rules."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, Index, Integer, LargeBinary, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.models import Base


class Customer(Base):
    """A customer account: its keys and webhook endpoints hang off it; its plan caps live verifications a month."""

    __tablename__ = "photo_customers"
    __table_args__ = (Index("uq_photo_customers_email", "email", unique=True),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    email: Mapped[str | None] = mapped_column(String(320))
    """The address the dashboard's sign-in links go to (lower case); None for an account an operator made, which signs
    in to the dashboard with a key."""
    plan: Mapped[str] = mapped_column(String(32))
    monthly_cap: Mapped[int] = mapped_column(Integer)
    """Live verifications included per calendar month (UTC); sandbox verifications never count."""
    subscription_active: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]


class MonthlyUsage(Base):
    """Live verifications charged per customer and month: the cap is a conditional increment of this row."""

    __tablename__ = "photo_monthly_usage"

    customer_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    """YYYY-MM (UTC)."""
    used: Mapped[int] = mapped_column(Integer)


class Verification(Base):
    """One verify call: the outbox row the gateway writes (with the stored image's key) before publishing."""

    __tablename__ = "photo_verifications"
    __table_args__ = (
        Index("uq_photo_verifications_idempotency", "customer_id", "environment", "idempotency_key", unique=True),
        Index("ix_photo_verifications_sweep", "state", "published_at"),
        Index("ix_photo_verifications_history", "customer_id", "environment", "created_at"),
        Index("ix_photo_verifications_retention", "created_at"),
        Index("ix_photo_verifications_queue", "customer_id", "environment", "state", "is_compliant", "confidence"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(40))
    environment: Mapped[str] = mapped_column(String(8))
    key_id: Mapped[str] = mapped_column(String(40))
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    body_hash: Mapped[str] = mapped_column(String(64))
    policy: Mapped[str] = mapped_column(String(32))
    image_key: Mapped[str | None] = mapped_column(String(200))
    """Where the image is in the blob store; None once retention deleted it."""
    image_type: Mapped[str] = mapped_column(String(32))
    metadata_json: Mapped[bytes | None] = mapped_column(LargeBinary)
    state: Mapped[str] = mapped_column(String(16))
    """pending -> completed | failed (failed: the image could not be judged; a retry with the same key re-runs)."""
    charged: Mapped[bool] = mapped_column(Boolean)
    """True when this verification counts against the monthly cap (live keys); refunded if it fails."""
    created_at: Mapped[datetime]
    published_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    verdict: Mapped[bytes | None] = mapped_column(LargeBinary)
    """The Verdict JSON as judged (a review changes `is_compliant` and `category` in it, and sets `review`)."""
    review: Mapped[bytes | None] = mapped_column(LargeBinary)
    """The latest human review (topics.photo.Review); None: not reviewed, so in the review queue once completed."""
    is_compliant: Mapped[bool | None] = mapped_column(Boolean)
    confidence: Mapped[float | None] = mapped_column(Float)
    """The verdict's, as judged, beside it: the review queue lists the non-compliant and the least certain first."""
    error: Mapped[str | None] = mapped_column(Text)
    preview: Mapped[bool] = mapped_column(Boolean, server_default=false())
    """A self-inspection's preview: judged for its recipient's feedback only (never charged, listed or announced)."""


class Inspection(Base):
    """A self-inspection session: a single-use link (by its token's SHA-256) for one recipient's photo."""

    __tablename__ = "photo_inspections"
    __table_args__ = (
        Index("uq_photo_inspections_token", "token_hash", unique=True),
        Index("ix_photo_inspections_owner", "customer_id", "environment", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(40))
    environment: Mapped[str] = mapped_column(String(8))
    key_id: Mapped[str] = mapped_column(String(40))
    """The key that made it: its submission's verification is that key's."""
    policy: Mapped[str] = mapped_column(String(32))
    reference: Mapped[str | None] = mapped_column(String(255))
    metadata_json: Mapped[bytes | None] = mapped_column(LargeBinary)
    token_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    """open -> submitted | cancelled (an open one past `expires_at` reads as expired)."""
    previews: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    submitted_at: Mapped[datetime | None]
    cancelled_at: Mapped[datetime | None]
    verification_id: Mapped[str | None] = mapped_column(String(40))


class DashboardSession(Base):
    """A browser signed in to the dashboard, by its cookie's SHA-256: made by a mailed link or by a `full` key entered
    once (`key_id`), which it lasts no longer than. `environment`: the keys and verifications it shows."""

    __tablename__ = "photo_sessions"
    __table_args__ = (Index("ix_photo_sessions_customer", "customer_id"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(40))
    key_id: Mapped[str | None] = mapped_column(String(40))
    environment: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
