"""A reply's outbound messages keep the number or address they go from and the text they send (an edit after the send leaves what the customer got in view),
and a reply too long for one provider message goes as several parts, one row each; the tickets merged into one are
found by an index (a reply's route and thread read them).

Revision ID: 0016
Revises: 0015
"""

from alembic import op
import sqlalchemy as sa

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("helpdesk_outbound", sa.Column("sender", sa.String(length=320), nullable=True))
    op.add_column("helpdesk_outbound", sa.Column("body", sa.Text(), nullable=True))
    op.add_column("helpdesk_outbound", sa.Column("part", sa.Integer(), nullable=False, server_default="0"))
    op.create_index(
        "ix_helpdesk_tickets_merged_into",
        "helpdesk_tickets",
        ["merged_into_id"],
        sqlite_where=sa.text("merged_into_id IS NOT NULL"),
        postgresql_where=sa.text("merged_into_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_helpdesk_tickets_merged_into", table_name="helpdesk_tickets")
    with op.batch_alter_table("helpdesk_outbound") as batch:
        batch.drop_column("part")
        batch.drop_column("body")
        batch.drop_column("sender")
