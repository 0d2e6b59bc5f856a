"""Index free re-check candidates by number first, so a batch's look-up is a search, not a table scan.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("phone_requests") as batch_op:
        batch_op.drop_index("ix_phone_requests_recheck")
        batch_op.create_index("ix_phone_requests_number_billable", ["phone_e164", "billable_at"])


def downgrade() -> None:
    with op.batch_alter_table("phone_requests") as batch_op:
        batch_op.drop_index("ix_phone_requests_number_billable")
        batch_op.create_index("ix_phone_requests_recheck", ["tenant_id", "environment", "phone_e164", "billable_at"])
