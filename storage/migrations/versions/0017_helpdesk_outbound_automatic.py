"""An outbound message keeps when its provider took it: page messaging reports delivery and reading by a watermark
(every message sent up to that time), not by message.

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


def downgrade() -> None:
    with op.batch_alter_table("helpdesk_outbound") as batch:
        batch.drop_column("sent_at")
