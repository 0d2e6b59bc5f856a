"""Replies on the messaging channels, on a database alone: a reply to a customer who wrote by business messaging,
page messaging or team chat goes back into their conversation there (processors/helpdesk/outbound.py, against local
peers of the Graph API and the chat's Web API), within the provider's window; the provider's reports move its state;
a caller is answered by SMS. The clock is the test's: windows and backoff are crossed by moving it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.helpdesk.inbound.messaging import business_items, business_parts, page_items, page_parts
from operations.common.errors import Conflict
from operations.helpdesk import tickets as ticket_operations
from operations.helpdesk.tickets import MergeTicketInto
from processors.helpdesk.outbound import BusinessSender, ChatSender, PageSender, SmsSender
from storage.common.db import Database
from storage.helpdesk import channels, outbound, tickets
from tests.integration.test_helpdesk_replies import CIPHER, Desk
from tests.integration.test_inbound_rules import processed
from tests.peers.chat import ChatPeer
from tests.peers.graph import GraphPeer, business_status, page_receipt
from tests.peers.sms import SmsPeer
from tests.peers.smtp import SmtpPeer

GRAPH_TOKEN = "graph-access-token"
BOT_TOKEN = "xoxb-bot-token"
SMS_ACCOUNT = "AC" + "7" * 32


@pytest.fixture
def smtp() -> Iterator[SmtpPeer]:
    with SmtpPeer() as peer:
        yield peer


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphPeer]:
    with GraphPeer(GRAPH_TOKEN) as peer:
        yield peer


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatPeer]:
    with ChatPeer(BOT_TOKEN) as peer:
        yield peer


class Messaging(Desk):
    """An organization with an email channel and a channel of one messaging kind, its replies sent to the peers."""

    def __init__(self, db: Database, blobs: Path, smtp: SmtpPeer, graph: GraphPeer, chat: ChatPeer) -> None:
        super().__init__(db, blobs, smtp)
        self.graph, self.chat = graph, chat
        self.sender.senders |= {
            "business_messaging": BusinessSender(graph.base_url, timeout_s=5),
            "page_messaging": PageSender(graph.base_url, timeout_s=5),
            "chat": ChatSender(chat.base_url, timeout_s=5),
        }
        self.ours = str(uuid.uuid4().int)[:15]
        self.customer = "1555" + str(uuid.uuid4().int)[:7]

    async def channel(self, kind: str, **given: str) -> None:
        """The organization (with its email channel), and its channel of `kind` with these send credentials."""
        await self.open()
        checks = {"chat": "signing_secret", "business_messaging": "app_secret", "page_messaging": "app_secret"}
        made, _ = await self.db.write(
            channels.open_channel,
            CIPHER,
            self.organization,
            kind=kind,
            name=kind.replace("_", " ").title(),
            addresses=[self.ours],
            given={checks[kind]: "provider-secret", **given} if kind in checks else given,
            settings={},
            now=self.clock(),
        )
        self.messaging_channel = made.id

    async def stored(self, provider: str, call: dict[str, Any]) -> list[Any]:
        """A provider's call, split into its items as the gateway splits it, each stored and processed: their rows."""
        body = json.dumps(call).encode()
        items = (
            business_items(business_parts(body)) if provider == "business_messaging" else page_items(page_parts(body))
        )
        return [
            await processed(
                self.db,
                self.blobs,
                self.organization,
                provider,  # type: ignore[arg-type]
                item.body,
                "application/json",
                {"kind": item.kind, "to": item.address},
                key=f"{self.organization}:{item.sender}",
                channel_id=self.messaging_channel,
            )
            for item in items
        ]

    async def whatsapp(self, text: str) -> Any:
        message = {
            "from": self.customer,
            "id": "wamid.HBgL" + uuid.uuid4().hex.upper(),
            "timestamp": str(int(time.time())),
            "type": "text",
            "text": {"body": text},
        }
        value = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550001111", "phone_number_id": self.ours},
            "contacts": [{"profile": {"name": "Ada"}, "wa_id": self.customer}],
            "messages": [message],
        }
        call = {
            "object": "whatsapp_business_account",
            "entry": [{"id": "1", "changes": [{"field": "messages", "value": value}]}],
        }
        [row] = await self.stored("business_messaging", call)
        return row

    async def page_message(self, text: str) -> Any:
        event = {
            "sender": {"id": self.customer},
            "recipient": {"id": self.ours},
            "timestamp": int(time.time() * 1000),
            "message": {"mid": "m_" + uuid.uuid4().hex, "text": text},
        }
        call = {"object": "page", "entry": [{"id": self.ours, "time": int(time.time() * 1000), "messaging": [event]}]}
        [row] = await self.stored("page_messaging", call)
        return row

    async def chat_event(self, event: dict[str, Any]) -> Any:
        callback = {"type": "event_callback", "team_id": self.ours, "event_id": f"Ev{uuid.uuid4().hex}", "event": event}
        return await processed(
            self.db,
            self.blobs,
            self.organization,
            "chat",
            json.dumps(callback).encode(),
            "application/json",
            {"team": self.ours, "event_type": event["type"]},
            channel_id=self.messaging_channel,
        )

    async def conversations(self, ticket_id: str) -> int:
        found, _ = await self.db.read(tickets.conversations, ticket_id, limit=100, cursor=None)
        return len(found)

    def sent_to(self, recipient: str) -> list[dict[str, Any]]:
        return [
            message
            for message in self.graph.messages
            if recipient in (message["json"].get("to"), (message["json"].get("recipient") or {}).get("id"))
        ]


@pytest.fixture
def desk(db: Database, tmp_path: Path, smtp: SmtpPeer, graph: GraphPeer, chat: ChatPeer) -> Messaging:
    return Messaging(db, tmp_path, smtp, graph, chat)


# Business messaging ---------------------------------------------------------------------------------------------------


async def test_a_reply_to_a_whatsapp_message_goes_to_its_sender_and_the_provider_s_statuses_move_its_state(
    desk: Messaging,
) -> None:
    await desk.channel("business_messaging", access_token=GRAPH_TOKEN)
    asked = await desk.whatsapp("Where is my order?")
    reply = await desk.reply(asked.ticket_id, "On its way: it arrives tomorrow.")
    assert reply.delivery is not None
    assert (reply.delivery.medium, reply.delivery.recipient) == ("business_messaging", desk.customer)
    assert await desk.sender.send_due() == 1
    [sent] = desk.sent_to(desk.customer)
    assert sent["id"] == desk.ours, "from the number the customer wrote to"
    assert sent["json"] == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": desk.customer,
        "type": "text",
        "text": {"preview_url": False, "body": "On its way: it arrives tomorrow."},
    }
    assert (await desk.delivery(reply.id)).provider_message_id == sent["sent_id"]
    assert desk.smtp.received == [], "not by mail"

    for state in ("delivered", "read", "delivered"):
        [row] = await desk.stored(
            "business_messaging", business_status(desk.ours, sent["sent_id"], state, desk.customer)
        )
        assert row.ticket_id is None, "a status makes no ticket"
    assert (await desk.delivery(reply.id)).state == "read"
    assert await desk.changes(reply.id) == [("queued", "sent"), ("sent", "delivered"), ("delivered", "read")]


async def test_a_reply_goes_the_way_of_the_newest_message_on_its_ticket_or_one_merged_into_it_and_of_no_other(
    desk: Messaging,
) -> None:
    await desk.channel("business_messaging", access_token=GRAPH_TOKEN)
    mailed = await desk.mail("Where is my parcel?", "It has not arrived.")
    mailed_again = await desk.mail("Invoice", "Please send the invoice.")
    texted = await desk.whatsapp("And where is my order?")
    assert len({mailed.ticket_id, mailed_again.ticket_id, texted.ticket_id}) == 3
    await ticket_operations.merge(
        desk.desk, desk.agent, texted.ticket_id, MergeTicketInto(into_id=mailed_again.ticket_id)
    )

    into_merged = await desk.reply(mailed_again.ticket_id, "Both answered here.")
    assert into_merged.delivery is not None
    assert (into_merged.delivery.medium, into_merged.delivery.recipient) == ("business_messaging", desk.customer)
    unrelated = await desk.reply(mailed.ticket_id, "It left our depot today.")
    assert unrelated.delivery is not None
    assert (unrelated.delivery.medium, unrelated.delivery.recipient) == ("email", "ada@example.com"), (
        "another ticket's merged message is not this ticket's"
    )
    assert await desk.sender.send_due() == 2
    [texted_back] = desk.sent_to(desk.customer)
    assert texted_back["json"]["text"]["body"] == "Both answered here."
    [mailed_back] = desk.smtp.received
    assert mailed_back.rcpt_tos == ["ada@example.com"]


async def test_a_whatsapp_reply_past_the_24_hour_window_is_refused_and_one_whose_window_closed_in_the_queue_fails(
    desk: Messaging,
) -> None:
    await desk.channel("business_messaging", access_token=GRAPH_TOKEN)
    asked = await desk.whatsapp("Hello?")
    late = await desk.reply(asked.ticket_id, "Queued in time...")
    desk.clock.now += outbound.BUSINESS_WINDOW + timedelta(minutes=1)
    assert await desk.sender.send_due() == 1
    failed = await desk.delivery(late.id)
    assert (failed.state, failed.last_error) == (
        "failed",
        "the provider's window for a reply (24 hours after the customer's latest message) closed before it was sent",
    )
    with pytest.raises(
        Conflict, match=r"last wrote on business messaging 24 hours ago: the provider takes a free-form"
    ):
        await desk.reply(asked.ticket_id, "Too late")
    assert await desk.conversations(asked.ticket_id) == 2, "the refused reply is not stored"
    assert desk.sent_to(desk.customer) == []

    desk.clock.now = datetime.now(UTC)  # back to real time, at which the customer writes again: the window opens
    await desk.whatsapp("Still there?")
    again = await desk.reply(asked.ticket_id, "Yes!")
    assert await desk.sender.send_due() == 1
    assert (await desk.delivery(again.id)).state == "sent"


async def test_a_refusal_in_the_answer_fails_at_once_a_failed_status_fails_it_later_and_an_outage_is_retried(
    desk: Messaging,
) -> None:
    await desk.channel("business_messaging", access_token=GRAPH_TOKEN)
    asked = await desk.whatsapp("Hi")
    desk.graph.refuse(desk.customer, code=131030, message="(#131030) Recipient phone number not in allowed list")
    refused = await desk.reply(asked.ticket_id, "Hello")
    assert await desk.sender.send_due() == 1
    failed = await desk.delivery(refused.id)
    assert (failed.state, failed.attempts, failed.last_error) == (
        "failed",
        1,
        "HTTP 400, error 131030: (#131030) Recipient phone number not in allowed list",
    )
    del desk.graph.refusals[desk.customer]

    desk.graph.unavailable = 1
    retried = await desk.reply(asked.ticket_id, "Hello again")
    assert await desk.sender.send_due() == 1
    waiting = await desk.delivery(retried.id)
    assert (waiting.state, waiting.last_error) == ("queued", "HTTP 500, error 2: Service temporarily unavailable")
    desk.clock.now += outbound.RETRY_DELAYS[0]
    assert await desk.sender.send_due() == 1
    sent = await desk.delivery(retried.id)
    assert sent.state == "sent"

    error = {"code": 131026, "title": "Message undeliverable"}
    assert sent.provider_message_id is not None
    await desk.stored(
        "business_messaging",
        business_status(desk.ours, sent.provider_message_id, "failed", desk.customer, errors=[error]),
    )
    reported = await desk.delivery(retried.id)
    assert (reported.state, reported.last_error) == (
        "failed",
        "the provider reported it failed: 131026, Message undeliverable",
    )


# Page messaging -------------------------------------------------------------------------------------------------------


async def test_a_page_reply_is_a_response_within_a_day_a_human_agent_reply_within_a_week_and_refused_after(
    desk: Messaging,
) -> None:
    await desk.channel("page_messaging", page_access_token=GRAPH_TOKEN)
    asked = await desk.page_message("Do you ship to Norway?")
    soon = await desk.reply(asked.ticket_id, "We do.")
    assert soon.delivery is not None
    assert (soon.delivery.medium, soon.delivery.recipient) == ("page_messaging", desk.customer)
    assert await desk.sender.send_due() == 1
    desk.clock.now += timedelta(days=2)
    later = await desk.reply(asked.ticket_id, "And the parcel left today.")
    assert await desk.sender.send_due() == 1
    first, second = desk.sent_to(desk.customer)
    assert first["id"] == desk.ours
    assert first["json"] == {
        "recipient": {"id": desk.customer},
        "messaging_type": "RESPONSE",
        "message": {"text": "We do."},
    }
    assert second["json"] == {
        "recipient": {"id": desk.customer},
        "messaging_type": "MESSAGE_TAG",
        "tag": "HUMAN_AGENT",
        "message": {"text": "And the parcel left today."},
    }
    tagged = await desk.delivery(later.id)
    assert (tagged.state, tagged.provider_message_id) == ("sent", second["sent_id"])
    assert tagged.note == "sent with the HUMAN_AGENT tag: the customer wrote more than 24 hours before"

    desk.clock.now += timedelta(days=6)
    with pytest.raises(Conflict, match=r"last wrote on page messaging 8 days ago: the provider takes a person's reply"):
        await desk.reply(asked.ticket_id, "Anything else?")


async def test_page_delivery_and_read_receipts_move_every_reply_sent_up_to_their_watermark(desk: Messaging) -> None:
    await desk.channel("page_messaging", page_access_token=GRAPH_TOKEN)
    asked = await desk.page_message("Hello")
    first = await desk.reply(asked.ticket_id, "First")
    assert await desk.sender.send_due() == 1
    between = desk.clock.now + timedelta(seconds=30)
    desk.clock.now += timedelta(minutes=1)
    second = await desk.reply(asked.ticket_id, "Second")
    assert await desk.sender.send_due() == 1

    def milliseconds(moment: Any) -> int:
        return int(moment.timestamp() * 1000)

    [row] = await desk.stored(
        "page_messaging", page_receipt(desk.ours, desk.customer, "delivery", watermark=milliseconds(between))
    )
    assert row.outcome.endswith("moved 1 reply forward")
    assert [(await desk.delivery(reply.id)).state for reply in (first, second)] == ["delivered", "sent"]
    second_mid = (await desk.delivery(second.id)).provider_message_id
    assert second_mid is not None
    by_mid = page_receipt(desk.ours, desk.customer, "delivery", watermark=milliseconds(between), mids=[second_mid])
    [row] = await desk.stored("page_messaging", by_mid)
    assert row.outcome.endswith("moved 1 reply forward"), "the message it names, by its mid"
    assert (await desk.delivery(second.id)).state == "delivered"
    everything = milliseconds(desk.clock.now + timedelta(seconds=1))
    [row] = await desk.stored("page_messaging", page_receipt(desk.ours, desk.customer, "read", watermark=everything))
    assert row.outcome.endswith("moved 2 replies forward")
    assert [(await desk.delivery(reply.id)).state for reply in (first, second)] == ["read", "read"]
    # the reply was sent by the test's clock, a minute ahead of the processors' (real) one: compared as a set
    assert set(await desk.changes(second.id)) == {("queued", "sent"), ("sent", "delivered"), ("delivered", "read")}


# Team chat ------------------------------------------------------------------------------------------------------------


async def test_a_reply_to_a_chat_message_is_posted_in_its_thread_and_our_message_coming_back_makes_nothing(
    desk: Messaging,
) -> None:
    await desk.channel("chat", bot_token=BOT_TOKEN)
    channel = "C" + uuid.uuid4().hex[:8].upper()
    ts = f"{time.time():.6f}"
    asked = await desk.chat_event(
        {"type": "message", "user": "U1", "channel": channel, "ts": ts, "text": "VPN is down"}
    )
    reply = await desk.reply(asked.ticket_id, "Looking into it.")
    assert reply.delivery is not None
    assert (reply.delivery.medium, reply.delivery.recipient) == ("chat", f"{channel}:{ts}")
    assert await desk.sender.send_due() == 1
    [posted] = [message for message in desk.chat.posted if message["channel"] == channel]
    assert (posted["thread_ts"], posted["text"]) == (ts, "Looking into it.")
    assert (await desk.delivery(reply.id)).provider_message_id == posted["ts"]

    echo = {"type": "message", "subtype": "bot_message", "bot_id": "B0HELPDESK", "channel": channel, "ts": posted["ts"]}
    came_back = await desk.chat_event(echo | {"thread_ts": ts, "text": "Looking into it."})
    assert (came_back.outcome, came_back.ticket_id) == ("no ticket: a bot's message", None)
    assert await desk.conversations(asked.ticket_id) == 2, "the customer's message and our reply, once"


async def test_a_throttled_chat_post_is_retried_and_one_to_a_channel_that_is_gone_fails_at_once(
    desk: Messaging,
) -> None:
    await desk.channel("chat", bot_token=BOT_TOKEN)
    channel = "C" + uuid.uuid4().hex[:8].upper()
    asked = await desk.chat_event({"type": "message", "user": "U1", "channel": channel, "ts": "1.000001", "text": "Hi"})
    desk.chat.unavailable = 1
    reply = await desk.reply(asked.ticket_id, "Hello")
    assert await desk.sender.send_due() == 1
    waiting = await desk.delivery(reply.id)
    assert (waiting.state, waiting.last_error) == ("queued", "HTTP 429: ratelimited")
    desk.clock.now += outbound.RETRY_DELAYS[0]
    assert await desk.sender.send_due() == 1
    assert (await desk.delivery(reply.id)).state == "sent"

    desk.chat.close_channel(channel)
    gone = await desk.reply(asked.ticket_id, "Still there?")
    assert await desk.sender.send_due() == 1
    failed = await desk.delivery(gone.id)
    assert (failed.state, failed.attempts, failed.last_error) == ("failed", 1, "HTTP 200: channel_not_found")


# Credentials, and callers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "missing"),
    [("business_messaging", "access_token"), ("page_messaging", "page_access_token"), ("chat", "bot_token")],
)
async def test_a_messaging_channel_without_send_credentials_refuses_replies(
    desk: Messaging, kind: str, missing: str
) -> None:
    await desk.channel(kind)
    if kind == "business_messaging":
        asked = await desk.whatsapp("Hi")
    elif kind == "page_messaging":
        asked = await desk.page_message("Hi")
    else:
        asked = await desk.chat_event(
            {"type": "message", "user": "U1", "channel": "C1", "ts": "1.000001", "text": "Hi"}
        )
    with pytest.raises(Conflict, match=rf"channel '.+' has no send credentials \({missing}\): set them"):
        await desk.reply(asked.ticket_id, "Hello")
    assert await desk.conversations(asked.ticket_id) == 1


async def test_a_caller_is_answered_by_sms_from_the_organization_s_sms_channel(desk: Messaging) -> None:
    desk.ours = "+1555" + str(uuid.uuid4().int)[:7]
    await desk.channel("voice")
    number = "+1555" + str(uuid.uuid4().int)[:7]
    with SmsPeer(SMS_ACCOUNT, "sms-token") as sms:
        desk.sender.senders["sms"] = SmsSender(sms.base_url, "http://127.0.0.1:9/api/webhooks/sms/status", timeout_s=5)
        await desk.db.write(
            channels.open_channel,
            CIPHER,
            desk.organization,
            kind="sms",
            name="Texts",
            addresses=[number],
            given={"auth_token": "sms-token", "account_sid": SMS_ACCOUNT},
            settings={},
            now=desk.clock(),
        )
        text = {
            "event_type": "sms",
            "id": str(uuid.uuid4().int)[:16],
            "direction": "inbound",
            "from_number": "+15550009999",
            "to_number": [desk.ours],
            "text": "Please call me back",
            "timestamp": int(time.time() * 1000),
        }
        asked = await processed(
            desk.db,
            desk.blobs,
            desk.organization,
            "voice",
            json.dumps(text).encode(),
            "application/json",
            {},
            channel_id=desk.messaging_channel,
        )
        reply = await desk.reply(asked.ticket_id, "We will call at 3pm.")
        assert reply.delivery is not None
        assert (reply.delivery.medium, reply.delivery.recipient) == ("sms", "+15550009999")
        assert await desk.sender.send_due() == 1
        [sent] = sms.messages
        assert (sent["From"], sent["To"], sent["Body"]) == (number, "+15550009999", "We will call at 3pm.")
