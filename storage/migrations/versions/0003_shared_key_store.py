"""API keys become one store for every service; the phone tables take the service's name.

Revision ID: 0003
Revises: 0002
"""

from alembic import op
import sqlalchemy as sa

import storage.common.models

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_RENAMES = {
    "tenants": "phone_tenants",
    "prices": "phone_prices",
    "ledger_entries": "phone_ledger",
    "monthly_spend": "phone_monthly_spend",
}


def upgrade() -> None:
    # The old key table points at the phone tenants; the shared one names a service and an owner of any service.
    op.create_table(
        "api_keys_shared",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("service", sa.String(length=16), nullable=False),
        sa.Column("owner_id", sa.String(length=40), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("display_prefix", sa.String(length=24), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", storage.common.models.UtcDateTime(), nullable=False),
        sa.Column("expires_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.Column("revoked_at", storage.common.models.UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute(
        "INSERT INTO api_keys_shared (id, service, owner_id, environment, key_hash, display_prefix, name, scopes,"
        " created_at, expires_at, revoked_at)"
        " SELECT id, 'phone', tenant_id, environment, key_hash, display_prefix, NULL, scopes, created_at, NULL,"
        " revoked_at FROM api_keys"
    )
    op.drop_table("api_keys")
    op.rename_table("api_keys_shared", "api_keys")
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.create_unique_constraint("uq_api_keys_key_hash", ["key_hash"])
        batch_op.create_index("ix_api_keys_owner", ["service", "owner_id"])
    for old, new in _RENAMES.items():
        op.rename_table(old, new)


def downgrade() -> None:
    raise NotImplementedError("the shared key store cannot be split back; restore a backup instead")
