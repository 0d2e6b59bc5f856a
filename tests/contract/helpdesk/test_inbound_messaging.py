"""Section 4.6, business messaging (`/api/webhooks/messaging-business`, WhatsApp Cloud API's shape) and page messaging
(`/api/webhooks/messaging-page`, Messenger's shape) through the running stack: the subscription check echoes
`hub.challenge` for the channel's verify token and is 403 otherwise; a signed call stores each of its messages as its
own event before the 200, a retry stores nothing new, a bad signature or a malformed call stores nothing; and the
processors thread each sender's messages of every type into one ticket, while statuses, read and delivery receipts
make none.

`x-hub-signature-256` signs no timestamp, so there is no replay window to test: a replayed call is a duplicate of the
messages it carries, acknowledged, and stores nothing new."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.contract.helpdesk.inbound_desk import Desk, desk
from tests.helpdesk_stack import HelpdeskStack
from tests.peers.media import MediaPeer

BUSINESS = "/api/webhooks/messaging-business"
PAGE = "/api/webhooks/messaging-page"


def hub_signature(body: bytes, app_secret: str) -> str:
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class App:
    """A messaging channel: its id (phone_number_id or page id), app secret and verify token."""

    desk: Desk
    path: str
    address: str
    app_secret: str
    verify_token: str

    @property
    def stack(self) -> HelpdeskStack:
        return self.desk.stack

    async def post(self, payload: Any, *, app_secret: str | None = None) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "x-hub-signature-256": hub_signature(body, app_secret or self.app_secret),
        }
        return await self.stack.client.post(self.path, content=body, headers=headers)

    async def subscribe(self, **query: str) -> httpx.Response:
        params = {"hub.mode": "subscribe", "hub.verify_token": self.verify_token, "hub.challenge": "1158201444"}
        return await self.stack.client.get(self.path, params=params | query)


@pytest.fixture(scope="module")
def page_cdn() -> Iterator[MediaPeer]:
    """A page messaging CDN, whose attachments the processors fetch."""
    with MediaPeer(account_sid="AC" + "0" * 32, auth_token="unused").serving() as peer:
        yield peer


async def app(stack: HelpdeskStack, kind: str) -> App:
    owner = await desk(stack)
    address = str(uuid.uuid4().int)[:15]
    path, address_kind = (BUSINESS, "phone_number_id") if kind == "business_messaging" else (PAGE, "page_id")
    made = App(owner, path, address, f"app-secret-{uuid.uuid4().hex}", secrets.token_urlsafe(32))
    await owner.open_channel(
        kind, [(address_kind, address)], {"app_secret": made.app_secret, "verify_token": made.verify_token}
    )
    return made


# Business messaging's payloads -----------------------------------------------------------------------------------


def wamid() -> str:
    return "wamid.HBgL" + uuid.uuid4().hex.upper()


def business_call(
    channel: App,
    *,
    messages: Sequence[dict[str, Any]] = (),
    statuses: Sequence[dict[str, Any]] = (),
    contacts: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": channel.address},
    }
    if contacts:
        value["contacts"] = list(contacts)
    if messages:
        value["messages"] = list(messages)
    if statuses:
        value["statuses"] = list(statuses)
    entry = {"id": "102290129340398", "changes": [{"field": "messages", "value": value}]}
    return {"object": "whatsapp_business_account", "entry": [entry]}


def contact(wa_id: str, name: str) -> dict[str, Any]:
    return {"profile": {"name": name}, "wa_id": wa_id}


def text(wa_id: str, body: str) -> dict[str, Any]:
    return {"from": wa_id, "id": wamid(), "timestamp": str(int(time.time())), "type": "text", "text": {"body": body}}


def of_type(wa_id: str, kind: str, content: Any) -> dict[str, Any]:
    return {"from": wa_id, "id": wamid(), "timestamp": str(int(time.time())), "type": kind, kind: content}


def wa_id() -> str:
    return "1555" + str(uuid.uuid4().int)[:7]


# Page messaging's payloads ---------------------------------------------------------------------------------------


def page_call(channel: App, *events: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "page",
        "entry": [{"id": channel.address, "time": int(time.time() * 1000), "messaging": list(events)}],
    }


def page_event(channel: App, sender: str, **what: Any) -> dict[str, Any]:
    return {"sender": {"id": sender}, "recipient": {"id": channel.address}, "timestamp": int(time.time() * 1000)} | what


def mid() -> str:
    return "m_" + uuid.uuid4().hex


# The subscription check ------------------------------------------------------------------------------------------


async def test_the_subscription_check_echoes_the_challenge_for_the_channel_s_verify_token(
    helpdesk_stack: HelpdeskStack,
) -> None:
    for kind in ("business_messaging", "page_messaging"):
        channel = await app(helpdesk_stack, kind)
        answer = await channel.subscribe()
        assert (answer.status_code, answer.text) == (200, "1158201444")
        assert answer.headers["content-type"].split(";")[0] == "text/plain"


async def test_the_subscription_check_is_403_for_any_other_token_mode_or_endpoint(
    helpdesk_stack: HelpdeskStack,
) -> None:
    business = await app(helpdesk_stack, "business_messaging")
    page = await app(helpdesk_stack, "page_messaging")
    refusals = [
        await business.subscribe(**{"hub.verify_token": "not-the-token"}),
        await business.subscribe(**{"hub.mode": "unsubscribe"}),
        await business.subscribe(**{"hub.challenge": ""}),
        await helpdesk_stack.client.get(BUSINESS),
        # a page channel's token does not verify the business endpoint, nor the other way round
        await helpdesk_stack.client.get(
            BUSINESS, params={"hub.mode": "subscribe", "hub.verify_token": page.verify_token, "hub.challenge": "1"}
        ),
        await helpdesk_stack.client.get(
            PAGE, params={"hub.mode": "subscribe", "hub.verify_token": business.verify_token, "hub.challenge": "1"}
        ),
    ]
    assert [(answer.status_code, answer.json()["error"]["code"]) for answer in refusals] == [(403, "forbidden")] * 6


# Business messaging ----------------------------------------------------------------------------------------------


async def test_a_signed_business_message_is_stored_and_becomes_a_ticket_of_its_named_sender(
    helpdesk_stack: HelpdeskStack,
) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    sender = wa_id()
    message = text(sender, "Hi, is my order shipped?")
    answer = await channel.post(business_call(channel, contacts=[contact(sender, "Ada Lovelace")], messages=[message]))
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted", "events": 1, "stored": 1})
    [event] = await channel.desk.processed(1)
    assert (event["provider"], event["dedup_key"], event["outcome"]) == (
        "business_messaging",
        message["id"],
        "new ticket",
    )
    ticket = await channel.desk.ticket(event["ticket_id"])
    assert (ticket["subject"], ticket["channel"], ticket["tags"]) == (
        "WhatsApp message from Ada Lovelace",
        "messaging",
        ["whatsapp"],
    )
    customer = await channel.desk.customer(ticket["customer_id"])
    assert (customer["name"], customer["phone"]) == ("Ada Lovelace", f"+{sender}")
    [conversation] = await channel.desk.conversations(ticket["id"])
    assert (conversation.body, conversation.author_type) == ("Hi, is my order shipped?", "customer")


async def test_a_bad_business_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    payload = business_call(channel, messages=[text(wa_id(), "Hi")])
    wrong = await channel.post(payload, app_secret="not-the-app-secret")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    body = json.dumps(payload).encode()
    unsigned = await helpdesk_stack.client.post(BUSINESS, content=body, headers={"Content-Type": "application/json"})
    assert unsigned.status_code == 401
    other_body = await helpdesk_stack.client.post(
        BUSINESS,
        content=body + b" ",
        headers={"Content-Type": "application/json", "x-hub-signature-256": hub_signature(body, channel.app_secret)},
    )
    assert other_body.status_code == 401
    assert await channel.desk.stored() == 0


async def test_a_business_retry_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    payload = business_call(channel, messages=[text(wa_id(), "Once"), text(wa_id(), "Twice")])
    assert (await channel.post(payload)).json() == {"status": "accepted", "events": 2, "stored": 2}
    assert (await channel.post(payload)).json() == {"status": "duplicate", "events": 2, "stored": 0}
    assert await channel.desk.stored() == 2


async def test_a_malformed_business_call_is_a_clear_4xx_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    no_json = await helpdesk_stack.client.post(
        BUSINESS, content=b"{not json", headers={"Content-Type": "application/json", "x-hub-signature-256": "sha256=00"}
    )
    assert (no_json.status_code, no_json.json()["error"]["code"]) == (400, "invalid_request")
    assert (await channel.post({"object": "whatsapp_business_account"})).status_code == 400
    no_id = {"from": wa_id(), "timestamp": "1700000000", "type": "text", "text": {"body": "no id"}}
    assert (await channel.post(business_call(channel, messages=[no_id]))).status_code == 400
    no_number = business_call(channel, messages=[text(wa_id(), "Hi")])
    del no_number["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"]
    assert (await channel.post(no_number)).status_code == 400
    elsewhere = business_call(channel, messages=[text(wa_id(), "Hi")])
    elsewhere["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = "999000999000999"
    assert (await channel.post(elsewhere)).status_code == 404
    as_form = await helpdesk_stack.client.post(BUSINESS, data={"entry": "1"})
    assert as_form.status_code == 415
    assert await channel.desk.stored() == 0


async def test_every_business_message_type_is_stored_and_one_sender_s_messages_make_one_ticket(
    helpdesk_stack: HelpdeskStack,
) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    sender = wa_id()
    messages = [
        text(sender, "Hello"),
        of_type(sender, "image", {"id": "1001", "mime_type": "image/jpeg", "sha256": "abc", "caption": "The box"}),
        of_type(sender, "document", {"id": "1002", "mime_type": "application/pdf", "filename": "invoice.pdf"}),
        of_type(sender, "audio", {"id": "1003", "mime_type": "audio/ogg; codecs=opus"}),
        of_type(sender, "video", {"id": "1004", "mime_type": "video/mp4"}),
        of_type(sender, "location", {"latitude": 51.5, "longitude": -0.12, "name": "Depot", "address": "1 Road"}),
        of_type(
            sender, "contacts", [{"name": {"formatted_name": "Grace Hopper"}, "phones": [{"phone": "+15550002222"}]}]
        ),
        of_type(sender, "interactive", {"type": "button_reply", "button_reply": {"id": "refund", "title": "Refund"}}),
    ]
    answer = await channel.post(business_call(channel, contacts=[contact(sender, "Ada")], messages=messages))
    assert answer.json() == {"status": "accepted", "events": 8, "stored": 8}
    events = await channel.desk.processed(8)
    assert sorted(event["dedup_key"] for event in events) == sorted(message["id"] for message in messages)
    assert sorted(event["outcome"] for event in events) == ["new ticket"] + ["threaded by sender"] * 7
    [ticket] = await channel.desk.tickets()
    by_id = {c.message_id: c for c in await channel.desk.conversations(ticket["id"])}
    assert [by_id[message["id"]].body for message in messages] == [
        "Hello",
        "The box",
        "(document: invoice.pdf)",
        "(audio)",
        "(video)",
        "Location: Depot, 1 Road (51.5, -0.12)",
        "Contact: Grace Hopper, +15550002222",
        "Chose: Refund",
    ]
    assert by_id[messages[1]["id"]].attachments == [  # fetched with the access token, which this channel lacks
        {
            "media_id": "1001",
            "content_type": "image/jpeg",
            "type": "image",
            "caption": "The box",
            "sha256": "abc",
            "refused": "the channel has no access_token to fetch it with",
        }
    ]
    assert by_id[messages[2]["id"]].attachments[0]["filename"] == "invoice.pdf"


async def test_each_business_sender_has_a_thread_of_its_own(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    ada, grace = wa_id(), wa_id()
    await channel.post(business_call(channel, messages=[text(ada, "One"), text(grace, "Two"), text(ada, "Three")]))
    await channel.desk.processed(3)
    tickets = await channel.desk.tickets()
    assert len(tickets) == 2
    bodies = sorted([sorted(c.body for c in await channel.desk.conversations(ticket["id"])) for ticket in tickets])
    assert bodies == [["One", "Three"], ["Two"]]


async def test_business_statuses_update_the_delivery_state_and_make_no_ticket(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    ours = wamid()
    statuses = [
        {"id": ours, "status": state, "timestamp": "1700000000", "recipient_id": wa_id()}
        for state in ("sent", "delivered", "read")
    ]
    assert (await channel.post(business_call(channel, statuses=statuses))).json()["stored"] == 3
    assert (await channel.post(business_call(channel, statuses=statuses[1:]))).json()["status"] == "duplicate"
    events = await channel.desk.processed(3)
    outcomes = {event["dedup_key"]: event["outcome"] for event in events}
    assert outcomes == {
        f"{ours}:{state}": f"delivery state {state} of message {ours}; no ticket"
        for state in ("sent", "delivered", "read")
    }
    assert {(event["classification"], event["ticket_id"]) for event in events} == {("delivery_state", None)}
    assert await channel.desk.tickets() == []


# Page messaging --------------------------------------------------------------------------------------------------


async def test_a_signed_page_message_and_postback_thread_into_their_sender_s_ticket(
    helpdesk_stack: HelpdeskStack, page_cdn: MediaPeer
) -> None:
    channel = await app(helpdesk_stack, "page_messaging")
    sender = str(uuid.uuid4().int)[:16]
    photo = page_cdn.public(f"/cdn/page/{uuid.uuid4().hex}/photo.jpg", b"\xff\xd8 a photo", "image/jpeg")
    image = {"type": "image", "payload": {"url": photo}}
    message = page_event(channel, sender, message={"mid": mid(), "text": "Is this in stock?", "attachments": [image]})
    postback = page_event(channel, sender, postback={"mid": mid(), "title": "Talk to a human", "payload": "HUMAN"})
    answer = await channel.post(page_call(channel, message, postback))
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted", "events": 2, "stored": 2})
    events = await channel.desk.processed(2)
    assert sorted(event["dedup_key"] for event in events) == sorted(
        [message["message"]["mid"], postback["postback"]["mid"]]
    )
    assert sorted(event["outcome"] for event in events) == ["new ticket", "threaded by sender"]
    [ticket] = await channel.desk.tickets()
    assert (ticket["subject"], ticket["channel"], ticket["tags"]) == (
        f"Messenger message from {sender}",
        "messaging",
        ["messenger"],
    )
    by_id = {c.message_id: c for c in await channel.desk.conversations(ticket["id"])}
    assert by_id[message["message"]["mid"]].body == "Is this in stock?"
    assert by_id[postback["postback"]["mid"]].body == "Chose: Talk to a human, HUMAN"
    [attachment] = by_id[message["message"]["mid"]].attachments
    assert {name: attachment[name] for name in ("url", "type", "name", "content_type", "size")} == {
        "url": photo,
        "type": "image",
        "name": "photo.jpg",
        "content_type": "image/jpeg",
        "size": 10,
    }
    assert attachment["blob"]


async def test_page_read_and_delivery_receipts_make_no_ticket(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "page_messaging")
    sender, ours = str(uuid.uuid4().int)[:16], mid()
    read = page_event(channel, sender, read={"watermark": 1700000000123})
    delivery = page_event(channel, sender, delivery={"mids": [ours], "watermark": 1700000000100})
    assert (await channel.post(page_call(channel, delivery, read))).json()["stored"] == 2
    events = await channel.desk.processed(2)
    assert sorted(event["outcome"] for event in events) == [
        f"delivery state delivered of messages {ours}; no ticket",
        f"delivery state read (up to 1700000000123) by {sender}; no ticket",
    ]
    assert {event["classification"] for event in events} == {"delivery_state"}
    assert await channel.desk.tickets() == []


async def test_a_bad_page_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "page_messaging")
    payload = page_call(channel, page_event(channel, "42", message={"mid": mid(), "text": "Hi"}))
    wrong = await channel.post(payload, app_secret="not-the-app-secret")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    assert await channel.desk.stored() == 0


async def test_a_page_retry_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "page_messaging")
    payload = page_call(channel, page_event(channel, "42", message={"mid": mid(), "text": "Hi"}))
    assert (await channel.post(payload)).json()["status"] == "accepted"
    assert (await channel.post(payload)).json() == {"status": "duplicate", "events": 1, "stored": 0}
    assert await channel.desk.stored() == 1


async def test_a_malformed_page_call_is_a_clear_4xx_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    channel = await app(helpdesk_stack, "page_messaging")
    assert (await channel.post({"object": "page", "entry": "none"})).status_code == 400
    assert (await channel.post({"object": "page", "entry": [{"time": 1, "messaging": []}]})).status_code == 400
    no_mid = page_call(channel, page_event(channel, "42", message={"text": "no mid"}))
    assert (await channel.post(no_mid)).status_code == 400
    other_page = page_call(channel, page_event(channel, "42", message={"mid": mid(), "text": "Hi"}))
    other_page["entry"][0]["id"] = "999000999000999"
    assert (await channel.post(other_page)).status_code == 404
    assert await channel.desk.stored() == 0
