"""Phone tenants, their API keys (in the shared key store) and prices: the operator's side of the data."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection, Row

from storage.common import keys
from storage.common.db import per_dialect
from storage.phone.catalog import ALL_SCOPES
from storage.phone.models import Price, Tenant
from topics.common.environment import Environment
from wire.ids import new_uuid

SERVICE = "phone"
KEY_PREFIX = "sy"
DEFAULT_PRICES = {"core_phone": 15000}
"""Microdollars per SKU for tenants without a price of their own."""


@dataclass(frozen=True, slots=True)
class KeyOwner:
    """What a presented API key stands for: its tenant, environment and rights."""

    key_id: str
    tenant_id: str
    environment: Environment
    scopes: frozenset[str]
    tenant_status: str
    allowed_skus: frozenset[str]
    spend_cap_microdollars: int | None


_TENANTS, _PRICES = cast(Table, Tenant.__table__), cast(Table, Price.__table__)


def create_tenant(
    connection: Connection, name: str, *, skus: list[str] | None = None, spend_cap_microdollars: int | None = None
) -> str:
    tenant_id = new_uuid()
    connection.execute(
        insert(_TENANTS).values(
            id=tenant_id,
            name=name,
            status="active",
            allowed_skus=skus if skus is not None else list(DEFAULT_PRICES),
            spend_cap_microdollars=spend_cap_microdollars,
            created_at=datetime.now(UTC),
        )
    )
    return tenant_id


def update_tenant(connection: Connection, tenant_id: str, **values: object) -> bool:
    """Set status, allowed_skus or spend_cap_microdollars; False when the tenant does not exist."""
    return bool(connection.execute(update(_TENANTS).where(_TENANTS.c.id == tenant_id).values(**values)).rowcount)


def list_tenants(connection: Connection) -> list[Row[Any]]:
    """Every tenant, oldest first."""
    return list(connection.execute(select(_TENANTS).order_by(_TENANTS.c.created_at)))


def _require_tenant(connection: Connection, tenant_id: str) -> None:
    if connection.execute(select(_TENANTS.c.id).where(_TENANTS.c.id == tenant_id)).first() is None:
        raise LookupError(f"no tenant {tenant_id}")


def create_key(
    connection: Connection, tenant_id: str, environment: str, scopes: list[str] | None = None
) -> tuple[str, str]:
    """Returns (key id, the key itself). Only the key's SHA-256 is stored: it is shown this once."""
    if environment not in keys.ENVIRONMENTS:
        raise ValueError("environment must be live or test")
    _require_tenant(connection, tenant_id)
    row, key = keys.create_key(
        connection,
        service=SERVICE,
        owner_id=tenant_id,
        environment=environment,
        prefix=KEY_PREFIX,
        scopes=scopes if scopes is not None else ALL_SCOPES,
    )
    return row.id, key


def revoke_key(connection: Connection, key_or_id: str) -> bool:
    """Revoke by key id or by the key itself."""
    return keys.revoke_key(connection, SERVICE, key_or_id) is not None


_KEY_OWNERS = keys.usable_keys(
    SERVICE, _TENANTS.c.status, _TENANTS.c.allowed_skus, _TENANTS.c.spend_cap_microdollars
).join_from(keys.KEYS, _TENANTS, _TENANTS.c.id == keys.KEYS.c.owner_id)


def key_owners(connection: Connection, key_hashes: list[str], now: datetime) -> dict[str, KeyOwner]:
    """The owners of those presented keys (by SHA-256) that authenticate at `now`, in one query."""
    return {
        row.key_hash: KeyOwner(
            key_id=row.id,
            tenant_id=row.owner_id,
            environment=row.environment,
            scopes=frozenset(row.scopes),
            tenant_status=row.status,
            allowed_skus=frozenset(row.allowed_skus),
            spend_cap_microdollars=row.spend_cap_microdollars,
        )
        for row in connection.execute(_KEY_OWNERS, {"hashes": key_hashes, "now": now})
    }


def find_key_owner(connection: Connection, key: str) -> KeyOwner | None:
    key_hash = keys.hash_key(key)
    return key_owners(connection, [key_hash], datetime.now(UTC)).get(key_hash)


def set_price(connection: Connection, tenant_id: str, sku: str, unit_price_microdollars: int) -> None:
    _require_tenant(connection, tenant_id)
    price = {"tenant_id": tenant_id, "sku": sku, "unit_price_microdollars": unit_price_microdollars}
    connection.execute(_SET_PRICE[connection.dialect.name], price)


def unit_price(connection: Connection, tenant_id: str, sku: str) -> int:
    price = connection.execute(
        select(_PRICES.c.unit_price_microdollars).where(_PRICES.c.tenant_id == tenant_id, _PRICES.c.sku == sku)
    ).scalar_one_or_none()
    return price if price is not None else DEFAULT_PRICES[sku]


def _price_upsert(insert_: Any) -> Any:
    statement = insert_(_PRICES)
    return statement.on_conflict_do_update(
        index_elements=["tenant_id", "sku"],
        set_={"unit_price_microdollars": statement.excluded.unit_price_microdollars},
    )


_SET_PRICE = per_dialect(_price_upsert)


@dataclass(frozen=True, slots=True)
class TenantTerms:
    """What processing a request needs to know of its tenant."""

    status: str
    spend_cap_microdollars: int | None
    unit_price_microdollars: int


_TERMS = (
    select(_TENANTS.c.id, _TENANTS.c.status, _TENANTS.c.spend_cap_microdollars, _PRICES.c.unit_price_microdollars)
    .select_from(
        _TENANTS.outerjoin(_PRICES, (_PRICES.c.tenant_id == _TENANTS.c.id) & (_PRICES.c.sku == bindparam("sku")))
    )
    .where(_TENANTS.c.id.in_(bindparam("tenant_ids", expanding=True)))
)
"""Built once: the processor runs it for every round."""


def tenant_terms(connection: Connection, tenant_ids: list[str], sku: str) -> dict[str, TenantTerms]:
    """Status, spend cap and `sku` price of several tenants in one query."""
    rows = connection.execute(_TERMS, {"tenant_ids": tenant_ids, "sku": sku})
    return {
        row.id: TenantTerms(
            row.status,
            row.spend_cap_microdollars,
            row.unit_price_microdollars if row.unit_price_microdollars is not None else DEFAULT_PRICES[sku],
        )
        for row in rows
    }
