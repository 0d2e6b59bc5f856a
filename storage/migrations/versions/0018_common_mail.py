"""Mailed links and kept mail belong to every service that mails people (photo's dashboard signs in by link too): the
helpdesk's `helpdesk_links` and `helpdesk_mails` become `mail_links` and `kept_mails`, each row saying its service.

Revision ID: 0018
Revises: 0017
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "mail_links",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("service", sa.String(length=16), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("redirect_to", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_table(
        "kept_mails",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("service", sa.String(length=16), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_kept_mails_recipient", "kept_mails", ["service", "recipient", "created_at"])
    op.execute(
        "INSERT INTO mail_links (token_hash, service, purpose, email, redirect_to, created_at, expires_at, used_at) "
        "SELECT token_hash, 'helpdesk', purpose, email, redirect_to, created_at, expires_at, used_at FROM helpdesk_links"
    )
    op.execute(
        "INSERT INTO kept_mails (id, service, recipient, subject, body, created_at) "
        "SELECT id, 'helpdesk', recipient, subject, body, created_at FROM helpdesk_mails"
    )
    op.drop_index("ix_helpdesk_mails_recipient", table_name="helpdesk_mails")
    op.drop_table("helpdesk_mails")
    op.drop_table("helpdesk_links")


def downgrade() -> None:
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
    op.execute(
        "INSERT INTO helpdesk_links (token_hash, purpose, email, redirect_to, created_at, expires_at, used_at) "
        "SELECT token_hash, purpose, email, redirect_to, created_at, expires_at, used_at FROM mail_links "
        "WHERE service = 'helpdesk'"
    )
    op.execute(
        "INSERT INTO helpdesk_mails (id, recipient, subject, body, created_at) "
        "SELECT id, recipient, subject, body, created_at FROM kept_mails WHERE service = 'helpdesk'"
    )
    op.drop_index("ix_kept_mails_recipient", table_name="kept_mails")
    op.drop_table("kept_mails")
    op.drop_table("mail_links")
