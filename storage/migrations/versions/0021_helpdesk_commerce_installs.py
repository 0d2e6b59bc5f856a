"""The helpdesk's commerce store connections under way: the app-install flow's state, hashed, bound to a session and
a shop, single use.

Revision ID: 0021
Revises: 0020
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "helpdesk_commerce_installs",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("session_id", sa.String(length=36), nullable=False),
        sa.Column("shop", sa.String(length=255), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("state_hash"),
    )
    op.create_index("ix_helpdesk_commerce_installs_expires", "helpdesk_commerce_installs", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_helpdesk_commerce_installs_expires", table_name="helpdesk_commerce_installs")
    op.drop_table("helpdesk_commerce_installs")
