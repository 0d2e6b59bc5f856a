"""Phone tenants, their API keys (in the shared key store) and prices: the operator's side of the data."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from storage.common import keys
from storage.phone.catalog import ALL_SCOPES
from storage.phone.models import Price, Tenant

SERVICE = "phone"
KEY_PREFIX = "sy"
DEFAULT_PRICES = {"core_phone": 15000}
"""Microdollars per SKU for tenants without a price of their own."""


@dataclass(frozen=True, slots=True)
class KeyOwner:
    """What a presented API key stands for: its tenant, environment and rights."""

    key_id: str
    tenant_id: str
    environment: str
    scopes: frozenset[str]
    tenant_status: str
    allowed_skus: frozenset[str]
    spend_cap_microdollars: int | None


async def create_tenant(
    session: AsyncSession, name: str, *, skus: list[str] | None = None, spend_cap_microdollars: int | None = None
) -> str:
    tenant_id = str(uuid.uuid4())
    session.add(
        Tenant(
            id=tenant_id,
            name=name,
            status="active",
            allowed_skus=skus if skus is not None else list(DEFAULT_PRICES),
            spend_cap_microdollars=spend_cap_microdollars,
            created_at=datetime.now(UTC),
        )
    )
    return tenant_id


async def update_tenant(session: AsyncSession, tenant_id: str, **values: object) -> bool:
    """Set status, allowed_skus or spend_cap_microdollars; False when the tenant does not exist."""
    result = await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(**values))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def create_key(
    session: AsyncSession, tenant_id: str, environment: str, scopes: list[str] | None = None
) -> tuple[str, str]:
    """Returns (key id, the key itself). Only the key's SHA-256 is stored: it is shown this once."""
    if environment not in keys.ENVIRONMENTS:
        raise ValueError("environment must be live or test")
    if await session.get(Tenant, tenant_id) is None:
        raise LookupError(f"no tenant {tenant_id}")
    row, key = await keys.create_key(
        session,
        service=SERVICE,
        owner_id=tenant_id,
        environment=environment,
        prefix=KEY_PREFIX,
        scopes=scopes if scopes is not None else ALL_SCOPES,
    )
    return row.id, key


async def revoke_key(session: AsyncSession, key_or_id: str) -> bool:
    """Revoke by key id or by the key itself."""
    return await keys.revoke_key(session, SERVICE, key_or_id) is not None


_TENANTS, _PRICES = cast(Table, Tenant.__table__), cast(Table, Price.__table__)
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


async def find_key_owner(session: AsyncSession, key: str) -> KeyOwner | None:
    key_hash = keys.hash_key(key)
    owners = await session.run_sync(lambda sync: key_owners(sync.connection(), [key_hash], datetime.now(UTC)))
    return owners.get(key_hash)


async def set_price(session: AsyncSession, tenant_id: str, sku: str, unit_price_microdollars: int) -> None:
    if await session.get(Tenant, tenant_id) is None:
        raise LookupError(f"no tenant {tenant_id}")
    await session.merge(Price(tenant_id=tenant_id, sku=sku, unit_price_microdollars=unit_price_microdollars))


async def unit_price(session: AsyncSession, tenant_id: str, sku: str) -> int:
    price = await session.get(Price, (tenant_id, sku))
    return price.unit_price_microdollars if price is not None else DEFAULT_PRICES[sku]


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
