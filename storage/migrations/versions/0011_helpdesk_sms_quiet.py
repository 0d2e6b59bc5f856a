"""An SMS channel's auto-reply goes only to a sender's first message after a quiet spell (a machine that answers our
auto-reply does not loop with it): an index finds a sender's earlier messages to a channel.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_helpdesk_inbound_events_sender",
        "helpdesk_inbound_events",
        ["channel_id", "partition_key", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_helpdesk_inbound_events_sender", table_name="helpdesk_inbound_events")
