"""Inbound channels (issue 16, "Channels and routing") as their users manage them: the procedures
`channels.list/create/delete` for admins, the REST routes under scope `integrations:*`, the secrets made for a
channel shown once, an address routing to one live channel at a time, and `GET /api/v1/inbound-messages` (scope
`tickets:read`) listing what came and what it became."""

from __future__ import annotations

import uuid
from email.message import EmailMessage
from typing import Any

from tests.helpdesk_stack import HelpdeskStack, data, trpc_error
from tests.helpers import until


def address() -> str:
    return f"help-{uuid.uuid4().hex[:8]}@acme.example"


async def test_a_channel_is_made_with_its_secrets_shown_once_and_listed_without_them(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        mailbox = address()
        created = data(
            await browser.call("channels.create", {"kind": "email", "name": "Support", "addresses": [mailbox.upper()]})
        )
        assert (created["kind"], created["addresses"]) == ("email", [mailbox])
        assert set(created["secrets"]) == {"forwarder_secret", "inbound_token"}
        assert all(len(secret) >= 40 for secret in created["secrets"].values())
        listed = data(await browser.query("channels.list"))
        assert [channel["id"] for channel in listed] == [created["id"]]
        assert "secrets" not in listed[0]
        assert set(listed[0]["secret_names"]) == {"forwarder_secret", "inbound_token"}
        for secret in created["secrets"].values():
            assert secret not in str(listed)


async def test_an_address_routes_to_one_live_channel_and_is_free_again_once_it_is_deleted(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("integrations:*")
    mailbox = address()
    body = {"kind": "email", "name": "Support", "addresses": [mailbox]}
    first = await helpdesk_stack.rest(key, "POST", "/channels", json=body)
    assert first.status_code == 201, first.text
    taken = await helpdesk_stack.rest(key, "POST", "/channels", json=body)
    assert (taken.status_code, taken.json()["error"]["code"]) == (409, "conflict")
    deleted = await helpdesk_stack.rest(key, "DELETE", f"/channels/{first.json()['id']}")
    assert (deleted.status_code, deleted.json()) == (200, {"id": first.json()["id"], "deleted": True})
    assert (await helpdesk_stack.rest(key, "POST", "/channels", json=body)).status_code == 201
    assert (await helpdesk_stack.rest(key, "GET", f"/channels/{first.json()['id']}")).status_code == 404


async def test_a_channel_the_kind_does_not_allow_is_400_and_makes_nothing(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("integrations:*")
    cases = [
        ({"kind": "fax", "name": "F", "addresses": ["1"]}, "kind"),
        ({"kind": "email", "name": "E"}, "needs at least one email"),
        ({"kind": "sms", "name": "S", "addresses": ["+14155550100"], "secrets": {"password": "x"}}, "no secret"),
        ({"kind": "email", "name": "E", "addresses": [address()], "settings": {"colour": "red"}}, "no setting"),
    ]
    for body, said in cases:
        refused = await helpdesk_stack.rest(key, "POST", "/channels", json=body)
        assert refused.status_code == 400, refused.text
        assert said in refused.json()["error"]["message"]
    assert (await helpdesk_stack.rest(key, "GET", "/channels")).json()["data"] == []


async def test_channels_need_the_integrations_scope_and_admins(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("tickets:*")
    assert (await helpdesk_stack.rest(key, "GET", "/channels")).status_code == 403
    async with helpdesk_stack.browser() as stranger:
        await stranger.sign_in()
        assert trpc_error(await stranger.query("channels.list")) == (403, "FORBIDDEN")


async def test_inbound_messages_list_what_came_and_what_it_became(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("integrations:*", "tickets:read")
    mailbox = address()
    made = await helpdesk_stack.rest(
        key, "POST", "/channels", json={"kind": "email", "name": "M", "addresses": [mailbox]}
    )
    channel = made.json()
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "ada@example.com", mailbox, "Hello"
    mail["Message-ID"] = f"<{uuid.uuid4().hex}@example.com>"
    mail.set_content("Hi there")
    headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": channel["secrets"]["forwarder_secret"]}
    assert (
        await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=mail.as_bytes(), headers=headers)
    ).status_code == 200

    async def processed() -> list[dict[str, Any]]:
        listed = await helpdesk_stack.rest(key, "GET", "/inbound-messages", params={"channel_id": channel["id"]})
        return [m for m in listed.json()["data"] if m["state"] == "processed"]

    [message] = await until(processed, "the mail processed")
    assert (message["provider"], message["classification"]) == ("email_d", "inbound")
    assert message["outcome"] == "new ticket"
    assert message["dedup_key"] == mail["Message-ID"].strip("<>")
    ticket = await helpdesk_stack.rest(key, "GET", f"/tickets/{message['ticket_id']}")
    assert (ticket.json()["subject"], ticket.json()["customer_email"]) == ("Hello", "ada@example.com")
    filtered = await helpdesk_stack.rest(key, "GET", "/inbound-messages", params={"classification": "bounce"})
    assert [m["id"] for m in filtered.json()["data"] if m["channel_id"] == channel["id"]] == []
