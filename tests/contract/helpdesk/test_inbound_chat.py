"""Team chat (section 4.6; the format is docs/helpdesk.md's, "Team chat") through the running stack: Slack-shaped
events signed `x-chat-signature: v0=<hex HMAC-SHA256 of "v0:{timestamp}:{body}">` under the channel's signing secret,
with `x-chat-request-timestamp` within 300 s; the url_verification challenge answered; a person's message becomes a
ticket and the messages of its chat thread conversations on it; bots' messages make nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import func, select

from storage.helpdesk import inbound
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until

PATH = "/api/webhooks/chat"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return "v0=" + hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()


@dataclass
class Team:
    stack: HelpdeskStack
    key: str
    team_id: str
    secret: str
    channel_id: str

    def callback(self, text: str, *, ts: str, thread_ts: str | None = None, **extra: Any) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "message",
            "channel": "C0SUPPORT",
            "user": "U0GRACE",
            "text": text,
            "ts": ts,
            "channel_type": "channel",
            "user_profile": {"real_name": "Grace Hopper", "display_name": "grace"},
        } | extra
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        return {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "api_app_id": "A0HELPDESK",
            "event": message,
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
            "event_time": int(time.time()),
        }

    async def post(
        self,
        payload: Any,
        *,
        secret: str | None = None,
        timestamp: int | None = None,
        body: bytes | None = None,
        query: str = "",
    ) -> httpx.Response:
        raw = body if body is not None else json.dumps(payload).encode()
        at = str(int(time.time()) if timestamp is None else timestamp)
        headers = {
            "Content-Type": "application/json",
            "x-chat-request-timestamp": at,
            "x-chat-signature": sign(secret or self.secret, at, raw),
        }
        return await self.stack.client.post(PATH + query, content=raw, headers=headers)

    async def stored(self) -> int:
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == self.channel_id)
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))

    async def processed(self, count: int) -> list[dict[str, Any]]:
        async def done() -> list[dict[str, Any]]:
            listed = await self.stack.rest(self.key, "GET", "/inbound-messages", params={"channel_id": self.channel_id})
            messages = list(listed.json()["data"])
            return messages if sum(m["state"] == "processed" for m in messages) >= count else []

        return await until(done, f"{count} chat events processed")


async def team(stack: HelpdeskStack) -> Team:
    team_id = f"T{uuid.uuid4().hex[:9].upper()}"
    secret = uuid.uuid4().hex
    channel = {"kind": "chat", "name": "Support chat", "addresses": [team_id], "secrets": {"signing_secret": secret}}
    async with signed_up(stack) as organization:
        made = await organization.rest("POST", "/channels", json=channel)
    assert made.status_code == 201, made.text
    return Team(stack, organization.key, team_id, secret, made.json()["id"])


async def test_the_url_verification_challenge_is_answered_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    chat = await team(helpdesk_stack)
    challenge = {
        "token": "legacy",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification",
    }
    answer = await chat.post(challenge, query=f"?team={chat.team_id}")
    assert (answer.status_code, answer.json()) == (200, {"challenge": challenge["challenge"]})
    wrong = await chat.post(challenge, query=f"?team={chat.team_id}", secret="not-it")
    assert wrong.status_code == 401
    assert await chat.stored() == 0


async def test_a_message_becomes_a_ticket_and_its_thread_replies_conversations_on_it(
    helpdesk_stack: HelpdeskStack,
) -> None:
    chat = await team(helpdesk_stack)
    first = chat.callback("My invoice is wrong\nIt says 3 seats, we have 2.", ts="1767225600.000100")
    answer = await chat.post(first)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    [made] = await chat.processed(1)
    assert (made["provider"], made["classification"], made["outcome"]) == ("chat", "message", "new ticket")
    ticket = (await helpdesk_stack.rest(chat.key, "GET", f"/tickets/{made['ticket_id']}")).json()
    assert (ticket["subject"], ticket["channel"]) == ("My invoice is wrong", "chat")
    customer = (await helpdesk_stack.rest(chat.key, "GET", f"/customers/{ticket['customer_id']}")).json()
    assert (customer["name"], customer["email"]) == ("Grace Hopper", None)

    reply = chat.callback("Any news?", ts="1767225700.000200", thread_ts="1767225600.000100")
    assert (await chat.post(reply)).json() == {"status": "accepted"}
    elsewhere = chat.callback("Another question", ts="1767225800.000300")
    assert (await chat.post(elsewhere)).json() == {"status": "accepted"}
    messages = await chat.processed(3)
    by_key = {m["dedup_key"]: m for m in messages}
    threaded = by_key[reply["event_id"]]
    assert (threaded["ticket_id"], threaded["outcome"]) == (ticket["id"], "threaded by chat thread")
    assert by_key[elsewhere["event_id"]]["outcome"] == "new ticket"
    assert by_key[elsewhere["event_id"]]["ticket_id"] != ticket["id"]
    conversations = (await helpdesk_stack.rest(chat.key, "GET", f"/tickets/{ticket['id']}/conversations")).json()
    assert [c["body"] for c in conversations["data"]] == [
        "Any news?",
        "My invoice is wrong\nIt says 3 seats, we have 2.",
    ]


async def test_a_reply_in_the_thread_of_a_resolved_ticket_reopens_it(helpdesk_stack: HelpdeskStack) -> None:
    chat = await team(helpdesk_stack)
    await chat.post(chat.callback("Printer broken", ts="1767225600.000100"))
    [made] = await chat.processed(1)
    resolved = await helpdesk_stack.rest(
        chat.key, "PATCH", f"/tickets/{made['ticket_id']}", json={"status": "resolved"}
    )
    assert resolved.status_code == 200
    await chat.post(chat.callback("Broken again", ts="1767225900.000100", thread_ts="1767225600.000100"))
    [latest, _] = await chat.processed(2)
    assert latest["outcome"] == "threaded by chat thread, reopened"
    ticket = (await helpdesk_stack.rest(chat.key, "GET", f"/tickets/{made['ticket_id']}")).json()
    assert ticket["status"] == "open"


async def test_bots_messages_and_edits_make_no_ticket(helpdesk_stack: HelpdeskStack) -> None:
    chat = await team(helpdesk_stack)
    bot = chat.callback("Thanks, we are on it", ts="1767225600.000100", bot_id="B0HELPDESK", subtype="bot_message")
    edit = chat.callback("edited", ts="1767225601.000100", subtype="message_changed")
    for payload in (bot, edit):
        assert (await chat.post(payload)).status_code == 200
    messages = await chat.processed(2)
    assert sorted((m["classification"], m["outcome"], m["ticket_id"]) for m in messages) == [
        ("bot", "no ticket: a bot's message", None),
        ("message_changed", "no ticket: a message_changed message", None),
    ]
    assert (await helpdesk_stack.rest(chat.key, "GET", "/tickets")).json()["data"] == []


async def test_a_wrong_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    chat = await team(helpdesk_stack)
    payload = chat.callback("Hello", ts="1767225600.000100")
    wrong = await chat.post(payload, secret="not-the-secret")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    raw = json.dumps(payload).encode()
    unsigned = await helpdesk_stack.client.post(
        PATH, content=raw, headers={"x-chat-request-timestamp": str(int(time.time()))}
    )
    assert unsigned.status_code == 401
    assert await chat.stored() == 0


async def test_a_replayed_timestamp_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    chat = await team(helpdesk_stack)
    payload = chat.callback("Hello", ts="1767225600.000100")
    replayed = await chat.post(payload, timestamp=int(time.time()) - 301)  # signed correctly, but too old
    assert (replayed.status_code, replayed.json()["error"]["code"]) == (401, "unauthorized")
    assert "replay" in replayed.json()["error"]["message"]
    ahead = await chat.post(payload, timestamp=int(time.time()) + 301)
    assert ahead.status_code == 401
    assert await chat.stored() == 0


async def test_a_retried_event_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    chat = await team(helpdesk_stack)
    payload = chat.callback("Hello", ts="1767225600.000100")
    assert (await chat.post(payload)).json() == {"status": "accepted"}
    assert (await chat.post(payload)).json() == {"status": "duplicate"}  # Slack's retry: a new timestamp, same event
    assert await chat.stored() == 1


async def test_an_unknown_team_is_404_and_a_malformed_body_400_and_neither_is_stored(
    helpdesk_stack: HelpdeskStack,
) -> None:
    chat = await team(helpdesk_stack)
    elsewhere = chat.callback("Hello", ts="1767225600.000100") | {"team_id": "T0NOBODY"}
    assert (await chat.post(elsewhere)).status_code == 404
    not_json = await chat.post(None, body=b"{not json", query=f"?team={chat.team_id}")
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_request")
    no_team = await chat.post(None, body=b"{not json")
    assert no_team.status_code == 400
    no_event_id = chat.callback("Hello", ts="1767225600.000100")
    del no_event_id["event_id"]
    refused = await chat.post(no_event_id)
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        400,
        "The body is malformed: Object missing required field `event_id`",
    )
    unknown_type = {"type": "app_rate_limited", "team_id": chat.team_id}
    assert (await chat.post(unknown_type)).status_code == 400
    assert await chat.stored() == 0
