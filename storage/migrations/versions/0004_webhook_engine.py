"""The shared webhook engine: endpoints, the events outbox, deliveries unique per (event, endpoint), attempts.

Revision ID: 0004
Revises: 0003
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _auto_id() -> sa.types.TypeEngine:
    # SQLite auto-increments only an INTEGER PRIMARY KEY; PostgreSQL gets a BIGSERIAL.
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("service", sa.String(length=16), nullable=False),
        sa.Column("owner_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("secret_encrypted", sa.String(length=512), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", storage.common.models.UtcDateTime(), nullable=False),
        sa.Column("disabled_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.Column("deleted_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.Column("last_delivered_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_endpoints_owner", "webhook_endpoints", ["service", "owner_id"])
    op.create_table(
        "webhook_events",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("service", sa.String(length=16), nullable=False),
        sa.Column("owner_id", sa.String(length=40), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("created_at", storage.common.models.UtcDateTime(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("published_at", storage.common.models.UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_events_state", "webhook_events", ["state", "published_at"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", _auto_id(), autoincrement=True, nullable=False),
        sa.Column("service", sa.String(length=16), nullable=False),
        sa.Column("event_id", sa.String(length=40), nullable=False),
        sa.Column("endpoint_id", sa.String(length=40), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.Column("created_at", storage.common.models.UtcDateTime(), nullable=False),
        sa.Column("finished_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["endpoint_id"], ["webhook_endpoints.id"]),
        sa.ForeignKeyConstraint(["event_id"], ["webhook_events.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("event_id", "endpoint_id", name="uq_webhook_deliveries_event_endpoint"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["service", "next_attempt_at"])
    op.create_index("ix_webhook_deliveries_endpoint", "webhook_deliveries", ["endpoint_id", "state"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", _auto_id(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", _auto_id(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("attempted_at", storage.common.models.UtcDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(length=500), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["delivery_id"], ["webhook_deliveries.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_attempts_delivery", "webhook_attempts", ["delivery_id"])


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_events")
    op.drop_table("webhook_endpoints")
