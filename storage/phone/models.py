"""The phone service's tables. Unique constraints and conditional updates carry the no-loss, no-double-charge rules."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, LargeBinary, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.models import Base


class Tenant(Base):
    __tablename__ = "phone_tenants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16), default="active")
    allowed_skus: Mapped[list[str]] = mapped_column(JSON)
    spend_cap_microdollars: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime]


class Price(Base):
    __tablename__ = "phone_prices"

    tenant_id: Mapped[str] = mapped_column(ForeignKey("phone_tenants.id"), primary_key=True)
    sku: Mapped[str] = mapped_column(String(32), primary_key=True)
    unit_price_microdollars: Mapped[int] = mapped_column(BigInteger)


class PhoneRequest(Base):
    """One accepted verify request: the outbox row the gateway writes before publishing."""

    __tablename__ = "phone_requests"
    __table_args__ = (
        Index("uq_phone_requests_idempotency", "tenant_id", "environment", "idempotency_key", unique=True),
        # A number with a check still open (or awaiting an operator) cannot be started again under a fresh key.
        Index(
            "uq_phone_requests_open_number",
            "tenant_id",
            "environment",
            "phone_e164",
            unique=True,
            sqlite_where=text("state IN ('pending', 'pending_reconciliation')"),
            postgresql_where=text("state IN ('pending', 'pending_reconciliation')"),
        ),
        Index("ix_phone_requests_sweep", "state", "published_at"),
        # Free re-check candidates are looked up by number for a whole batch at once.
        Index("ix_phone_requests_number_billable", "phone_e164", "billable_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(36))
    environment: Mapped[str] = mapped_column(String(8))
    idempotency_key: Mapped[str] = mapped_column(String(128))
    body_hash: Mapped[str] = mapped_column(String(64))
    phone_e164: Mapped[str] = mapped_column(String(16))
    subject_type: Mapped[str] = mapped_column(String(16))
    supplied_name: Mapped[str] = mapped_column(Text)
    reference_id: Mapped[str | None] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime]
    published_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    billable_at: Mapped[datetime | None]
    """Set when this request was a billable completed check: the anchor of the free re-check window."""
    result: Mapped[bytes | None] = mapped_column(LargeBinary)
    """The VerifyResult JSON exactly as the API returns it."""
    lookup: Mapped[bytes | None] = mapped_column(LargeBinary)
    """The provider's answer (CarrierAnswer JSON) and when it was attempted, reused by free re-checks."""
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    billing_disposition: Mapped[str | None] = mapped_column(String(32))


class LedgerEntry(Base):
    """Exactly one row per finished request; its primary key is the request id."""

    __tablename__ = "phone_ledger"
    __table_args__ = (Index("ix_ledger_usage", "tenant_id", "environment", "created_at"),)

    request_id: Mapped[str] = mapped_column(ForeignKey("phone_requests.id"), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(36))
    environment: Mapped[str] = mapped_column(String(8))
    sku: Mapped[str] = mapped_column(String(32))
    disposition: Mapped[str] = mapped_column(String(32))
    unit_price_microdollars: Mapped[int] = mapped_column(BigInteger)
    cache_hit: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]


class MonthlySpend(Base):
    """Billable amount per tenant, environment and UTC month, kept beside the ledger for the spend cap."""

    __tablename__ = "phone_monthly_spend"

    tenant_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    environment: Mapped[str] = mapped_column(String(8), primary_key=True)
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    amount_microdollars: Mapped[int] = mapped_column(BigInteger)
