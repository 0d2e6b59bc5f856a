"""Replies that reach the customer, on a database alone: an agent's reply to a mailed-in ticket is queued with it (in
its unit of work), the reply sender (processors/helpdesk/outbound.py) sends it to a local SMTP server, and the
customer's answer to it threads back onto the ticket. Refusals, retries with backoff and a resend, with a clock the
test moves."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import select

from operations.common.actors import Actor
from operations.common.errors import Conflict
from operations.common.mail import SmtpServer
from operations.helpdesk import attachments, conversations
from operations.helpdesk import tickets as ticket_operations
from operations.helpdesk.conversations import AddConversation, EditConversation
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.mail import OUR_HEADER
from operations.helpdesk.tickets import MergeTicketInto
from processors.helpdesk.outbound import BOUNDARY, ReplySender, SmsSender, SmtpTransport
from storage.common.blobs import DirectoryBlobs
from storage.common.db import Database
from storage.helpdesk import channels, events, outbound, tickets
from storage.helpdesk.outbound import THREAD_REFERENCES
from tests.helpers import until
from tests.integration.test_helpdesk_events import organization_of_its_own
from tests.integration.test_inbound_rules import processed
from tests.peers.sms import SmsPeer
from tests.peers.smtp import SmtpPeer
from wire.signed_urls import SignedUrls

CIPHER = MultiFernet([Fernet(Fernet.generate_key())])


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


async def _nobody(_organization_id: str, _event_id: str) -> None:
    return None


@pytest.fixture
def smtp() -> Iterator[SmtpPeer]:
    with SmtpPeer() as peer:
        yield peer


class Desk:
    """An organization with an email channel, a customer's mail made a ticket, and the sender of its replies."""

    def __init__(self, db: Database, blobs: Path, smtp: SmtpPeer) -> None:
        self.db, self.blobs, self.smtp = db, blobs, smtp
        self.clock = Clock()
        self.desk = Helpdesk(db, _nobody, CIPHER, clock=self.clock)
        self.sender = ReplySender(
            db, CIPHER, SmtpTransport(SmtpServer.parse(smtp.url), timeout_s=5), DirectoryBlobs(blobs), clock=self.clock
        )

    async def open(self) -> None:
        self.organization = await organization_of_its_own(self.db)
        self.address = f"help-{uuid.uuid4().hex[:8]}@acme.example"
        channel, _ = await self.db.write(
            channels.open_channel,
            CIPHER,
            self.organization,
            kind="email",
            name="Support",
            addresses=[self.address],
            given={},
            settings={},
            now=self.clock(),
        )
        self.channel_id = channel.id
        self.agent = Actor(self.organization, str(uuid.uuid4()), "agent")

    async def mail(self, subject: str, text: str, sender: str = "Ada <ada@example.com>", **headers: str) -> Any:
        """A customer's mail to the channel (kind D), processed: its inbound row."""
        lines = [f"From: {sender}", f"To: {self.address}", f"Subject: {subject}"]
        lines += [f"Message-ID: <{uuid.uuid4().hex}@example.com>", *(f"{k}: {v}" for k, v in headers.items())]
        raw = ("\r\n".join(lines) + f"\r\n\r\n{text}\r\n").encode()
        details = {"envelope_to": self.address}
        return await processed(
            self.db,
            self.blobs,
            self.organization,
            "email_d",
            raw,
            "message/rfc822",
            details,
            channel_id=self.channel_id,
        )

    async def reply(self, ticket_id: str, body: str) -> tickets.ConversationRecord:
        self.clock.now = max(self.clock.now, datetime.now(UTC))  # after the mail, which was processed at real time
        return await conversations.add(self.desk, self.agent, ticket_id, AddConversation(body=body))

    async def delivery(self, conversation_id: str) -> tickets.Delivery:
        found = await self.db.read(tickets.conversation, self.organization, conversation_id)
        assert found is not None
        assert found.delivery is not None
        return found.delivery

    async def changes(self, conversation_id: str) -> list[tuple[str, str]]:
        def read(connection: Any) -> list[tuple[str, str]]:
            rows = connection.execute(
                select(events.EVENTS.c.event_data)
                .where(
                    events.EVENTS.c.aggregate_id == conversation_id,
                    events.EVENTS.c.event_type == "delivery_changed",
                )
                .order_by(events.EVENTS.c.created_at, events.EVENTS.c.id)
            )
            return [(data["old_state"], data["new_state"]) for data in rows.scalars()]

        return await self.db.read(read)


@pytest.fixture
async def desk(db: Database, tmp_path: Path, smtp: SmtpPeer) -> Desk:
    made = Desk(db, tmp_path, smtp)
    await made.open()
    return made


async def test_a_reply_is_mailed_from_the_channel_threaded_under_the_customer_s_mail(desk: Desk) -> None:
    asked = await desk.mail("Where is my parcel?", "It has not arrived.")
    reply = await desk.reply(asked.ticket_id, "It left our depot today.\n\nTracking: <ABC & 123>")
    assert reply.delivery is not None
    assert (reply.delivery.state, reply.delivery.recipient, reply.delivery.medium) == (
        "queued",
        "ada@example.com",
        "email",
    )
    assert await desk.sender.send_due() == 1
    [mail] = desk.smtp.received
    sent = mail.message
    ticket = await desk.db.read(tickets.get, desk.organization, asked.ticket_id)
    assert ticket is not None
    assert (mail.mail_from, mail.rcpt_tos) == (desk.address, ["ada@example.com"])
    assert sent["From"] == f"Acme <{desk.address}>"
    assert (sent["To"], sent["Reply-To"]) == ("ada@example.com", desk.address)
    assert sent["Subject"] == f"Re: Where is my parcel? [Ticket #{ticket.number}]"
    [_, asking] = (await desk.db.read(tickets.conversations, ticket.id, limit=10, cursor=None))[0]
    assert sent["Message-ID"] == f"<{reply.delivery.provider_message_id}>"
    assert sent["In-Reply-To"] == sent["References"] == f"<{asking.message_id}>"
    assert sent["Auto-Submitted"] is None, "a person's reply is not automatic mail"
    assert sent[OUR_HEADER] == desk.organization
    text, page = sent.get_body(("plain",)), sent.get_body(("html",))
    assert text is not None
    assert page is not None
    assert text.get_content().splitlines() == ["It left our depot today.", "", "Tracking: <ABC & 123>"]
    assert "Tracking: &lt;ABC &amp; 123&gt;" in page.get_content()
    delivered = await desk.delivery(reply.id)
    assert (delivered.state, delivered.attempts, delivered.last_error) == ("sent", 1, None)
    assert await desk.changes(reply.id) == [("queued", "sent")]
    assert await desk.sender.send_due() == 0, "a sent reply is not sent again"

    answer = await desk.mail(f"Re: {sent['Subject']}", "Thanks!", **{"In-Reply-To": sent["Message-ID"]})
    assert answer.ticket_id == asked.ticket_id
    assert answer.outcome == "threaded by In-Reply-To"


async def test_replies_sent_in_one_round_each_reference_the_newest_messages_of_their_own_thread(desk: Desk) -> None:
    first = await desk.mail("Where is my parcel?", "It has not arrived.")
    again = await desk.mail("Parcel still missing", "Any news?")
    assert again.ticket_id != first.ticket_id
    asked_first, asked_again = await _message_id_of(desk, first), await _message_id_of(desk, again)
    await ticket_operations.merge(desk.desk, desk.agent, again.ticket_id, MergeTicketInto(into_id=first.ticket_id))
    earlier = [await desk.reply(first.ticket_id, f"Update {n}") for n in range(THREAD_REFERENCES - 1)]
    while await desk.sender.send_due():
        pass
    other = await desk.mail("Invoice", "Please send the invoice.", sender="Bob <bob@example.com>")
    last = await desk.reply(first.ticket_id, "It is out for delivery.")
    answer = await desk.reply(other.ticket_id, "Attached.")
    assert await desk.sender.send_due() == 2, "both in one round"
    sent = {mail.message["Message-ID"]: mail.message for mail in desk.smtp.received}
    ids = {reply.id: f"<{(await desk.delivery(reply.id)).provider_message_id}>" for reply in [*earlier, last, answer]}
    # the newest THREAD_REFERENCES of the ticket's earlier messages, the merged ticket's mail among them, oldest first
    thread = [f"<{asked_again}>", *(ids[reply.id] for reply in earlier)]
    assert sent[ids[last.id]]["References"] == " ".join(thread)
    assert sent[ids[last.id]]["In-Reply-To"] == thread[-1]
    assert f"<{asked_first}>" not in sent[ids[last.id]]["References"], "past the newest ten"
    assert sent[ids[answer.id]]["References"] == sent[ids[answer.id]]["In-Reply-To"]
    assert sent[ids[answer.id]]["In-Reply-To"] == f"<{await _message_id_of(desk, other)}>"


async def _message_id_of(desk: Desk, received: Any) -> str:
    """The Message-ID of the customer's mail an inbound row made a conversation of."""
    found = await desk.db.read(tickets.conversations, received.ticket_id, limit=50, cursor=None)
    [asked] = [conversation for conversation in found[0] if conversation.author_type == "customer"]
    assert asked.message_id is not None
    return asked.message_id


async def test_a_reply_that_quotes_the_mails_boundary_still_arrives_whole(desk: Desk) -> None:
    asked = await desk.mail("Odd mail", "Your mail's source had a line in it I did not understand.")
    quoted = f"That line was a boundary:\n--{BOUNDARY}.00\nnothing to worry about."
    await desk.reply(asked.ticket_id, quoted)
    await desk.reply(asked.ticket_id, "Anything else?")
    assert await desk.sender.send_due() == 2
    texts = {}
    for mail in desk.smtp.received:
        text = mail.message.get_body(("plain",))
        assert text is not None
        texts["\n".join(text.get_content().splitlines())] = mail.message.get_boundary()
    assert texts[quoted] != f"{BOUNDARY}.00", "a text holding the boundary gets a mail boundary of its own"
    assert texts["Anything else?"] == f"{BOUNDARY}.00"


async def test_the_email_provider_s_events_move_a_mailed_reply_to_delivered_or_bounced(desk: Desk) -> None:
    asked = await desk.mail("Refund?", "Where is it?")
    delivered = await desk.reply(asked.ticket_id, "Sent yesterday.")
    bounced = await desk.reply(asked.ticket_id, "And a receipt.")
    assert await desk.sender.send_due() == 2

    async def reported(reply: tickets.ConversationRecord, event: str, **more: str) -> None:
        assert reply.delivery is not None
        sent_as = f"<{reply.delivery.provider_message_id}>"
        item = {"event": event, "email": "ada@example.com", "smtp-id": sent_as, "sg_event_id": uuid.uuid4().hex}
        await processed(
            desk.db,
            desk.blobs,
            desk.organization,
            "email_provider",
            json.dumps(item | more).encode(),
            "application/json",
            {},
        )

    await reported(delivered, "delivered")
    await reported(bounced, "bounce", status="5.1.1", reason="550 5.1.1 mailbox unavailable")
    assert (await desk.delivery(delivered.id)).state == "delivered"
    shown = await desk.delivery(bounced.id)
    assert (shown.state, shown.last_error) == (
        "bounced",
        "the email provider reported a bounce (5.1.1): 550 5.1.1 mailbox unavailable",
    )
    assert await desk.changes(bounced.id) == [("queued", "sent"), ("sent", "bounced")]


async def test_a_refused_recipient_fails_at_once_and_a_resend_delivers_it(desk: Desk) -> None:
    asked = await desk.mail("Refund", "Please refund me.")
    desk.smtp.refuse["ada@example.com"] = "550 5.1.1 No such mailbox"
    reply = await desk.reply(asked.ticket_id, "Refunded.")
    assert await desk.sender.send_due() == 1
    failed = await desk.delivery(reply.id)
    assert (failed.state, failed.attempts) == ("failed", 1)
    assert failed.last_error is not None
    assert failed.last_error.startswith("550")
    assert desk.smtp.received == []
    assert await desk.sender.send_due() == 0, "a failed reply is not retried by itself"

    del desk.smtp.refuse["ada@example.com"]
    resent = await conversations.resend(desk.desk, desk.agent, reply.id)
    assert resent.delivery is not None
    assert (resent.delivery.state, resent.delivery.attempts) == ("queued", 0)
    assert await desk.sender.send_due() == 1
    assert (await desk.delivery(reply.id)).state == "sent"
    assert len(desk.smtp.received) == 1
    with pytest.raises(Conflict, match="Only a reply whose message failed"):
        await conversations.resend(desk.desk, desk.agent, reply.id)
    assert await desk.changes(reply.id) == [("queued", "failed"), ("failed", "queued"), ("queued", "sent")]


async def test_a_temporary_refusal_is_retried_with_backoff_then_failed_when_the_retries_are_spent(desk: Desk) -> None:
    asked = await desk.mail("Broken", "It broke.")
    desk.smtp.refuse["ada@example.com"] = "451 4.3.0 Try again later"
    reply = await desk.reply(asked.ticket_id, "We are on it.")
    for attempt, wait in enumerate(outbound.RETRY_DELAYS, start=1):
        assert await desk.sender.send_due() == 1
        waiting = await desk.delivery(reply.id)
        assert (waiting.state, waiting.attempts) == ("queued", attempt)
        assert waiting.last_error is not None
        assert "451" in waiting.last_error
        desk.clock.now += wait - timedelta(seconds=1)
        assert await desk.sender.send_due() == 0, "not before its backoff"
        desk.clock.now += timedelta(seconds=1)
    assert await desk.sender.send_due() == 1
    spent = await desk.delivery(reply.id)
    assert (spent.state, spent.attempts) == ("failed", len(outbound.RETRY_DELAYS) + 1)
    assert await desk.changes(reply.id) == [("queued", "failed")]


async def test_a_note_is_not_sent_and_a_reply_nobody_can_be_mailed_from_is_refused_and_not_stored(desk: Desk) -> None:
    asked = await desk.mail("Hello", "Hi.")
    note = await conversations.add(
        desk.desk, desk.agent, asked.ticket_id, AddConversation(body="Customer is VIP", internal=True)
    )
    assert note.delivery is None
    await desk.db.write(channels.remove, desk.organization, desk.channel_id, desk.clock())
    with pytest.raises(Conflict, match="cannot reach the customer: The organization has no email channel"):
        await desk.reply(asked.ticket_id, "Hi!")
    thread, _ = await desk.db.read(tickets.conversations, asked.ticket_id, limit=10, cursor=None)
    assert sorted(conversation.body for conversation in thread) == ["Customer is VIP", "Hi."], "the reply is not kept"
    assert await desk.sender.send_due() == 0
    assert desk.smtp.received == []


async def test_a_reply_deleted_before_it_is_sent_is_not_sent_and_an_edit_after_the_send_keeps_the_sent_text(
    desk: Desk,
) -> None:
    asked = await desk.mail("Order", "Where is it?")
    regretted = await desk.reply(asked.ticket_id, "Sent to the wrong customer")
    await conversations.delete(desk.desk, desk.agent, regretted.id)
    assert await desk.sender.send_due() == 0
    assert desk.smtp.received == []

    reply = await desk.reply(asked.ticket_id, "It ships on Monday.")
    assert await desk.sender.send_due() == 1
    edited = await conversations.edit(desk.desk, desk.agent, reply.id, EditConversation(body="It ships on Tuesday."))
    assert edited.body == "It ships on Tuesday."
    assert edited.delivery is not None
    assert (edited.delivery.state, edited.delivery.body) == ("sent", "It ships on Monday."), "what the customer got"
    assert await desk.sender.send_due() == 0, "an edit sends nothing"


async def test_replies_go_over_one_kept_connection_and_one_the_server_closed_is_not_used_again(desk: Desk) -> None:
    asked = await desk.mail("Order", "Where is it?")
    for text in ("It ships today.", "Tracking number attached."):
        await desk.reply(asked.ticket_id, text)
        assert await desk.sender.send_due() == 1
    first, second = desk.smtp.received
    assert second.peer == first.peer, "the second mail over the first's connection"

    with SmtpPeer(idle_timeout_s=0.2) as impatient:  # closes a connection idle for 0.2 s
        sender = ReplySender(desk.db, CIPHER, SmtpTransport(SmtpServer.parse(impatient.url)), None, clock=desk.clock)
        await desk.reply(asked.ticket_id, "Is it there?")
        assert await sender.send_due() == 1
        assert isinstance(sender.transport, SmtpTransport)
        [kept] = sender.transport.idle
        await until(lambda: not kept.usable, "the server closed the idle connection")
        latest = await desk.reply(asked.ticket_id, "It arrived?")
        assert await sender.send_due() == 1
        assert (await desk.delivery(latest.id)).state == "sent", "over a new connection"
        assert [mail.peer != impatient.received[0].peer for mail in impatient.received] == [False, True]


async def test_a_reply_whose_channel_secrets_cannot_be_opened_fails_at_once_and_holds_up_no_other(desk: Desk) -> None:
    asked = await desk.mail("Keys", "Hello?")
    reply = await desk.reply(asked.ticket_id, "Hi!")
    rekeyed = MultiFernet([Fernet(Fernet.generate_key())])  # the platform's keys replaced, the old one dropped
    sender = ReplySender(desk.db, rekeyed, SmtpTransport(SmtpServer.parse(desk.smtp.url)), None, clock=desk.clock)
    assert await sender.send_due() == 0
    failed = await desk.delivery(reply.id)
    assert (failed.state, failed.last_error) == ("failed", outbound.UNOPENED)
    assert not await desk.db.read(outbound.any_due, desk.clock()), "nothing left due to stop the sender on"
    assert desk.smtp.received == []


async def test_a_channel_with_its_own_smtp_server_sends_its_replies_there(desk: Desk) -> None:
    asked = await desk.mail("Invoice", "Where is my invoice?")
    with SmtpPeer() as own:
        changed = await desk.db.write(
            channels.change,
            CIPHER,
            desk.organization,
            desk.channel_id,
            kind="email",
            given={"smtp_url": own.url},
            rotate=[],
            settings={},
            now=desk.clock(),
        )
        assert changed is not None
        assert "smtp_url" in changed[0].secret_names
        await desk.reply(asked.ticket_id, "Attached to your account page.")
        assert await desk.sender.send_due() == 1
        assert [mail.rcpt_tos for mail in own.received] == [["ada@example.com"]]
    assert desk.smtp.received == [], "not through the helpdesk's own server"


# SMS ------------------------------------------------------------------------------------------------------------------

ACCOUNT = "AC" + "1" * 32


@pytest.fixture
def sms_peer() -> Iterator[SmsPeer]:
    with SmsPeer(ACCOUNT, "sms-auth-token") as peer:
        yield peer


class SmsDesk(Desk):
    """An organization with an SMS channel (its send credentials given), a customer's SMS made a ticket."""

    def __init__(self, db: Database, blobs: Path, smtp: SmtpPeer, sms: SmsPeer) -> None:
        super().__init__(db, blobs, smtp)
        self.sms = sms
        self.number = "+1555" + str(uuid.uuid4().int)[:7]
        self.sender.senders["sms"] = SmsSender(sms.base_url, "http://127.0.0.1:9/api/webhooks/sms/status", timeout_s=5)

    async def open_sms(self, **given: str) -> None:
        await self.open()
        channel, _ = await self.db.write(
            channels.open_channel,
            CIPHER,
            self.organization,
            kind="sms",
            name="Texts",
            addresses=[self.number],
            given=given,
            settings={},
            now=self.clock(),
        )
        self.sms_channel_id = channel.id

    async def text(self, sender: str, body: str) -> Any:
        """A customer's SMS to the channel's number, processed: its inbound row."""
        form = urlencode({"From": sender, "To": self.number, "Body": body, "MessageSid": f"SM{uuid.uuid4().hex}"})
        return await processed(
            self.db,
            self.blobs,
            self.organization,
            "sms",
            form.encode(),
            "application/x-www-form-urlencoded",
            {"to": self.number},
            key=f"{self.organization}:sms:{sender}",
            channel_id=self.sms_channel_id,
        )

    async def status(self, sid: str, status: str, **more: str) -> Any:
        """The provider's status report of message `sid` (the form the peer posts), processed."""
        form = urlencode({"MessageSid": sid, "MessageStatus": status, "From": self.number, **more})
        return await processed(
            self.db,
            self.blobs,
            self.organization,
            "sms_status",
            form.encode(),
            "application/x-www-form-urlencoded",
            {},
            channel_id=self.sms_channel_id,
        )


@pytest.fixture
async def texts(db: Database, tmp_path: Path, smtp: SmtpPeer, sms_peer: SmsPeer) -> SmsDesk:
    made = SmsDesk(db, tmp_path, smtp, sms_peer)
    await made.open_sms(auth_token="sms-auth-token", account_sid=ACCOUNT)
    return made


async def test_a_reply_to_a_text_goes_by_sms_from_the_number_written_to_and_the_reports_move_its_state(
    texts: SmsDesk,
) -> None:
    asked = await texts.text("+15557654321", "Is the shop open on Sunday?")
    reply = await texts.reply(asked.ticket_id, "Yes, 10 to 4.")
    assert reply.delivery is not None
    assert (reply.delivery.medium, reply.delivery.recipient, reply.delivery.state) == ("sms", "+15557654321", "queued")
    assert await texts.sender.send_due() == 1
    [sent] = texts.sms.messages
    assert (sent["To"], sent["From"], sent["Body"]) == ("+15557654321", texts.number, "Yes, 10 to 4.")
    assert sent["StatusCallback"] == "http://127.0.0.1:9/api/webhooks/sms/status"
    delivered = await texts.delivery(reply.id)
    assert (delivered.state, delivered.provider_message_id, delivered.note) == ("sent", sent["sid"], "1 segment")
    assert texts.smtp.received == [], "not by mail"

    assert (await texts.status(sent["sid"], "delivered")).outcome == "delivery delivered"
    assert (await texts.status(sent["sid"], "sent")).outcome == "status sent: nothing new", "a late report"
    assert (await texts.delivery(reply.id)).state == "delivered"
    assert await texts.changes(reply.id) == [("queued", "sent"), ("sent", "delivered")]


async def test_a_reply_past_1600_characters_goes_as_several_texts_and_shows_as_one_delivery(texts: SmsDesk) -> None:
    asked = await texts.text("+15557654321", "Tell me everything.")
    words = " ".join(f"word{index}" for index in range(600))  # 4,289 characters
    reply = await texts.reply(asked.ticket_id, words)
    assert reply.delivery is not None
    assert reply.delivery.parts == 3
    for _ in range(3):
        assert await texts.sender.send_due() == 1, "one part at a time, in order"
    bodies = [message["Body"] for message in texts.sms.messages]
    assert all(len(body) <= 1600 for body in bodies)
    assert " ".join(bodies).split() == words.split(), "in order, cut between words"
    shown = await texts.delivery(reply.id)
    assert (shown.state, shown.parts, shown.body) == ("sent", 3, "\n".join(bodies))

    [first, *_] = texts.sms.messages
    await texts.status(first["sid"], "undelivered", ErrorCode="30005")
    failed = await texts.delivery(reply.id)
    assert (failed.state, failed.last_error) == ("failed", "the provider reported it undelivered, error 30005")
    resent = await conversations.resend(texts.desk, texts.agent, reply.id)
    assert resent.delivery is not None
    assert resent.delivery.state == "queued"
    assert await texts.sender.send_due() == 1, "only the failed part is sent again"


async def test_a_reply_s_files_go_by_sms_as_signed_urls_the_provider_fetches(texts: SmsDesk) -> None:
    asked = await texts.text("+15557654321", "Send me the invoice?")
    texts.desk = dataclasses.replace(texts.desk, blobs=DirectoryBlobs(texts.blobs))
    texts.sender.files = SignedUrls("https://help.example", "/api/v1/attachments", b"url-key", 600)
    invoice = await attachments.upload(
        texts.desk, texts.agent, name="invoice.pdf", content_type="application/pdf", data=b"%PDF-1.7"
    )
    texts.clock.now = max(texts.clock.now, datetime.now(UTC))
    reply = await conversations.add(
        texts.desk, texts.agent, asked.ticket_id, AddConversation(body="Here it is.", attachment_ids=[invoice.id])
    )
    assert await texts.sender.send_due() == 1
    [sent] = texts.sms.messages
    [url] = sent["MediaUrl"]
    assert url.startswith(f"https://help.example/api/v1/attachments/{reply.id}/0?expires=")
    signed = parse_qs(urlsplit(url).query)
    assert texts.sender.files.refusal(f"{reply.id}/0", signed["expires"][0], signed["signature"][0]) is None
    assert sent["Body"] == "Here it is."


async def test_an_invalid_number_fails_at_once_and_an_outage_is_retried(texts: SmsDesk) -> None:
    asked = await texts.text("+15550000000", "Hi")
    texts.sms.refuse("+15550000000", code=21211, message="The 'To' number +15550000000 is not a valid phone number.")
    reply = await texts.reply(asked.ticket_id, "Hello!")
    assert await texts.sender.send_due() == 1
    failed = await texts.delivery(reply.id)
    assert (failed.state, failed.attempts) == ("failed", 1)
    assert failed.last_error == "HTTP 400, error 21211: The 'To' number +15550000000 is not a valid phone number."

    other = await texts.text("+15557654321", "Hi")
    texts.sms.unavailable = 1
    retried = await texts.reply(other.ticket_id, "Hello!")
    assert await texts.sender.send_due() == 1
    waiting = await texts.delivery(retried.id)
    assert (waiting.state, waiting.attempts, waiting.last_error) == (
        "queued",
        1,
        "HTTP 503, error 20500: Service unavailable",
    )
    texts.clock.now += outbound.RETRY_DELAYS[0]
    assert await texts.sender.send_due() == 1
    assert (await texts.delivery(retried.id)).state == "sent"


async def test_an_sms_channel_without_send_credentials_refuses_replies(
    db: Database, tmp_path: Path, smtp: SmtpPeer, sms_peer: SmsPeer
) -> None:
    texts = SmsDesk(db, tmp_path, smtp, sms_peer)
    await texts.open_sms(auth_token="sms-auth-token")
    asked = await texts.text("+15557654321", "Hello?")
    with pytest.raises(Conflict, match=r"The SMS channel 'Texts' has no send credentials \(account_sid\)"):
        await texts.reply(asked.ticket_id, "Hi!")
    assert sms_peer.messages == []
