"""Leases: a named job one process at a time does (the helpdesk's activity relay publishes under one), held until a
time its holder moves on while it works.

Revision ID: 0022
Revises: 0021
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=36), nullable=False),
        sa.Column("until", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("leases")
