"""Replies on their way to customers: the reply sender's outbox and the record of each delivery; and inbound events
found by their ticket (a reply goes back the way the customer's latest message came).

Revision ID: 0015
Revises: 0014
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "helpdesk_outbound",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("ticket_id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("channel_id", sa.String(length=36), nullable=False),
        sa.Column("medium", sa.String(length=32), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("provider_message_id", sa.String(length=998), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_helpdesk_outbound_due", "helpdesk_outbound", ["state", "next_attempt_at"])
    op.create_index("ix_helpdesk_outbound_conversation", "helpdesk_outbound", ["conversation_id"])
    op.create_index("ix_helpdesk_outbound_provider_id", "helpdesk_outbound", ["organization_id", "provider_message_id"])
    op.create_index("ix_helpdesk_inbound_events_ticket", "helpdesk_inbound_events", ["ticket_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_helpdesk_inbound_events_ticket", table_name="helpdesk_inbound_events")
    op.drop_index("ix_helpdesk_outbound_provider_id", table_name="helpdesk_outbound")
    op.drop_index("ix_helpdesk_outbound_conversation", table_name="helpdesk_outbound")
    op.drop_index("ix_helpdesk_outbound_due", table_name="helpdesk_outbound")
    op.drop_table("helpdesk_outbound")
