"""Sections 2.1, 4.1 and 5: keys are listed newest first without their secret, created with the secret shown once,
revoked at once and for good; `key_prefix` is the key's first 12 characters and an ellipsis; `expires_at` without a
zone is UTC, and a key past it is listed inactive and refused; scopes and accounts bound what a key may see and do."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text, update

from storage.common import keys
from storage.common.keys import ApiKey
from tests.helpers import until
from tests.photo_stack import CustomerKeys, PhotoStack, jpeg

KEYS = "/api/v1/api-keys"
LISTED_FIELDS = {
    "id", "name", "key_prefix", "scope", "active", "rate_limit_per_minute", "rate_limit_per_hour", "last_used_at",
    "created_at", "expires_at",
}  # fmt: skip


async def create(stack: PhotoStack, key: str, **body: object) -> dict:
    response = await stack.call(key, "POST", KEYS, json={"name": "ci", **body})
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_shows_the_key_once_with_the_contract_fields(photo_stack: PhotoStack, customer: CustomerKeys):
    created = await create(photo_stack, customer.test_key, name="Checkout app")
    assert set(created) == LISTED_FIELDS - {"last_used_at"} | {"key"}
    assert created["key"].startswith("pc_test_")
    assert created["id"].startswith("key_")
    assert created["name"] == "Checkout app"
    assert created["scope"] == "full"
    assert created["active"] is True
    assert (created["rate_limit_per_minute"], created["rate_limit_per_hour"]) == (100, 6000)
    assert created["expires_at"] is None
    assert created["key_prefix"].endswith("…")
    assert created["key"].startswith(created["key_prefix"][:-1])
    listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    assert all("key" not in key and "customer_id" not in key for key in listed)
    assert created["key"] not in str(listed)


@pytest.mark.parametrize("environment", ["test", "live"])
async def test_key_prefix_is_the_first_12_characters_and_an_ellipsis(
    photo_stack: PhotoStack, customer: CustomerKeys, environment: str
) -> None:
    created = await create(photo_stack, getattr(customer, f"{environment}_key"))
    assert created["key_prefix"] == created["key"][:12] + "…"
    assert len(created["key_prefix"]) == 13
    assert created["key_prefix"].startswith(f"pc_{environment}_")
    listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    assert next(key for key in listed if key["id"] == created["id"])["key_prefix"] == created["key_prefix"]


async def test_only_the_sha256_of_a_key_is_stored(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key)
    row = await photo_stack.db.read(keys.owner_key, "photo", customer.id, created["id"])
    assert row is not None
    assert row.key_hash == hashlib.sha256(created["key"].encode()).hexdigest()
    assert created["key"] not in str([getattr(row, c.key) for c in ApiKey.__table__.columns])


async def test_a_live_key_creates_live_keys(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    assert (await create(photo_stack, customer.live_key))["key"].startswith("pc_live_")


async def test_a_created_key_works_at_once(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key, scope="verify_only")
    assert (await photo_stack.verify(created["key"], jpeg())).status_code == 200


async def test_list_is_newest_first_with_last_used_at(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    first = await create(photo_stack, customer.test_key, name="first")
    second = await create(photo_stack, customer.test_key, name="second")
    listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    assert [key["id"] for key in listed][:2] == [second["id"], first["id"]]
    assert all(set(key) == LISTED_FIELDS for key in listed)
    assert {key["name"] for key in listed} >= {"sandbox", "live", "first", "second"}
    assert next(key for key in listed if key["id"] == first["id"])["last_used_at"] is None


async def test_last_used_at_is_recorded(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key)
    await photo_stack.call(created["key"], "GET", KEYS)

    async def last_used() -> str | None:
        listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
        return next(key for key in listed if key["id"] == created["id"])["last_used_at"]

    used = await until(last_used, "last_used_at recorded")  # written in batches, about a second after use
    assert abs(datetime.fromisoformat(used) - datetime.now(UTC)) < timedelta(seconds=30)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "ci\u0000key"}, "name"),
        ({"name": "two\nlines"}, "name"),
        ({"name": "x", "scope": "admin"}, "scope"),
        ({"name": "x", "expires_at": "next tuesday"}, "expires_at"),
        ({"name": "x", "expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "x", "extra": 1}, "extra"),
    ],
)
async def test_bad_create_body_is_400(photo_stack: PhotoStack, customer: CustomerKeys, body: dict, message: str):
    response = await photo_stack.call(customer.test_key, "POST", KEYS, json=body)
    assert response.status_code == 400
    assert message in response.json()["error"]


async def test_expires_at_in_the_future_is_kept(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    at = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    created = await create(photo_stack, customer.test_key, expires_at=at.isoformat().replace("+00:00", "Z"))
    assert datetime.fromisoformat(created["expires_at"]) == at


@contextmanager
def server_zone(tz: str) -> Iterator[None]:
    """The gateway (in this process) runs with another local time zone for the block."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = tz
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


async def test_expires_at_without_a_zone_is_utc(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    with server_zone("IST-5:30"):  # whatever the server's own zone
        created = await create(photo_stack, customer.test_key, expires_at="2099-01-01T00:00:00")
    assert created["expires_at"] == "2099-01-01T00:00:00.000Z"
    listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    assert next(key for key in listed if key["id"] == created["id"])["expires_at"] == "2099-01-01T00:00:00.000Z"
    elsewhere = await create(photo_stack, customer.test_key, expires_at="2099-01-01T02:00:00+02:00")
    assert elsewhere["expires_at"] == "2099-01-01T00:00:00.000Z"


async def test_an_expired_key_is_listed_inactive(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key, expires_at="2099-01-01T00:00:00Z")
    assert created["active"] is True
    past = (datetime.now(UTC) - timedelta(minutes=1)).replace(microsecond=0)
    # The API accepts only future times: let this one pass.
    expire = update(ApiKey).where(ApiKey.id == created["id"]).values(expires_at=past)
    await photo_stack.db.write(lambda connection: connection.execute(expire))
    listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    expired = next(key for key in listed if key["id"] == created["id"])
    assert (expired["active"], datetime.fromisoformat(expired["expires_at"])) == (False, past)
    assert next(key for key in listed if key["name"] == "sandbox")["active"] is True
    refused = await photo_stack.call(created["key"], "GET", KEYS)
    assert (refused.status_code, refused.json()) == (401, {"error": "Invalid API key"})


async def test_an_expired_key_is_invalid(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    created = await create(photo_stack, customer.test_key, expires_at=soon)
    await asyncio.sleep(1.2)
    response = await photo_stack.verify(created["key"], jpeg())
    assert response.status_code == 401
    assert response.json() == {"error": "Invalid API key"}


async def test_revoke_answers_and_takes_effect_at_once(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key)
    assert (await photo_stack.call(created["key"], "GET", KEYS)).status_code == 200
    response = await photo_stack.call(customer.test_key, "DELETE", f"{KEYS}/{created['id']}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "active", "revoked_at"}
    assert (body["id"], body["active"]) == (created["id"], False)
    for attempt in (photo_stack.call(created["key"], "GET", KEYS), photo_stack.verify(created["key"], jpeg())):
        refused = await attempt
        assert refused.status_code == 401
        assert refused.json() == {"error": "Invalid API key"}
    listed = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    assert next(key for key in listed if key["id"] == created["id"])["active"] is False
    again = await photo_stack.call(customer.test_key, "DELETE", f"{KEYS}/{created['id']}")
    assert again.json()["revoked_at"] == body["revoked_at"]  # no un-revoke, no second revocation


async def test_another_accounts_key_is_404(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    other = await photo_stack.new_customer()
    theirs = await create(photo_stack, other.test_key)
    for key_id in (theirs["id"], "key_doesnotexist"):
        response = await photo_stack.call(customer.test_key, "DELETE", f"{KEYS}/{key_id}")
        assert response.status_code == 404
        assert response.json() == {"error": "No key with that id on this account"}
    assert (await photo_stack.call(theirs["key"], "GET", KEYS)).status_code == 200
    mine = (await photo_stack.call(customer.test_key, "GET", KEYS)).json()["data"]
    assert theirs["id"] not in {key["id"] for key in mine}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", KEYS),
        ("POST", KEYS),
        ("DELETE", f"{KEYS}/key_x"),
        ("GET", "/api/v1/webhooks"),
        ("POST", "/api/v1/webhooks"),
        ("DELETE", "/api/v1/webhooks/whk_x"),
        ("GET", "/api/v1/verifications"),
        ("GET", "/api/v1/verifications/ver_x"),
        ("POST", "/api/v1/verifications/ver_x/review"),
    ],
)
async def test_verify_only_key_cannot_manage(photo_stack: PhotoStack, customer: CustomerKeys, method: str, path: str):
    narrow = await create(photo_stack, customer.test_key, scope="verify_only")
    response = await photo_stack.call(narrow["key"], method, path, json={"name": "x"})
    assert response.status_code == 403
    assert "verify_only" in response.json()["error"]


async def test_verify_only_key_can_verify(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    narrow = await create(photo_stack, customer.test_key, scope="verify_only")
    assert (await photo_stack.verify(narrow["key"], jpeg())).status_code == 200


@pytest.mark.parametrize("path", [KEYS, "/api/v1/webhooks", "/api/v1/verifications"])
@pytest.mark.parametrize(
    ("key", "message"),
    [
        (None, "Missing API key: send it in the X-API-Key header"),
        ("", "Missing API key: send it in the X-API-Key header"),
        ("pc_test_0000000000000000000000000000000000000000", "Invalid API key"),
        ("not-a-key", "Invalid API key"),
    ],
)
async def test_missing_or_invalid_key_is_401(photo_stack: PhotoStack, path: str, key: str | None, message: str):
    response = await photo_stack.call(key, "GET", path)
    assert response.status_code == 401
    assert response.json() == {"error": message}


async def test_a_key_of_another_service_is_403_on_verify(photo_stack: PhotoStack) -> None:
    response = await photo_stack.verify("sy_test_" + "0" * 40, jpeg())
    assert response.status_code == 403
    assert response.json() == {"error": "This API key is not valid for the photo compliance service"}


async def test_a_revoked_key_stays_revoked_after_its_expiry_changes(photo_stack: PhotoStack, customer: CustomerKeys):
    """Revocation is permanent: no field of the key row brings it back."""
    created = await create(photo_stack, customer.test_key)
    await photo_stack.call(customer.test_key, "DELETE", f"{KEYS}/{created['id']}")
    never_expire = update(ApiKey).where(ApiKey.id == created["id"]).values(expires_at=None)
    await photo_stack.db.write(lambda connection: connection.execute(never_expire))
    assert (await photo_stack.call(created["key"], "GET", KEYS)).status_code == 401
    revoked_at = select(ApiKey.revoked_at).where(ApiKey.id == created["id"])
    assert await photo_stack.db.read(lambda connection: connection.execute(revoked_at).scalar_one()) is not None


async def test_an_unreachable_key_store_is_503_and_nothing_is_processed(
    photo_stack: PhotoStack, customer: CustomerKeys
) -> None:
    """A real database failure on the key look-up (its table gone for the moment): the gateway cannot tell who is
    calling, so it answers 503 rather than 401, and nothing is stored."""
    await photo_stack.db.write(
        lambda connection: connection.execute(text("ALTER TABLE api_keys RENAME TO api_keys_away"))
    )
    try:
        for response in (
            await photo_stack.verify(customer.test_key, jpeg()),
            await photo_stack.call(customer.test_key, "GET", KEYS),
        ):
            assert response.status_code == 503
            assert response.json() == {"error": "Authentication service unavailable; retry"}
    finally:
        back = text("ALTER TABLE api_keys_away RENAME TO api_keys")
        await photo_stack.db.write(lambda connection: connection.execute(back))
    history = await photo_stack.call(customer.test_key, "GET", "/api/v1/verifications")
    assert (history.status_code, history.json()["data"]) == (200, [])
