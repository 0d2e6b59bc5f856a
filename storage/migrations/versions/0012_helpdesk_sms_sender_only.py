"""The index that finds a sender's earlier messages to a channel serves only the SMS auto-reply: it now holds SMS
events alone (a partial index), so that every other provider's event is stored without writing it.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

SMS = sa.text("provider = 'sms'")


def upgrade() -> None:
    op.drop_index("ix_helpdesk_inbound_events_sender", table_name="helpdesk_inbound_events")
    op.create_index(
        "ix_helpdesk_inbound_events_sms_sender",
        "helpdesk_inbound_events",
        ["channel_id", "partition_key", "created_at"],
        sqlite_where=SMS,
        postgresql_where=SMS,
    )


def downgrade() -> None:
    op.drop_index("ix_helpdesk_inbound_events_sms_sender", table_name="helpdesk_inbound_events")
    op.create_index(
        "ix_helpdesk_inbound_events_sender", "helpdesk_inbound_events", ["channel_id", "partition_key", "created_at"]
    )
