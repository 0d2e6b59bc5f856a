"""An outbound message keeps when its provider took it (page messaging reports delivery and reading by a watermark:
every message sent up to that time), and, for the helpdesk's automatic mail, its Auto-Submitted value; a member's
notice is sent through the same outbox, with no conversation and no channel.

Revision ID: 0017
Revises: 0016
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.add_column("helpdesk_outbound", sa.Column("sent_at", UtcDateTime(), nullable=True))
    op.add_column("helpdesk_outbound", sa.Column("auto_submitted", sa.String(length=16), nullable=True))
    with op.batch_alter_table("helpdesk_outbound") as batch:
        batch.alter_column("conversation_id", existing_type=sa.String(length=36), nullable=True)
        batch.alter_column("channel_id", existing_type=sa.String(length=36), nullable=True)
    op.create_index(
        "ix_helpdesk_outbound_recipient", "helpdesk_outbound", ["organization_id", "recipient", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_helpdesk_outbound_recipient", table_name="helpdesk_outbound")
    with op.batch_alter_table("helpdesk_outbound") as batch:
        batch.drop_column("auto_submitted")
        batch.alter_column("conversation_id", existing_type=sa.String(length=36), nullable=False)
        batch.alter_column("channel_id", existing_type=sa.String(length=36), nullable=False)
        batch.drop_column("sent_at")
