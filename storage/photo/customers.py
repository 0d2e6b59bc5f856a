"""Photo customers, their plans and monthly usage, and their API keys (in the shared key store)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection, Row

from storage.common import keys
from storage.common.db import per_dialect
from storage.photo.catalog import DEFAULT_PLAN, PLANS
from storage.photo.models import Customer, MonthlyUsage
from topics.common.environment import Environment
from wire.ids import new_id

SERVICE = "photo"
KEY_PREFIX = "pc"
SCOPES = ("full", "verify_only")
DEFAULT_RATE_LIMITS = {"minute": 100, "hour": 6000}
"""Every new key's own budget (section 8); raised per key by an operator."""


@dataclass(frozen=True, slots=True)
class KeyOwner:
    """What a presented API key stands for: its customer, environment, scope and budget."""

    key_id: str
    customer_id: str
    environment: Environment
    scope: str
    rate_limits: dict[str, int]
    subscription_active: bool
    monthly_cap: int


_CUSTOMERS = cast(Table, Customer.__table__)


def create_customer(
    connection: Connection,
    name: str,
    *,
    plan: str = DEFAULT_PLAN,
    monthly_cap: int | None = None,
    subscription_active: bool = True,
    email: str | None = None,
) -> str:
    if plan not in PLANS and monthly_cap is None:
        raise ValueError(f"unknown plan {plan!r}: one of {', '.join(PLANS)}, or give a monthly cap")
    customer_id = new_id("cus")
    connection.execute(
        insert(_CUSTOMERS).values(
            id=customer_id,
            name=name,
            plan=plan,
            monthly_cap=monthly_cap if monthly_cap is not None else PLANS[plan],
            subscription_active=subscription_active,
            email=email.strip().lower() if email is not None else None,
            created_at=datetime.now(UTC),
        )
    )
    return customer_id


def update_customer(connection: Connection, customer_id: str, **values: Any) -> bool:
    """Set plan, monthly_cap or subscription_active; False when there is no such customer."""
    return bool(connection.execute(update(_CUSTOMERS).where(_CUSTOMERS.c.id == customer_id).values(**values)).rowcount)


def customer(connection: Connection, customer_id: str) -> Row[Any] | None:
    return connection.execute(select(_CUSTOMERS).where(_CUSTOMERS.c.id == customer_id)).first()


@dataclass(frozen=True, slots=True)
class SignedUp:
    """Who a sign-in link signs in: the account of its address, made now (with its first sandbox key, `key`, shown
    this once) when it had none."""

    customer_id: str
    key: str | None = None


SIGN_UP_KEY = "Sandbox key (made at sign-up)"


def signed_in_by_email(connection: Connection, email: str, now: datetime) -> SignedUp:
    """The account of `email`, made at its first sign-in: sandbox-only (no active subscription: live keys answer 403
    until an operator activates its plan) with one `full` sandbox key."""
    address = email.strip().lower()
    found = connection.execute(select(_CUSTOMERS.c.id).where(_CUSTOMERS.c.email == address)).scalar_one_or_none()
    if found is not None:
        return SignedUp(found)
    customer_id = create_customer(connection, address, subscription_active=False, email=address)
    _, key = create_key(connection, customer_id, "test", name=SIGN_UP_KEY, now=now)
    return SignedUp(customer_id, key)


def list_customers(connection: Connection) -> list[Row[Any]]:
    return list(connection.execute(select(_CUSTOMERS).order_by(_CUSTOMERS.c.created_at)))


def create_key(
    connection: Connection,
    customer_id: str,
    environment: str,
    *,
    name: str,
    scope: str = "full",
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[Row[Any], str]:
    """Returns the stored key and the key itself (`pc_live_...` / `pc_test_...`), which is shown this once."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    if connection.execute(select(_CUSTOMERS.c.id).where(_CUSTOMERS.c.id == customer_id)).first() is None:
        raise LookupError(f"no customer {customer_id}")
    return keys.create_key(
        connection,
        service=SERVICE,
        owner_id=customer_id,
        environment=environment,
        prefix=KEY_PREFIX,
        scopes=[scope],
        key_id=new_id("key"),
        name=name,
        expires_at=expires_at,
        rate_limits=dict(DEFAULT_RATE_LIMITS),
        now=now,
    )


def set_key_limits(connection: Connection, key_id: str, per_minute: int, per_hour: int) -> bool:
    statement = (
        update(keys.KEYS)
        .where(keys.KEYS.c.service == SERVICE, keys.KEYS.c.id == key_id)
        .values(rate_limits={"minute": per_minute, "hour": per_hour})
    )
    return bool(connection.execute(statement).rowcount)


_KEY_OWNERS = keys.usable_keys(SERVICE, _CUSTOMERS.c.subscription_active, _CUSTOMERS.c.monthly_cap).join_from(
    keys.KEYS, _CUSTOMERS, _CUSTOMERS.c.id == keys.KEYS.c.owner_id
)


def key_owners(connection: Connection, key_hashes: list[str], now: datetime) -> dict[str, KeyOwner]:
    """The owners of those presented keys (by SHA-256) that authenticate at `now`, in one query."""
    return {
        row.key_hash: KeyOwner(
            key_id=row.id,
            customer_id=row.owner_id,
            environment=row.environment,
            scope=row.scopes[0],
            rate_limits=row.rate_limits or DEFAULT_RATE_LIMITS,
            subscription_active=row.subscription_active,
            monthly_cap=row.monthly_cap,
        )
        for row in connection.execute(_KEY_OWNERS, {"hashes": key_hashes, "now": now})
    }


def month_of(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m")


_USAGE = cast(Table, MonthlyUsage.__table__)


def _charge_upsert(insert_: Any) -> Any:
    statement = insert_(_USAGE)
    return statement.on_conflict_do_update(
        index_elements=["customer_id", "month"],
        set_={"used": _USAGE.c.used + 1},
        where=_USAGE.c.used < bindparam("cap"),
    ).returning(_USAGE.c.used)


_CHARGE = per_dialect(_charge_upsert)


def charge(connection: Connection, customer_id: str, month: str, cap: int) -> bool:
    """Count one live verification against the month's cap; False (nothing counted) when the cap is reached. One
    conditional upsert, so concurrent gateways never count past the cap."""
    if cap < 1:
        return False
    values = {"customer_id": customer_id, "month": month, "used": 1, "cap": cap}
    return connection.execute(_CHARGE[connection.dialect.name], values).first() is not None


def refund(connection: Connection, customer_id: str, month: str) -> None:
    """Give back a charge whose verification failed (5xx outcomes are never billed)."""
    connection.execute(
        update(_USAGE)
        .where(_USAGE.c.customer_id == customer_id, _USAGE.c.month == month, _USAGE.c.used > 0)
        .values(used=_USAGE.c.used - 1)
    )


def usage(connection: Connection, customer_id: str, month: str) -> int:
    used = connection.execute(
        select(_USAGE.c.used).where(_USAGE.c.customer_id == customer_id, _USAGE.c.month == month)
    ).scalar_one_or_none()
    return used or 0
