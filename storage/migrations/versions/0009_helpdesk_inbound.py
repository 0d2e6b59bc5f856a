"""The helpdesk's inbound channels: channels and the addresses that route to them, inbound events (stored before they
are acknowledged, de-duplicated per channel), calls and orders; customers' identities and bouncing addresses (a
customer may have no address), tickets threaded by sender, conversations' Message-IDs and attachments.

Revision ID: 0009
Revises: 0008
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime


def upgrade() -> None:
    with op.batch_alter_table("helpdesk_organizations") as table:
        table.add_column(sa.Column("billing_event_at", UtcDateTime(), nullable=True))
    with op.batch_alter_table("helpdesk_customers") as table:
        table.alter_column("email", existing_type=sa.String(length=320), nullable=True)
        table.add_column(sa.Column("bouncing", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "helpdesk_customer_identities",
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("value", sa.String(length=320), nullable=False),
        sa.Column("customer_id", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("organization_id", "kind", "value"),
    )
    op.create_index("ix_helpdesk_customer_identities_customer", "helpdesk_customer_identities", ["customer_id"])
    with op.batch_alter_table("helpdesk_tickets") as table:
        table.add_column(sa.Column("thread_key", sa.String(length=255), nullable=True))
    op.create_index("ix_helpdesk_tickets_thread", "helpdesk_tickets", ["organization_id", "thread_key", "created_at"])
    with op.batch_alter_table("helpdesk_conversations") as table:
        table.add_column(sa.Column("message_id", sa.String(length=998), nullable=True))
        table.add_column(sa.Column("attachments", sa.JSON(), nullable=False, server_default="[]"))
    op.create_index("ix_helpdesk_conversations_message_id", "helpdesk_conversations", ["organization_id", "message_id"])
    op.create_table(
        "helpdesk_channels",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("secrets_sealed", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("deleted_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_helpdesk_channels_organization", "helpdesk_channels", ["organization_id", "created_at"])
    op.create_table(
        "helpdesk_channel_addresses",
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("channel_id", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("kind", "address"),
    )
    op.create_index("ix_helpdesk_channel_addresses_channel", "helpdesk_channel_addresses", ["channel_id"])
    op.create_table(
        "helpdesk_inbound_events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("channel_id", sa.String(length=36), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("dedup_key", sa.String(length=255), nullable=False),
        sa.Column("content_type", sa.String(length=255), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("partition_key", sa.String(length=255), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("published_at", UtcDateTime(), nullable=False),
        sa.Column("classification", sa.String(length=32), nullable=True),
        sa.Column("ticket_id", sa.String(length=36), nullable=True),
        sa.Column("conversation_id", sa.String(length=36), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.Column("processed_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("channel_id", "dedup_key", name="uq_helpdesk_inbound_events_dedup"),
    )
    op.create_index("ix_helpdesk_inbound_events_outbox", "helpdesk_inbound_events", ["state", "published_at"])
    op.create_index(
        "ix_helpdesk_inbound_events_listing", "helpdesk_inbound_events", ["organization_id", "created_at", "id"]
    )
    op.create_table(
        "helpdesk_calls",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("channel_id", sa.String(length=36), nullable=False),
        sa.Column("call_id", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("voicemail", sa.Boolean(), nullable=False),
        sa.Column("recording_url", sa.Text(), nullable=True),
        sa.Column("transcription", sa.Text(), nullable=True),
        sa.Column("ticket_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("channel_id", "call_id", name="uq_helpdesk_calls_call"),
    )
    op.create_table(
        "helpdesk_orders",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("channel_id", sa.String(length=36), nullable=False),
        sa.Column("customer_id", sa.String(length=36), nullable=True),
        sa.Column("order_id", sa.String(length=128), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("channel_id", "order_id", name="uq_helpdesk_orders_order"),
    )
    op.create_index("ix_helpdesk_orders_customer", "helpdesk_orders", ["customer_id"])


def downgrade() -> None:
    for name in (
        "helpdesk_orders",
        "helpdesk_calls",
        "helpdesk_inbound_events",
        "helpdesk_channel_addresses",
        "helpdesk_channels",
        "helpdesk_customer_identities",
    ):
        op.drop_table(name)
    op.drop_index("ix_helpdesk_conversations_message_id", table_name="helpdesk_conversations")
    with op.batch_alter_table("helpdesk_conversations") as table:
        table.drop_column("attachments")
        table.drop_column("message_id")
    op.drop_index("ix_helpdesk_tickets_thread", table_name="helpdesk_tickets")
    with op.batch_alter_table("helpdesk_tickets") as table:
        table.drop_column("thread_key")
    with op.batch_alter_table("helpdesk_customers") as table:
        table.drop_column("bouncing")
        table.alter_column("email", existing_type=sa.String(length=320), nullable=False)
    with op.batch_alter_table("helpdesk_organizations") as table:
        table.drop_column("billing_event_at")
