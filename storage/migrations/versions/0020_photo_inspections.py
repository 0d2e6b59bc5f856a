"""Photo's self-inspection sessions, and the previews their recipients ask for (verifications never charged, listed
or announced).

Revision ID: 0020
Revises: 0019
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.add_column("photo_verifications", sa.Column("preview", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.create_table(
        "photo_inspections",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("customer_id", sa.String(length=40), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("policy", sa.String(length=32), nullable=False),
        sa.Column("reference", sa.String(length=255), nullable=True),
        sa.Column("metadata_json", sa.LargeBinary(), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("previews", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("submitted_at", UtcDateTime(), nullable=True),
        sa.Column("cancelled_at", UtcDateTime(), nullable=True),
        sa.Column("verification_id", sa.String(length=40), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("uq_photo_inspections_token", "photo_inspections", ["token_hash"], unique=True)
    op.create_index("ix_photo_inspections_owner", "photo_inspections", ["customer_id", "environment", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_photo_inspections_owner", table_name="photo_inspections")
    op.drop_index("uq_photo_inspections_token", table_name="photo_inspections")
    op.drop_table("photo_inspections")
    with op.batch_alter_table("photo_verifications") as batch:
        batch.drop_column("preview")
