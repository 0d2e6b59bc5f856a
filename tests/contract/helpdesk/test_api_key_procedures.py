"""Sections 2.6, 4.1, 5.1 and 7: the API key procedures `apiKeys.list/create/revoke` for an organization's admins; the
key `hd_live_<secret>` is shown in its creation's answer only and stored as its SHA-256 alone; a key grants only its
scopes on the REST API (a write scope implies the read) and a revoked one is refused at once."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.common.keys import KEYS
from storage.helpdesk import accounts
from tests.helpdesk_stack import Browser, HelpdeskStack, data

FORBIDDEN = (403, "FORBIDDEN", -32003)
UNAUTHORIZED = (401, "UNAUTHORIZED", -32001)
NOT_FOUND = (404, "NOT_FOUND", -32004)
BAD_REQUEST = (400, "BAD_REQUEST", -32600)
LISTED = {"id", "name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"}
TICKET = {"subject": "My order has not arrived", "customer_email": "ada@example.com"}


def refusal(answer: httpx.Response) -> tuple[int, str, int]:
    """A lone call's error as the caller sees it: (HTTP status, `data.code`, `code`); `data.httpStatus` agrees."""
    error = answer.json()["error"]["json"]
    assert error["data"]["httpStatus"] == answer.status_code, error
    assert error["message"]
    return answer.status_code, error["data"]["code"], error["code"]


def rest_error(answer: httpx.Response) -> tuple[int, str]:
    """A REST error as the caller sees it: (status, `error.code`)."""
    return answer.status_code, answer.json()["error"]["code"]


@pytest.fixture
async def admin(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Browser]:
    """The admin of a new organization, signed in."""
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up(f"Keys {uuid.uuid4().hex[:6]}")
        yield browser


async def create(browser: Browser, name: str, *scopes: str) -> dict[str, Any]:
    return dict(data(await browser.call("apiKeys.create", {"name": name, "scopes": list(scopes)})))


async def listed(browser: Browser) -> list[dict[str, Any]]:
    return list(data(await browser.query("apiKeys.list")))


def stored_row(connection: Connection, key_id: str) -> Any:
    return connection.execute(select(KEYS).where(KEYS.c.id == key_id)).one()


async def test_create_shows_the_key_once_and_the_list_only_its_prefix(admin: Browser) -> None:
    answer = await admin.call("apiKeys.create", {"name": "Zapier", "scopes": ["tickets:read", "customers:write"]})
    created = data(answer)
    assert set(created) == LISTED | {"key"}
    key = created["key"]
    assert key.startswith("hd_live_")
    assert len(key) > len("hd_live_") + 30
    assert (created["name"], created["scopes"], created["revoked_at"]) == (
        "Zapier",
        ["tickets:read", "customers:write"],
        None,
    )
    assert key.startswith(created["prefix"])
    assert len(created["prefix"]) < len(key) - 20  # never enough of it to use
    listing = await admin.query("apiKeys.list")
    shown = data(listing)
    assert shown == [{field: created[field] for field in LISTED}]
    assert key not in listing.text
    assert "key" not in shown[0]


async def test_the_stored_row_holds_only_the_keys_sha256(helpdesk_stack: HelpdeskStack, admin: Browser) -> None:
    created = await create(admin, "stored", "tickets:*")
    row = await helpdesk_stack.db.read(stored_row, created["id"])
    assert row.key_hash == hashlib.sha256(created["key"].encode()).hexdigest()
    assert all(created["key"] not in str(value) for value in row)
    assert row.scopes == ["tickets:*"]
    assert row.owner_id == data(await admin.query("auth.getUser"))["organization_id"]


async def test_a_created_key_works_on_the_rest_api_with_its_scopes_only(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    reader = (await create(admin, "reader", "tickets:read"))["key"]
    writer = (await create(admin, "writer", "tickets:write"))["key"]
    other = (await create(admin, "customers only", "customers:read"))["key"]
    made = await helpdesk_stack.rest(writer, "POST", "/tickets", json=TICKET)
    assert made.status_code == 201, made.text
    ticket = made.json()
    assert ticket["subject"] == TICKET["subject"]
    for key in (reader, writer):  # a write scope implies the read
        got = await helpdesk_stack.rest(key, "GET", f"/tickets/{ticket['id']}")
        assert (got.status_code, got.json()["id"]) == (200, ticket["id"])
        page = await helpdesk_stack.rest(key, "GET", "/tickets")
        assert [found["id"] for found in page.json()["data"]] == [ticket["id"]]
    assert rest_error(await helpdesk_stack.rest(reader, "POST", "/tickets", json=TICKET)) == (403, "forbidden")
    assert rest_error(await helpdesk_stack.rest(other, "GET", "/tickets")) == (403, "forbidden")
    assert rest_error(await helpdesk_stack.rest(None, "GET", "/tickets")) == (401, "unauthorized")


async def test_revoke_makes_the_next_rest_request_401_and_the_list_shows_when(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    created = await create(admin, "short-lived", "tickets:read")
    key = created["key"]
    assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 200
    revoked = data(await admin.call("apiKeys.revoke", {"id": created["id"]}))
    assert (revoked["success"], revoked["id"]) == (True, created["id"])
    assert revoked["revoked_at"]
    refused = await helpdesk_stack.rest(key, "GET", "/tickets")
    assert rest_error(refused) == (401, "unauthorized")
    [shown] = await listed(admin)
    assert (shown["id"], shown["revoked_at"]) == (created["id"], revoked["revoked_at"])
    again = data(await admin.call("apiKeys.revoke", {"id": created["id"]}))  # revoked for good, at its first time
    assert again["revoked_at"] == revoked["revoked_at"]
    assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 401


async def test_an_unknown_scope_is_bad_request_and_makes_no_key(admin: Browser) -> None:
    for scopes in (["tickets:read", "tickets:delete"], ["payroll:read"], []):
        answer = await admin.call("apiKeys.create", {"name": "bad", "scopes": scopes})
        assert refusal(answer) == BAD_REQUEST, scopes
    assert refusal(await admin.call("apiKeys.create", {"name": "", "scopes": ["*"]})) == BAD_REQUEST
    assert await listed(admin) == []


async def test_another_organizations_key_is_not_found_and_keeps_working(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    theirs = await create(admin, "theirs", "tickets:read")
    async with helpdesk_stack.browser() as other:
        await other.sign_up("Other Org")
        assert await listed(other) == []
        assert refusal(await other.call("apiKeys.revoke", {"id": theirs["id"]})) == NOT_FOUND
        assert refusal(await other.call("apiKeys.revoke", {"id": str(uuid.uuid4())})) == NOT_FOUND
    assert (await helpdesk_stack.rest(theirs["key"], "GET", "/tickets")).status_code == 200


def join_as_agent(connection: Connection, user_id: str, organization_id: str) -> None:
    """The user becomes an agent of the organization (no procedure invites members yet)."""
    connection.execute(
        accounts.USERS.update()
        .where(accounts.USERS.c.id == user_id)
        .values(organization_id=organization_id, role="agent")
    )


def every_procedure(key_id: str) -> list[tuple[str, dict[str, Any] | None]]:
    return [
        ("apiKeys.list", None),
        ("apiKeys.create", {"name": "mine", "scopes": ["*"]}),
        ("apiKeys.revoke", {"id": key_id}),
    ]


async def answer(browser: Browser, procedure: str, given: dict[str, Any] | None) -> httpx.Response:
    return await (browser.query(procedure) if given is None else browser.call(procedure, given))


async def test_an_agent_of_the_organization_is_forbidden_every_key_procedure(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    created = await create(admin, "admins only", "tickets:read")
    organization_id = data(await admin.query("auth.getUser"))["organization_id"]
    async with helpdesk_stack.browser() as agent:
        await agent.sign_in()
        await helpdesk_stack.db.write(join_as_agent, data(await agent.query("auth.getUser"))["id"], organization_id)
        for procedure, given in every_procedure(created["id"]):
            assert refusal(await answer(agent, procedure, given)) == FORBIDDEN, procedure
    assert [key["id"] for key in await listed(admin)] == [created["id"]]
    assert (await helpdesk_stack.rest(created["key"], "GET", "/tickets")).status_code == 200


async def test_a_user_who_has_not_completed_signup_is_forbidden(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as newcomer:
        await newcomer.sign_in()
        for procedure, given in every_procedure(str(uuid.uuid4())):
            assert refusal(await answer(newcomer, procedure, given)) == FORBIDDEN, procedure


async def test_without_a_session_every_key_procedure_is_unauthorized(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as anonymous:
        for procedure, given in every_procedure(str(uuid.uuid4())):
            assert refusal(await answer(anonymous, procedure, given)) == UNAUTHORIZED, procedure


async def test_a_key_does_not_authorize_the_procedures(helpdesk_stack: HelpdeskStack, admin: Browser) -> None:
    """Procedures are authenticated by the session cookie alone (section 5.2): a bearer key, even with `*`, is no
    session."""
    key = (await create(admin, "everything", "*"))["key"]
    async with httpx.AsyncClient(base_url=helpdesk_stack.base_url, timeout=60) as bare:
        headers = {"Authorization": f"Bearer {key}"}
        listing = await bare.get("/api/trpc/apiKeys.list", headers=headers)
        assert refusal(listing) == UNAUTHORIZED
        made = await bare.post(
            "/api/trpc/apiKeys.create", json={"json": {"name": "x", "scopes": ["*"]}}, headers=headers
        )
        assert refusal(made) == UNAUTHORIZED
    assert [shown["name"] for shown in await listed(admin)] == ["everything"]
