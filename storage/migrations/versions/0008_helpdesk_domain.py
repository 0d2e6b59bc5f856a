"""The helpdesk's domain: customers, tickets numbered per organization, conversations; organizations' ticket counter
and billing state; the activity log as the outbox of its topic (`state`, and `published_at` always set).

Revision ID: 0008
Revises: 0007
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    with op.batch_alter_table("helpdesk_organizations") as table:
        table.add_column(sa.Column("last_ticket_number", sa.Integer(), nullable=False, server_default="0"))
        table.add_column(sa.Column("billing_customer_id", sa.String(length=255), nullable=True))
        table.add_column(sa.Column("billing_status", sa.String(length=16), nullable=False, server_default="none"))
    op.drop_index("ix_helpdesk_events_unpublished", table_name="helpdesk_events")
    with op.batch_alter_table("helpdesk_events") as table:
        table.add_column(sa.Column("state", sa.String(length=16), nullable=False, server_default="pending"))
    op.execute("UPDATE helpdesk_events SET published_at = created_at WHERE published_at IS NULL")
    with op.batch_alter_table("helpdesk_events") as table:
        table.alter_column("published_at", existing_type=UtcDateTime(), nullable=False)
        table.alter_column("state", existing_type=sa.String(length=16), server_default=None)
    op.create_index("ix_helpdesk_events_outbox", "helpdesk_events", ["state", "published_at"])
    op.create_table(
        "helpdesk_customers",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("phone", sa.String(length=32), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "email", name="uq_helpdesk_customers_email"),
    )
    op.create_index("ix_helpdesk_customers_listing", "helpdesk_customers", ["organization_id", "created_at", "id"])
    op.create_table(
        "helpdesk_tickets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("priority", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("customer_id", sa.String(length=36), nullable=False),
        sa.Column("assignee_id", sa.String(length=36), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "number", name="uq_helpdesk_tickets_number"),
    )
    op.create_index("ix_helpdesk_tickets_listing", "helpdesk_tickets", ["organization_id", "created_at", "id"])
    op.create_index("ix_helpdesk_tickets_customer", "helpdesk_tickets", ["customer_id"])
    op.create_table(
        "helpdesk_conversations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("ticket_id", sa.String(length=36), nullable=False),
        sa.Column("author_type", sa.String(length=16), nullable=False),
        sa.Column("author_id", sa.String(length=36), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("internal", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_helpdesk_conversations_ticket", "helpdesk_conversations", ["ticket_id", "created_at", "id"])


def downgrade() -> None:
    for name in ("helpdesk_conversations", "helpdesk_tickets", "helpdesk_customers"):
        op.drop_table(name)
    op.drop_index("ix_helpdesk_events_outbox", table_name="helpdesk_events")
    with op.batch_alter_table("helpdesk_events") as table:
        table.alter_column("published_at", existing_type=UtcDateTime(), nullable=True)
        table.drop_column("state")
    op.create_index("ix_helpdesk_events_unpublished", "helpdesk_events", ["published_at", "created_at"])
    with op.batch_alter_table("helpdesk_organizations") as table:
        table.drop_column("billing_status")
        table.drop_column("billing_customer_id")
        table.drop_column("last_ticket_number")
