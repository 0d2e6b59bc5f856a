"""Webhook endpoints may have no signing secret (a profile whose secret is optional, created without one): its
encrypted secret and SHA-256 become nullable.

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Iterator
from contextlib import contextmanager

from alembic import op
import sqlalchemy as sa

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_CHILDREN = ("webhook_attempts", "webhook_deliveries")
"""The tables that point at webhook_endpoints, directly or through another, the innermost first."""


@contextmanager
def _endpoints_rebuilt() -> Iterator[None]:
    """SQLite cannot alter a column in place: batch mode copies webhook_endpoints, drops it and renames the copy. With
    foreign keys on (every connection of ours), dropping a table that rows point at fails, and `PRAGMA foreign_keys`
    cannot change inside the migration's transaction; so the rows that point at it are set aside in temporary tables
    and put back, ids and all, once the copy has the name. PostgreSQL alters in place."""
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for table in _CHILDREN:
            op.execute(f"CREATE TEMP TABLE kept_{table} AS SELECT * FROM {table}")
            op.execute(f"DELETE FROM {table}")
    yield
    if sqlite:
        for table in reversed(_CHILDREN):
            op.execute(f"INSERT INTO {table} SELECT * FROM kept_{table}")
            op.execute(f"DROP TABLE kept_{table}")


def upgrade() -> None:
    with _endpoints_rebuilt(), op.batch_alter_table("webhook_endpoints") as batch_op:
        batch_op.alter_column("secret_encrypted", existing_type=sa.String(length=512), nullable=True)
        batch_op.alter_column("secret_sha256", existing_type=sa.String(length=64), nullable=True)


def downgrade() -> None:
    # Endpoints without a secret cannot keep NOT NULL columns: they go, with their deliveries and attempts.
    unsigned = "SELECT id FROM webhook_endpoints WHERE secret_encrypted IS NULL"
    op.execute(
        "DELETE FROM webhook_attempts WHERE delivery_id IN "
        f"(SELECT id FROM webhook_deliveries WHERE endpoint_id IN ({unsigned}))"
    )
    op.execute(f"DELETE FROM webhook_deliveries WHERE endpoint_id IN ({unsigned})")
    op.execute("DELETE FROM webhook_endpoints WHERE secret_encrypted IS NULL")
    with _endpoints_rebuilt(), op.batch_alter_table("webhook_endpoints") as batch_op:
        batch_op.alter_column("secret_sha256", existing_type=sa.String(length=64), nullable=False)
        batch_op.alter_column("secret_encrypted", existing_type=sa.String(length=512), nullable=False)
