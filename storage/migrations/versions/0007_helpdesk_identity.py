"""The helpdesk's identity: organizations, users, sessions and their refresh tokens, one-time links, kept mail; and
its activity log.

Revision ID: 0007
Revises: 0006
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "helpdesk_organizations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("plan", sa.String(length=16), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("slug"),
    )
    op.create_table(
        "helpdesk_users",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("email_verified", sa.Boolean(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("avatar_url", sa.Text(), nullable=True),
        sa.Column("organization_id", sa.String(length=36), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=True),
        sa.Column("preferences", sa.JSON(), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    op.create_table(
        "helpdesk_sessions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_because", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_helpdesk_sessions_user", "helpdesk_sessions", ["user_id"])
    op.create_table(
        "helpdesk_refresh_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=36), nullable=False),
        sa.Column("issued_at", UtcDateTime(), nullable=False),
        sa.Column("rotated_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_helpdesk_refresh_tokens_session", "helpdesk_refresh_tokens", ["session_id"])
    op.create_table(
        "helpdesk_links",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("redirect_to", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_table(
        "helpdesk_mails",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_helpdesk_mails_recipient", "helpdesk_mails", ["recipient", "created_at"])
    op.create_table(
        "helpdesk_events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("aggregate_type", sa.String(length=16), nullable=False),
        sa.Column("aggregate_id", sa.String(length=36), nullable=False),
        sa.Column("ticket_id", sa.String(length=36), nullable=True),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("event_data", sa.JSON(), nullable=False),
        sa.Column("actor_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("published_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_helpdesk_events_aggregate", "helpdesk_events", ["aggregate_type", "aggregate_id", "created_at", "id"]
    )
    op.create_index("ix_helpdesk_events_ticket", "helpdesk_events", ["ticket_id", "created_at", "id"])
    op.create_index("ix_helpdesk_events_unpublished", "helpdesk_events", ["published_at", "created_at"])


def downgrade() -> None:
    for table in (
        "helpdesk_events",
        "helpdesk_mails",
        "helpdesk_links",
        "helpdesk_refresh_tokens",
        "helpdesk_sessions",
        "helpdesk_users",
        "helpdesk_organizations",
    ):
        op.drop_table(table)
