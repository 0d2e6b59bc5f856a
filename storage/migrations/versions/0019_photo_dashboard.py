"""Photo's dashboard: a customer's sign-in address, the dashboard's sessions, and the review queue's order (each
completed verification's verdict and confidence beside its JSON, filled in for those already judged).

Revision ID: 0019
Revises: 0018
"""

import json

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

UtcDateTime = storage.common.models.UtcDateTime
QUEUE = ["customer_id", "environment", "state", "is_compliant", "confidence"]


def upgrade() -> None:
    op.add_column("photo_customers", sa.Column("email", sa.String(length=320), nullable=True))
    op.create_index("uq_photo_customers_email", "photo_customers", ["email"], unique=True)
    op.add_column("photo_verifications", sa.Column("is_compliant", sa.Boolean(), nullable=True))
    op.add_column("photo_verifications", sa.Column("confidence", sa.Float(), nullable=True))
    op.create_index("ix_photo_verifications_queue", "photo_verifications", QUEUE)
    op.create_table(
        "photo_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=True),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_photo_sessions_customer", "photo_sessions", ["customer_id"])
    connection = op.get_bind()
    table = sa.table(
        "photo_verifications",
        sa.column("id", sa.String),
        sa.column("verdict", sa.LargeBinary),
        sa.column("is_compliant", sa.Boolean),
        sa.column("confidence", sa.Float),
    )
    judged = connection.execute(sa.select(table.c.id, table.c.verdict).where(table.c.verdict.is_not(None))).all()
    for verification_id, verdict in judged:
        values = json.loads(verdict)
        connection.execute(
            table.update()
            .where(table.c.id == verification_id)
            .values(is_compliant=values["is_compliant"], confidence=values["confidence"])
        )


def downgrade() -> None:
    op.drop_index("ix_photo_sessions_customer", table_name="photo_sessions")
    op.drop_table("photo_sessions")
    op.drop_index("ix_photo_verifications_queue", table_name="photo_verifications")
    with op.batch_alter_table("photo_verifications") as batch:
        batch.drop_column("confidence")
        batch.drop_column("is_compliant")
    op.drop_index("uq_photo_customers_email", table_name="photo_customers")
    with op.batch_alter_table("photo_customers") as batch:
        batch.drop_column("email")
