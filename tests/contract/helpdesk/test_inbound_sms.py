"""Section 4.6, the SMS provider (`POST /api/webhooks/sms`, Twilio's form and signature) through the running stack: a
signed message is stored before its TwiML answer (the channel's auto-reply, or an empty `<Response/>`), a retry stores
nothing new, a bad signature or a malformed call is refused and stores nothing, and the processors thread all
messages from one number into one ticket thread (its ticket reopened when resolved or closed, however long ago, at most
3 times an hour), MMS media kept with the provider's references (fetched: tests/integration/test_helpdesk_media.py).

The scheme signs no timestamp (Twilio's signature covers the URL and the parameters only), so there is no replay
window to test: a replayed call is a duplicate of its MessageSid, acknowledged, and stores nothing new."""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from storage.helpdesk.inbound import EVENTS
from storage.helpdesk.tickets import TICKETS
from tests.contract.helpdesk.inbound_desk import Desk, desk, unique_number
from tests.helpdesk_stack import HelpdeskStack

PATH = "/api/webhooks/sms"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>'


def twilio_signature(url: str, params: dict[str, str], token: str) -> str:
    """Twilio's request signature, written out from its documentation (independently of the `twilio` package): the
    URL, then each parameter's name and value sorted by name, HMAC-SHA1 keyed by the auth token, base64."""
    signed = url + "".join(name + params[name] for name in sorted(params))
    return base64.b64encode(hmac.new(token.encode(), signed.encode(), hashlib.sha1).digest()).decode()


@dataclass
class Line:
    """An SMS channel: its number and auth token."""

    desk: Desk
    number: str
    token: str

    @property
    def stack(self) -> HelpdeskStack:
        return self.desk.stack

    @property
    def url(self) -> str:
        """The URL the provider calls: the helpdesk's public URL (here its default, http://HOST:PORT) and the path."""
        public = self.stack.settings.services["helpdesk"].public_url or self.stack.base_url
        return public.rstrip("/") + PATH

    def message(self, sender: str, text: str, **more: str) -> dict[str, str]:
        return {
            "From": sender,
            "To": self.number,
            "Body": text,
            "MessageSid": "SM" + uuid.uuid4().hex,
            "NumMedia": "0",
            "AccountSid": "AC" + "0" * 32,
        } | more

    async def send(self, params: dict[str, str], *, token: str | None = None, url: str | None = None) -> httpx.Response:
        signature = twilio_signature(url or self.url, params, token or self.token)
        return await self.stack.client.post(PATH, data=params, headers={"x-twilio-signature": signature})


async def sms_line(stack: HelpdeskStack, auto_reply: str | None = None) -> Line:
    line = Line(await desk(stack), unique_number(), f"token-{uuid.uuid4().hex}")
    settings = {"auto_reply": auto_reply} if auto_reply else {}
    await line.desk.open_channel("sms", [("sms_number", line.number)], {"auth_token": line.token}, settings)
    return line


async def test_a_signed_sms_is_stored_and_answered_with_the_auto_reply_in_twiml(helpdesk_stack: HelpdeskStack) -> None:
    line = await sms_line(helpdesk_stack, auto_reply="Thanks! We'll answer within a day & a half.")
    answer = await line.send(line.message(unique_number(), "Where is my order?"))
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].split(";")[0] == "text/xml"
    assert answer.text == (
        f"{HEAD}<Response><Message>Thanks! We'll answer within a day &amp; a half.</Message></Response>"
    )
    assert await line.desk.stored() == 1


async def test_without_an_auto_reply_the_answer_is_an_empty_response(helpdesk_stack: HelpdeskStack) -> None:
    line = await sms_line(helpdesk_stack)
    answer = await line.send(line.message(unique_number(), "Hello"))
    assert (answer.status_code, answer.text) == (200, f"{HEAD}<Response/>")
    assert answer.headers["content-type"].split(";")[0] == "text/xml"


async def test_a_bad_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    line = await sms_line(helpdesk_stack)
    params = line.message(unique_number(), "Hello")
    wrong_token = await line.send(params, token="not-the-auth-token")
    assert (wrong_token.status_code, wrong_token.json()["error"]["code"]) == (401, "unauthorized")
    other_url = await line.send(params, url="https://elsewhere.example/api/webhooks/sms")
    assert other_url.status_code == 401
    unsigned = await helpdesk_stack.client.post(PATH, data=params)
    assert unsigned.status_code == 401
    tampered = dict(params, Body="Hello, with a changed text")
    signature = twilio_signature(line.url, params, line.token)
    changed = await helpdesk_stack.client.post(PATH, data=tampered, headers={"x-twilio-signature": signature})
    assert changed.status_code == 401
    assert await line.desk.stored() == 0


async def test_a_replayed_or_retried_call_is_acknowledged_with_the_same_answer_and_stores_nothing_new(
    helpdesk_stack: HelpdeskStack,
) -> None:
    line = await sms_line(helpdesk_stack, auto_reply="Got it")
    params = line.message(unique_number(), "Twice")
    first, retry = await line.send(params), await line.send(params)
    assert first.status_code == retry.status_code == 200
    assert first.text == retry.text == f"{HEAD}<Response><Message>Got it</Message></Response>"
    [event] = await line.desk.processed(1)
    assert (event["provider"], event["dedup_key"]) == ("sms", params["MessageSid"])
    assert await line.desk.stored() == 1
    assert len(await line.desk.tickets()) == 1


async def test_the_auto_reply_goes_to_a_sender_s_first_message_after_an_hour_without_one(
    helpdesk_stack: HelpdeskStack,
) -> None:
    """A machine that answers our auto-reply, or a customer who texts three times, is answered once: the auto-reply
    goes only to a sender's first message after an hour in which they sent none. A retry of an answered message is
    answered again; another sender is answered."""
    line = await sms_line(helpdesk_stack, auto_reply="Got it")
    replied, silent = f"{HEAD}<Response><Message>Got it</Message></Response>", f"{HEAD}<Response/>"
    sender = unique_number()
    first = line.message(sender, "Hi, my parcel is late")
    assert (await line.send(first)).text == replied
    assert (await line.send(line.message(sender, "Auto: thanks for your message!"))).text == silent
    assert (await line.send(line.message(sender, "Auto: thanks for your message!"))).text == silent
    assert (await line.send(first)).text == replied  # the provider's retry of the first
    assert (await line.send(line.message(unique_number(), "Hello"))).text == replied

    def an_hour_ago(connection: Connection) -> None:  # the messages so far, as the database would keep them then
        stored = connection.execute(
            select(EVENTS.c.id, EVENTS.c.created_at).where(EVENTS.c.channel_id == line.desk.channel_id)
        )
        for event_id, created_at in list(stored):
            moved = update(EVENTS).where(EVENTS.c.id == event_id).values(created_at=created_at - timedelta(minutes=61))
            connection.execute(moved)

    await helpdesk_stack.db.write(an_hour_ago)
    assert (await line.send(line.message(sender, "Any news?"))).text == replied
    assert (await line.send(line.message(sender, "Hello?"))).text == silent
    assert await line.desk.stored() == 6


async def test_a_malformed_call_is_a_clear_4xx_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    line = await sms_line(helpdesk_stack)
    sender = unique_number()
    no_sid = line.message(sender, "Hi")
    del no_sid["MessageSid"]
    refused = await line.send(no_sid)
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_request")
    no_from = line.message(sender, "Hi")
    del no_from["From"]
    assert (await line.send(no_from)).status_code == 400
    bad_count = await line.send(line.message(sender, "Hi", NumMedia="two"))
    assert (bad_count.status_code, bad_count.json()["error"]["message"]) == (
        400,
        "The form is malformed: Expected `int`, got `str` - at `$.NumMedia`",
    )
    no_to = line.message(sender, "Hi")
    del no_to["To"]
    assert (await line.send(no_to)).status_code == 400
    nowhere = await line.send(line.message(sender, "Hi", To=unique_number()))
    assert (nowhere.status_code, nowhere.json()["error"]["code"]) == (404, "not_found")
    not_utf8 = await helpdesk_stack.client.post(
        PATH, content=b"From=%FF%FE&To=x", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert not_utf8.status_code == 400
    as_json = await helpdesk_stack.client.post(PATH, json=line.message(sender, "Hi"))
    assert (as_json.status_code, as_json.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert await line.desk.stored() == 0


async def test_one_number_s_messages_thread_into_one_ticket_and_another_number_gets_its_own(
    helpdesk_stack: HelpdeskStack,
) -> None:
    line = await sms_line(helpdesk_stack)
    ada, grace = unique_number(), unique_number()
    for sender, text in ((ada, "My parcel is late"), (ada, "It is still late"), (grace, "Wrong size")):
        assert (await line.send(line.message(sender, text))).status_code == 200
    events = await line.desk.processed(3)
    assert [event["outcome"] for event in events] == ["new ticket", "threaded by sender", "new ticket"]
    by_subject = {ticket["subject"]: ticket for ticket in await line.desk.tickets()}
    assert set(by_subject) == {f"SMS from {ada}", f"SMS from {grace}"}
    ticket = by_subject[f"SMS from {ada}"]
    assert (ticket["channel"], ticket["status"]) == ("sms", "open")
    assert [c.body for c in await line.desk.conversations(ticket["id"])] == ["My parcel is late", "It is still late"]
    customer = await line.desk.customer(ticket["customer_id"])
    assert (customer["phone"], customer["email"]) == (ada, None)


async def test_mms_media_of_a_channel_without_its_account_sid_are_references_with_the_reason(
    helpdesk_stack: HelpdeskStack,
) -> None:
    line = await sms_line(helpdesk_stack)
    media = {
        "NumMedia": "2",
        "MediaUrl0": "https://api.twilio.example/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1",
        "MediaContentType0": "image/jpeg",
        "MediaUrl1": "https://api.twilio.example/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME2",
        "MediaContentType1": "video/mp4",
    }
    assert (await line.send(line.message(unique_number(), "", **media))).status_code == 200
    [event] = await line.desk.processed(1)
    [conversation] = await line.desk.conversations(event["ticket_id"])
    assert conversation.body == "(2 attachments)"
    why = "the channel has no account_sid to fetch it with"
    assert conversation.attachments == [
        {"url": media["MediaUrl0"], "content_type": "image/jpeg", "refused": why},
        {"url": media["MediaUrl1"], "content_type": "video/mp4", "refused": why},
    ]


async def test_a_resolved_ticket_is_reopened_by_the_number_s_next_message(helpdesk_stack: HelpdeskStack) -> None:
    line = await sms_line(helpdesk_stack)
    sender = unique_number()
    await line.send(line.message(sender, "Broken screen"))
    [first] = await line.desk.processed(1)
    resolved = await helpdesk_stack.rest(
        line.desk.key, "PATCH", f"/tickets/{first['ticket_id']}", json={"status": "resolved"}
    )
    assert resolved.status_code == 200, resolved.text
    await line.send(line.message(sender, "Still broken"))
    events = await line.desk.processed(2)
    assert events[1]["outcome"] == "threaded by sender, reopened"
    assert events[1]["ticket_id"] == first["ticket_id"]
    assert (await line.desk.ticket(first["ticket_id"]))["status"] == "open"
    assert len(await line.desk.tickets()) == 1


@pytest.mark.parametrize("status", ["resolved", "closed"])
async def test_a_ticket_resolved_more_than_a_week_ago_is_reopened_by_the_number_s_next_message(
    helpdesk_stack: HelpdeskStack, status: str
) -> None:
    """All messages from one number form one ticket thread: its ticket takes the next message however long ago it was
    resolved or closed (here, as the database would show a ticket left eight days ago)."""
    line = await sms_line(helpdesk_stack)
    sender = unique_number()
    await line.send(line.message(sender, "Old question"))
    [first] = await line.desk.processed(1)
    ended = await helpdesk_stack.rest(line.desk.key, "PATCH", f"/tickets/{first['ticket_id']}", json={"status": status})
    assert ended.status_code == 200, ended.text
    eight_days_ago = datetime.now(UTC) - timedelta(days=8)

    def age(connection: Connection) -> None:
        connection.execute(update(TICKETS).where(TICKETS.c.id == first["ticket_id"]).values(updated_at=eight_days_ago))

    await helpdesk_stack.db.write(age)
    await line.send(line.message(sender, "New question"))
    events = await line.desk.processed(2)
    assert (events[1]["outcome"], events[1]["ticket_id"]) == ("threaded by sender, reopened", first["ticket_id"])
    ticket = await line.desk.ticket(first["ticket_id"])
    assert (ticket["subject"], ticket["status"]) == (f"SMS from {sender}", "open")
    assert [c.body for c in await line.desk.conversations(first["ticket_id"])] == ["Old question", "New question"]
    assert len(await line.desk.tickets()) == 1


async def test_a_number_reopens_its_ticket_at_most_three_times_an_hour(helpdesk_stack: HelpdeskStack) -> None:
    """The reopen limit that breaks a loop with another machine holds for SMS too: past it, the message is added to
    the ticket, which stays resolved."""
    line = await sms_line(helpdesk_stack)
    sender = unique_number()
    await line.send(line.message(sender, "Broken screen"))
    [first] = await line.desk.processed(1)
    seen = []
    for attempt in range(1, 5):
        path = f"/tickets/{first['ticket_id']}"
        resolved = await helpdesk_stack.rest(line.desk.key, "PATCH", path, json={"status": "resolved"})
        assert resolved.status_code == 200, resolved.text
        await line.send(line.message(sender, f"Still broken, {attempt}"))
        latest = (await line.desk.processed(1 + attempt))[attempt]
        seen.append((latest["outcome"], latest["ticket_id"], (await line.desk.ticket(first["ticket_id"]))["status"]))
    reopened = ("threaded by sender, reopened", first["ticket_id"], "open")
    assert seen == [
        reopened,
        reopened,
        reopened,
        ("threaded by sender, not reopened (reopened 3 times within the hour)", first["ticket_id"], "resolved"),
    ]
    assert len(await line.desk.conversations(first["ticket_id"])) == 5  # the fourth message is kept all the same
    assert len(await line.desk.tickets()) == 1
