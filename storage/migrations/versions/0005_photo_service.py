"""The photo service: customers, monthly usage, verifications; keys learn when they were last used and their own
rate limits.

Revision ID: 0005
Revises: 0004
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.add_column(sa.Column("last_used_at", UtcDateTime(), nullable=True))
        batch_op.add_column(sa.Column("rate_limits", sa.JSON(), nullable=True))
    op.create_table(
        "photo_customers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("plan", sa.String(length=32), nullable=False),
        sa.Column("monthly_cap", sa.Integer(), nullable=False),
        sa.Column("subscription_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "photo_monthly_usage",
        sa.Column("customer_id", sa.String(length=40), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("customer_id", "month"),
    )
    op.create_table(
        "photo_verifications",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("customer_id", sa.String(length=40), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("policy", sa.String(length=32), nullable=False),
        sa.Column("image_key", sa.String(length=200), nullable=True),
        sa.Column("image_type", sa.String(length=32), nullable=False),
        sa.Column("metadata_json", sa.LargeBinary(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("charged", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("published_at", UtcDateTime(), nullable=False),
        sa.Column("completed_at", UtcDateTime(), nullable=True),
        sa.Column("verdict", sa.LargeBinary(), nullable=True),
        sa.Column("review", sa.LargeBinary(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_photo_verifications_idempotency",
        "photo_verifications",
        ["customer_id", "environment", "idempotency_key"],
        unique=True,
    )
    op.create_index("ix_photo_verifications_sweep", "photo_verifications", ["state", "published_at"])
    op.create_index(
        "ix_photo_verifications_history", "photo_verifications", ["customer_id", "environment", "created_at"]
    )
    op.create_index("ix_photo_verifications_retention", "photo_verifications", ["created_at"])


def downgrade() -> None:
    op.drop_table("photo_verifications")
    op.drop_table("photo_monthly_usage")
    op.drop_table("photo_customers")
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.drop_column("rate_limits")
        batch_op.drop_column("last_used_at")
