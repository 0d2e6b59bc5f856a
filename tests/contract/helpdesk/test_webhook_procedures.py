"""Sections 2.4, 4.1, 4.4, 6.1 and 7: the outgoing webhook procedures `webhooks.list/create/update/delete/test` for an
organization's admins; a subscription never shows its secret; http and https targets, at most 16 per organization;
`webhooks.test` answers with the receiver's status, its delivery signed only when a secret was given."""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from storage.common.webhooks.models import WebhookEvent
from storage.helpdesk import accounts
from tests.helpdesk_stack import Browser, HelpdeskStack, data
from tests.peers.receiver import WebhookReceiver, verify_helpdesk

FORBIDDEN = (403, "FORBIDDEN", -32003)
UNAUTHORIZED = (401, "UNAUTHORIZED", -32001)
NOT_FOUND = (404, "NOT_FOUND", -32004)
CONFLICT = (409, "CONFLICT", -32009)
BAD_REQUEST = (400, "BAD_REQUEST", -32600)
SHOWN = {"id", "url", "events", "enabled", "status", "created_at"}
HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def refusal(answer: httpx.Response) -> tuple[int, str, int]:
    """A lone call's error as the caller sees it: (HTTP status, `data.code`, `code`); `data.httpStatus` agrees."""
    error = answer.json()["error"]["json"]
    assert error["data"]["httpStatus"] == answer.status_code, error
    assert isinstance(error["message"], str)
    assert error["message"]
    return answer.status_code, error["data"]["code"], error["code"]


@pytest.fixture
async def admin(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Browser]:
    """The admin of a new organization, signed in."""
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up(f"Hooks {uuid.uuid4().hex[:6]}")
        yield browser


async def organization_of(browser: Browser) -> str:
    return str(data(await browser.query("auth.getUser"))["organization_id"])


async def create(browser: Browser, url: str, events: list[str], **more: Any) -> dict[str, Any]:
    return dict(data(await browser.call("webhooks.create", {"url": url, "events": events, **more})))


async def listed(browser: Browser) -> list[dict[str, Any]]:
    return list(data(await browser.query("webhooks.list")))


async def test_create_answers_the_subscription_enabled_by_default_without_its_secret(
    admin: Browser, plain_receiver: WebhookReceiver
) -> None:
    url = plain_receiver.url(plain_receiver.new_path())
    answer = await admin.call(
        "webhooks.create", {"url": url, "events": ["ticket.created", "ticket.updated"], "secret": "s3cret-value"}
    )
    created = data(answer)
    assert set(created) == SHOWN
    assert (created["url"], created["events"], created["enabled"], created["status"]) == (
        url,
        ["ticket.created", "ticket.updated"],
        True,
        "active",
    )
    assert created["id"]
    assert "s3cret-value" not in answer.text
    assert answer.json()["result"]["data"]["meta"]["values"] == {"created_at": ["Date"]}


async def test_list_shows_the_organizations_own_subscriptions_and_never_a_secret(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    signed = await create(admin, "https://hooks.example.com/signed", ["ticket.created"], secret="list-secret-1")
    unsigned = await create(admin, "http://hooks.example.com/unsigned", ["customer.created"])
    answer = await admin.query("webhooks.list")
    shown = data(answer)
    assert {hook["id"] for hook in shown} == {signed["id"], unsigned["id"]}
    assert all(set(hook) == SHOWN for hook in shown)
    assert "list-secret-1" not in answer.text
    async with helpdesk_stack.browser() as other:
        await other.sign_up("Other Org")
        assert await listed(other) == []


async def test_http_and_https_targets_are_taken_and_enabled_false_creates_it_disabled(admin: Browser) -> None:
    plain = await create(admin, "http://hooks.example.com/plain", ["ticket.created"])
    secure = await create(admin, "https://hooks.example.com/tls", ["ticket.created"], enabled=False)
    assert (plain["url"], plain["enabled"]) == ("http://hooks.example.com/plain", True)
    assert (secure["url"], secure["enabled"], secure["status"]) == ("https://hooks.example.com/tls", False, "disabled")
    assert {hook["id"]: hook["enabled"] for hook in await listed(admin)} == {plain["id"]: True, secure["id"]: False}


@pytest.mark.parametrize(
    "given",
    [
        {"url": "https://hooks.example.com/x", "events": ["ticket.deleted"]},
        {"url": "https://hooks.example.com/x", "events": []},
        {"url": "https://hooks.example.com/x"},
        {"url": "ftp://hooks.example.com/x", "events": ["ticket.created"]},
        {"url": "https:///no-host", "events": ["ticket.created"]},
        {"events": ["ticket.created"]},
        {"url": "https://hooks.example.com/x", "events": ["ticket.created"], "secret": ""},
        {"url": "https://hooks.example.com/x", "events": ["ticket.created"], "colour": "blue"},
    ],
)
async def test_a_subscription_the_contract_does_not_allow_is_bad_request_and_creates_nothing(
    admin: Browser, given: dict[str, Any]
) -> None:
    assert refusal(await admin.call("webhooks.create", given)) == BAD_REQUEST
    assert await listed(admin) == []


async def test_a_17th_subscription_is_conflict_until_one_is_deleted(admin: Browser) -> None:
    made = [await create(admin, f"https://hooks.example.com/{n}", ["ticket.created"]) for n in range(16)]
    seventeenth = {"url": "https://hooks.example.com/17", "events": ["ticket.created"]}
    assert refusal(await admin.call("webhooks.create", seventeenth)) == CONFLICT
    assert len(await listed(admin)) == 16
    assert data(await admin.call("webhooks.delete", {"id": made[0]["id"]})) == {"success": True, "id": made[0]["id"]}
    again = data(await admin.call("webhooks.create", seventeenth))
    assert {hook["id"] for hook in await listed(admin)} == {hook["id"] for hook in made[1:]} | {again["id"]}


async def test_update_changes_the_events_and_enabled(admin: Browser) -> None:
    hook = await create(admin, "https://hooks.example.com/u", ["ticket.created"], secret="kept")
    events = ["ticket.assigned", "conversation.created"]
    changed = data(await admin.call("webhooks.update", {"id": hook["id"], "events": events, "enabled": False}))
    assert changed == hook | {"events": events, "enabled": False, "status": "disabled"}
    assert await listed(admin) == [changed]
    back_on = {"id": hook["id"], "events": ["ticket.created"], "enabled": True}
    enabled = data(await admin.call("webhooks.update", back_on))
    assert (enabled["events"], enabled["enabled"], enabled["status"]) == (["ticket.created"], True, "active")
    unknown_event = {"id": hook["id"], "events": ["ticket.exploded"], "enabled": True}
    assert refusal(await admin.call("webhooks.update", unknown_event)) == BAD_REQUEST
    assert await listed(admin) == [enabled]


async def test_after_delete_the_subscription_is_not_found_for_every_procedure(admin: Browser) -> None:
    hook = await create(admin, "https://hooks.example.com/d", ["ticket.created"])
    assert data(await admin.call("webhooks.delete", {"id": hook["id"]})) == {"success": True, "id": hook["id"]}
    assert await listed(admin) == []
    for procedure, given in (
        ("webhooks.delete", {"id": hook["id"]}),
        ("webhooks.update", {"id": hook["id"], "events": ["ticket.created"], "enabled": True}),
        ("webhooks.test", {"id": hook["id"]}),
    ):
        assert refusal(await admin.call(procedure, given)) == NOT_FOUND, procedure
    assert await listed(admin) == []


async def test_another_organizations_subscription_is_not_found_and_stays_as_it_was(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    hook = await create(admin, "https://hooks.example.com/theirs", ["ticket.created"])
    async with helpdesk_stack.browser() as other:
        await other.sign_up("Other Org")
        for procedure, given in (
            ("webhooks.update", {"id": hook["id"], "events": ["ticket.updated"], "enabled": False}),
            ("webhooks.test", {"id": hook["id"]}),
            ("webhooks.delete", {"id": hook["id"]}),
        ):
            assert refusal(await other.call(procedure, given)) == NOT_FOUND, procedure
    assert await listed(admin) == [hook]


async def test_webhooks_test_answers_the_receivers_200_for_a_signed_test_delivery(
    admin: Browser, plain_receiver: WebhookReceiver
) -> None:
    path = plain_receiver.new_path(secret="test-secret", verify=verify_helpdesk)
    hook = await create(admin, plain_receiver.url(path), ["customer.updated"], secret="test-secret")
    tested = data(await admin.call("webhooks.test", {"id": hook["id"]}))
    assert tested == {"id": hook["id"], "event_id": tested["event_id"], "success": True, "status": 200, "error": None}
    [delivery] = plain_receiver.received(path)  # one delivery, whatever the subscription subscribed to
    assert delivery.method == "POST"
    assert delivery.verified is True
    signature = delivery.headers["x-helpdesk-signature"]
    assert HEX_SHA256.match(signature)
    assert signature == hmac.new(b"test-secret", delivery.body, hashlib.sha256).hexdigest()
    assert delivery.headers["x-helpdesk-delivery-id"] == tested["event_id"]
    assert delivery.headers["content-type"].startswith("application/json")
    body = delivery.json
    assert set(body) == {"event", "timestamp", "data"}
    assert body["event"] == "webhook.test"
    assert body["data"] == {"id": hook["id"], "url": hook["url"], "events": ["customer.updated"]}


async def test_webhooks_test_answers_the_receivers_500_as_no_success(
    admin: Browser, plain_receiver: WebhookReceiver
) -> None:
    path = plain_receiver.new_path(secret="failing", verify=verify_helpdesk)
    plain_receiver.respond(path, 500, "receiver broke", times=1)
    hook = await create(admin, plain_receiver.url(path), ["ticket.created"], secret="failing")
    tested = data(await admin.call("webhooks.test", {"id": hook["id"]}))
    assert (tested["id"], tested["success"], tested["status"]) == (hook["id"], False, 500)
    assert "500" in tested["error"]  # says why it was no success
    [delivery, *_] = plain_receiver.received(path)
    assert delivery.verified is True
    assert delivery.headers["x-helpdesk-delivery-id"] == tested["event_id"]


async def test_a_subscription_without_a_secret_gets_unsigned_test_deliveries(
    admin: Browser, plain_receiver: WebhookReceiver
) -> None:
    path = plain_receiver.new_path()
    hook = await create(admin, plain_receiver.url(path), ["ticket.created"])
    tested = data(await admin.call("webhooks.test", {"id": hook["id"]}))
    assert (tested["success"], tested["status"]) == (True, 200)
    [delivery] = plain_receiver.received(path)
    assert "x-helpdesk-signature" not in delivery.headers
    assert delivery.headers["x-helpdesk-delivery-id"] == tested["event_id"]
    assert delivery.json["event"] == "webhook.test"


async def test_a_disabled_subscriptions_test_is_conflict_and_sends_nothing(
    helpdesk_stack: HelpdeskStack, admin: Browser, plain_receiver: WebhookReceiver
) -> None:
    created_off, switched_off = plain_receiver.new_path(), plain_receiver.new_path()
    off = await create(admin, plain_receiver.url(created_off), ["ticket.created"], enabled=False)
    on = await create(admin, plain_receiver.url(switched_off), ["ticket.created"])
    data(await admin.call("webhooks.update", {"id": on["id"], "events": ["ticket.created"], "enabled": False}))
    for hook in (off, on):
        assert refusal(await admin.call("webhooks.test", {"id": hook["id"]})) == CONFLICT
    organization_id = await organization_of(admin)
    test_events = (
        select(func.count())
        .select_from(WebhookEvent)
        .where(WebhookEvent.owner_id == organization_id, WebhookEvent.type == "webhook.test")
    )
    assert await helpdesk_stack.db.read(lambda connection: connection.execute(test_events).scalar_one()) == 0
    assert plain_receiver.received(created_off) == plain_receiver.received(switched_off) == []


def join_as_agent(connection: Connection, user_id: str, organization_id: str) -> None:
    """The user becomes an agent of the organization (no procedure invites members yet)."""
    connection.execute(
        accounts.USERS.update()
        .where(accounts.USERS.c.id == user_id)
        .values(organization_id=organization_id, role="agent")
    )


def every_procedure(hook_id: str) -> list[tuple[str, dict[str, Any] | None]]:
    return [
        ("webhooks.list", None),
        ("webhooks.create", {"url": "https://hooks.example.com/x", "events": ["ticket.created"]}),
        ("webhooks.update", {"id": hook_id, "events": ["ticket.updated"], "enabled": False}),
        ("webhooks.test", {"id": hook_id}),
        ("webhooks.delete", {"id": hook_id}),
    ]


async def answer(browser: Browser, procedure: str, given: dict[str, Any] | None) -> httpx.Response:
    return await (browser.query(procedure) if given is None else browser.call(procedure, given))


async def test_an_agent_of_the_organization_is_forbidden_every_webhook_procedure(
    helpdesk_stack: HelpdeskStack, admin: Browser
) -> None:
    hook = await create(admin, "https://hooks.example.com/admins-only", ["ticket.created"])
    organization_id = await organization_of(admin)
    async with helpdesk_stack.browser() as agent:
        await agent.sign_in()
        agent_id = data(await agent.query("auth.getUser"))["id"]
        await helpdesk_stack.db.write(join_as_agent, agent_id, organization_id)
        assert data(await agent.query("auth.getUser"))["role"] == "agent"
        for procedure, given in every_procedure(hook["id"]):
            assert refusal(await answer(agent, procedure, given)) == FORBIDDEN, procedure
    assert await listed(admin) == [hook]


async def test_a_user_who_has_not_completed_signup_is_forbidden(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as newcomer:
        await newcomer.sign_in()
        for procedure, given in every_procedure("hook_" + uuid.uuid4().hex):
            assert refusal(await answer(newcomer, procedure, given)) == FORBIDDEN, procedure


async def test_without_a_session_every_webhook_procedure_is_unauthorized(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as anonymous:
        for procedure, given in every_procedure("hook_" + uuid.uuid4().hex):
            assert refusal(await answer(anonymous, procedure, given)) == UNAUTHORIZED, procedure
