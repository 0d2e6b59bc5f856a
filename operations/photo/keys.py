"""An account's API keys (section 4.1; the dashboard's Settings, API keys): list, create (the key itself returned this
once), revoke. An account manages only its own keys, and creates keys of the environment it acts in."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from operations.common.errors import Invalid, NotFound
from operations.photo.account import Account, Photo
from storage.common import keys
from storage.photo import customers


async def listed(photo: Photo, account: Account) -> list[Any]:
    """Every key of the account, revoked and expired ones included, newest first."""
    return await photo.db.read(keys.owner_keys, customers.SERVICE, account.customer_id)


async def create(
    photo: Photo, account: Account, *, name: str, scope: str, expires_at: str | None, now: datetime
) -> tuple[Any, str]:
    """The stored key and the key itself, `pc_<environment>_...`, which is never shown again."""
    if not name.strip():
        raise Invalid("name must not be blank")
    if scope not in customers.SCOPES:
        raise Invalid(f"scope must be one of {', '.join(customers.SCOPES)}")
    return await photo.db.write(
        customers.create_key,
        account.customer_id,
        account.environment,
        name=name,
        scope=scope,
        expires_at=expiry(expires_at, now),
        now=now,
    )


async def revoke(photo: Photo, account: Account, key_id: str, now: datetime) -> datetime:
    """When the key was revoked (now, or when it first was: there is no un-revoke)."""
    revoked_at = await photo.db.write(keys.revoke_owner_key, customers.SERVICE, account.customer_id, key_id, now)
    if revoked_at is None:
        raise NotFound("No key with that id on this account")
    return revoked_at


def expiry(text: str | None, now: datetime) -> datetime | None:
    """`expires_at`: an ISO 8601 instant in the future (without a zone it is read as UTC)."""
    if not text:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise Invalid("expires_at must be an ISO 8601 time such as 2027-01-31T00:00:00Z") from None
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    if at <= now:
        raise Invalid("expires_at must be in the future")
    return at.astimezone(UTC)
