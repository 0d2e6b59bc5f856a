"""The helpdesk as a team works it: members deactivated and invited, tickets merged and deleted, replies edited and
deleted, customers deleted, and files agents upload to attach to their replies.

Revision ID: 0013
Revises: 0012
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    with op.batch_alter_table("helpdesk_users") as table:
        table.add_column(sa.Column("deactivated_at", UtcDateTime(), nullable=True))
    op.create_index("ix_helpdesk_users_organization", "helpdesk_users", ["organization_id", "created_at"])
    op.create_table(
        "helpdesk_invitations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("invited_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("accepted_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash", name="uq_helpdesk_invitations_token"),
    )
    op.create_index("ix_helpdesk_invitations_organization", "helpdesk_invitations", ["organization_id", "created_at"])
    with op.batch_alter_table("helpdesk_tickets") as table:
        table.add_column(sa.Column("merged_into_id", sa.String(length=36), nullable=True))
        table.add_column(sa.Column("deleted_at", UtcDateTime(), nullable=True))
    with op.batch_alter_table("helpdesk_conversations") as table:
        table.add_column(sa.Column("edited_at", UtcDateTime(), nullable=True))
        table.add_column(sa.Column("deleted_at", UtcDateTime(), nullable=True))
    with op.batch_alter_table("helpdesk_customers") as table:
        table.add_column(sa.Column("deleted_at", UtcDateTime(), nullable=True))
    op.create_table(
        "helpdesk_uploads",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("uploaded_by", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("content_type", sa.String(length=255), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("blob", sa.String(length=1024), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("attached_to", sa.String(length=36), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_helpdesk_uploads_organization", "helpdesk_uploads", ["organization_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_helpdesk_uploads_organization", table_name="helpdesk_uploads")
    op.drop_table("helpdesk_uploads")
    with op.batch_alter_table("helpdesk_customers") as table:
        table.drop_column("deleted_at")
    with op.batch_alter_table("helpdesk_conversations") as table:
        table.drop_column("deleted_at")
        table.drop_column("edited_at")
    with op.batch_alter_table("helpdesk_tickets") as table:
        table.drop_column("deleted_at")
        table.drop_column("merged_into_id")
    op.drop_index("ix_helpdesk_invitations_organization", table_name="helpdesk_invitations")
    op.drop_table("helpdesk_invitations")
    op.drop_index("ix_helpdesk_users_organization", table_name="helpdesk_users")
    with op.batch_alter_table("helpdesk_users") as table:
        table.drop_column("deactivated_at")
