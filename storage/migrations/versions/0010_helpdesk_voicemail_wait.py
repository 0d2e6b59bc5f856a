"""A voicemail whose transcription (or audio) never comes still becomes a ticket once its call has been quiet for the
processors' wait: an index finds the voicemails still without their ticket, by their call's last event.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_helpdesk_calls_voicemail_waiting", "helpdesk_calls", ["voicemail", "ticket_id", "updated_at"])


def downgrade() -> None:
    op.drop_index("ix_helpdesk_calls_voicemail_waiting", table_name="helpdesk_calls")
