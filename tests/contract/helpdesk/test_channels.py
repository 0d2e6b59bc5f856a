"""Inbound channels (issue 16, "Channels and routing") as their users manage them: the procedures
`channels.list/create/update/delete` for admins, the REST routes under scope `integrations:*`, the secrets made for a
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


async def test_a_rotated_forwarder_secret_is_shown_once_and_the_old_one_stops_working_at_once(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("integrations:*")
    mailbox = address()
    made = (
        await helpdesk_stack.rest(key, "POST", "/channels", json={"kind": "email", "name": "M", "addresses": [mailbox]})
    ).json()
    raw = f"From: ada@example.com\r\nTo: {mailbox}\r\nSubject: Hi\r\nMessage-ID: <{uuid.uuid4()}@x>\r\n\r\nHi\r\n"

    async def forward(secret: str) -> int:
        headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": secret}
        sent = await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=raw.encode(), headers=headers)
        return sent.status_code

    change = {"kind": "email", "name": "Front desk", "rotate": ["forwarder_secret"]}
    changed = await helpdesk_stack.rest(key, "PATCH", f"/channels/{made['id']}", json=change)
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["id"], body["name"], body["addresses"]) == (made["id"], "Front desk", [mailbox])
    assert list(body["secrets"]) == ["forwarder_secret"]
    assert body["secrets"]["forwarder_secret"] != made["secrets"]["forwarder_secret"]
    assert await forward(made["secrets"]["forwarder_secret"]) == 401
    assert await forward(body["secrets"]["forwarder_secret"]) == 200
    fetched = (await helpdesk_stack.rest(key, "GET", f"/channels/{made['id']}")).json()
    assert ("secrets" not in fetched, fetched["name"]) == (True, "Front desk")
    assert set(fetched["secret_names"]) == {"forwarder_secret", "inbound_token"}


async def test_a_rotated_verify_token_routes_the_subscription_check_and_the_old_one_routes_nothing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        number_id = str(uuid.uuid4().int)[:15]
        made = data(
            await browser.call(
                "channels.create",
                {"kind": "business_messaging", "name": "W", "addresses": [number_id], "secrets": {"app_secret": "a"}},
            )
        )
        changed = data(
            await browser.call(
                "channels.update",
                {"id": made["id"], "kind": made["kind"], "rotate": ["verify_token"], "secrets": {"app_secret": "b"}},
            )
        )

    async def check(token: str) -> int:
        params = {"hub.mode": "subscribe", "hub.verify_token": token, "hub.challenge": "1158201444"}
        return (await helpdesk_stack.client.get("/api/webhooks/messaging-business", params=params)).status_code

    assert list(changed["secrets"]) == ["verify_token"]
    assert changed["addresses"] == [number_id], "a route by a secret is not listed"
    assert await check(made["secrets"]["verify_token"]) == 403
    assert await check(changed["secrets"]["verify_token"]) == 200


async def test_a_channel_change_its_kind_does_not_allow_is_refused_and_changes_nothing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("integrations:*")
        async with helpdesk_stack.browser() as stranger:
            await stranger.sign_up()
            elsewhere = data(
                await stranger.call("channels.create", {"kind": "email", "name": "X", "addresses": [address()]})
            )
        made = data(await browser.call("channels.create", {"kind": "email", "name": "M", "addresses": [address()]}))
        cases: list[tuple[dict[str, Any], str]] = [
            ({"rotate": ["signing_key"]}, "no secret the helpdesk makes 'signing_key'"),
            ({"secrets": {"forwarder_secret": "mine"}}, "no secret its provider issues 'forwarder_secret'"),
            ({"settings": {"auto_reply": "Hi"}}, "no setting 'auto_reply'"),
            ({"secrets": {"smtp_url": "http://mail.example"}}, "secrets.smtp_url must be smtp://"),
        ]
        for change, said in cases:
            refused = await browser.call("channels.update", {"id": made["id"], "kind": "email", **change})
            assert trpc_error(refused) == (400, "BAD_REQUEST"), refused.text
            assert said in refused.json()["error"]["json"]["message"]
            path, body = f"/channels/{made['id']}", {"kind": "email", **change}
            over_rest = await helpdesk_stack.rest(key, "PATCH", path, json=body)
            assert (over_rest.status_code, over_rest.json()["error"]["code"]) == (400, "invalid_request")
        other = await helpdesk_stack.rest(key, "PATCH", f"/channels/{made['id']}", json={"kind": "sms", "name": "S"})
        assert (other.status_code, other.json()["error"]["code"]) == (409, "conflict")
        assert other.json()["error"]["message"] == "this channel is of kind email, not sms"
        mine = {"id": elsewhere["id"], "kind": "email", "name": "Mine"}
        assert trpc_error(await browser.call("channels.update", mine)) == (404, "NOT_FOUND")
        missing = await helpdesk_stack.rest(key, "PATCH", f"/channels/{elsewhere['id']}", json={"kind": "email"})
        assert missing.status_code == 404
        [listed] = data(await browser.query("channels.list"))
        assert (listed["name"], listed["secret_names"]) == ("M", ["forwarder_secret", "inbound_token"])
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "ada@example.com", made["addresses"][0], "Hello"
    mail["Message-ID"] = f"<{uuid.uuid4().hex}@example.com>"
    mail.set_content("Hi there")
    headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": made["secrets"]["forwarder_secret"]}
    sent = await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=mail.as_bytes(), headers=headers)
    assert sent.status_code == 200, "the refused changes left the secret as it was"


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
