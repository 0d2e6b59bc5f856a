"""Section 4.6, inbound email kind D (the email-to-HTTP forwarder) through the running stack: the raw message is
stored before the 200, a retry stores nothing new, a wrong secret or an unknown recipient is refused and stores
nothing, and the processors make the mail a ticket, then thread its reply by In-Reply-To."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import httpx
from sqlalchemy import func, select

from signalyard import secrets
from storage.helpdesk import channels, inbound
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until

PATH = "/api/webhooks/inbound-email"


@dataclass
class Mailbox:
    stack: HelpdeskStack
    key: str
    address: str
    secret: str
    channel_id: str

    async def forward(self, raw: bytes, **headers: str) -> httpx.Response:
        sent = {"Content-Type": "message/rfc822", "x-forwarder-secret": self.secret} | headers
        return await self.stack.client.post(PATH, content=raw, headers=sent)

    async def tickets(self) -> list[dict[str, Any]]:
        return list((await self.stack.rest(self.key, "GET", "/tickets")).json()["data"])

    async def stored(self) -> int:
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == self.channel_id)
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))


async def mailbox(stack: HelpdeskStack) -> Mailbox:
    address = f"support-{uuid.uuid4().hex[:8]}@acme.example"
    secret = f"fwd-{uuid.uuid4().hex}"
    cipher = secrets.secrets_cipher(stack.settings.platform)
    async with signed_up(stack) as organization:
        channel = await stack.db.write(
            channels.create,
            cipher,
            organization.id,
            kind="email",
            name="Support mailbox",
            addresses=[("email", address)],
            secrets={"forwarder_secret": secret},
            now=datetime.now(UTC),
        )
    return Mailbox(stack, organization.key, address, secret, channel.id)


def message(to: str, subject: str, body: str, **headers: str) -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = "Grace Hopper <grace@example.com>"
    mail["To"] = to
    mail["Subject"] = subject
    mail["Message-ID"] = make_msgid(domain="example.com")
    for name, value in headers.items():
        mail[name.replace("_", "-")] = value
    mail.set_content(body)
    return mail


async def test_a_forwarded_mail_becomes_a_ticket_and_its_reply_threads_by_in_reply_to(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await mailbox(helpdesk_stack)
    first = message(box.address, "Printer on fire", "It is on fire. Again.")
    answer = await box.forward(first.as_bytes())
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})

    [ticket] = await until(box.tickets, "the mail's ticket")
    seen = (ticket["subject"], ticket["channel"], ticket["customer_email"])
    assert seen == ("Printer on fire", "email", "grace@example.com")

    reply = message(box.address, "Re: Printer on fire", "Still burning.", In_Reply_To=str(first["Message-ID"]))
    assert (await box.forward(reply.as_bytes())).json() == {"status": "accepted"}

    async def two_messages() -> list[Any]:
        listed = await helpdesk_stack.rest(box.key, "GET", f"/tickets/{ticket['id']}/conversations")
        return list(listed.json()["data"]) if len(listed.json()["data"]) == 2 else []

    conversations = await until(two_messages, "the reply threaded on the ticket")
    assert [c["body"].strip() for c in conversations] == ["Still burning.", "It is on fire. Again."]
    assert len(await box.tickets()) == 1


async def test_a_retry_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    box = await mailbox(helpdesk_stack)
    raw = message(box.address, "Twice", "Sent twice.").as_bytes()
    assert (await box.forward(raw)).json() == {"status": "accepted"}
    assert (await box.forward(raw)).json() == {"status": "duplicate"}
    assert await box.stored() == 1


async def test_a_wrong_secret_is_401_and_an_unknown_recipient_404_and_neither_is_stored(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await mailbox(helpdesk_stack)
    raw = message(box.address, "Hi", "Hello").as_bytes()
    wrong = await box.forward(raw, **{"x-forwarder-secret": "not-it"})
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    missing = await helpdesk_stack.client.post(PATH, content=raw, headers={"Content-Type": "message/rfc822"})
    assert missing.status_code == 401
    elsewhere = await box.forward(message("nobody@elsewhere.example", "Hi", "Hello").as_bytes())
    assert (elsewhere.status_code, elsewhere.json()["error"]["code"]) == (404, "not_found")
    assert await box.stored() == 0
