"""Bounces and the loop breakers of inbound mail through the running stack: a bounce of our reply becomes an internal
note on its ticket and marks the customer's address bouncing, and a bounce of no mail of ours marks nobody; an
auto-reply, our own BCC copy (by its header, or by the Message-ID of our sent reply), a delayed-delivery notice and an
abuse feedback report make no ticket; a channel's own address is never a ticket's requester. Each is a
real-world-shaped mail of tests/fixtures/mail/, addressed to the test's mailbox."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.inbound_mail import Mailbox, new_message_id, retitled

FIXTURES = Path(__file__).parents[2] / "fixtures" / "mail"
OUR_REPLY = b"ticket-1042.reply-1.9f8e7d@acme.example"
"""The Message-ID of our reply the fixtures' bounces and auto-replies return or answer."""


def fixture(name: str, our_reply: str | None = None) -> bytes:
    raw = (FIXTURES / name).read_bytes()
    return raw.replace(OUR_REPLY, our_reply.strip("<>").encode()) if our_reply else raw


async def send(box: Mailbox, raw: bytes) -> None:
    answer = await box.forward(raw, **{"x-envelope-to": box.address})
    assert answer.json() == {"status": "accepted"}, answer.text


async def ticket_with_our_reply(box: Mailbox) -> tuple[dict[str, Any], str]:
    """Grace's ticket, and the Message-ID of the reply the helpdesk sent her on it."""
    first = EmailMessage()
    first["From"] = "Grace Hopper <grace@example.com>"
    first["To"] = box.address
    first["Subject"] = "Printer on fire"
    first["Message-ID"] = make_msgid(domain="example.com")
    first.set_content("It is on fire.")
    await send(box, first.as_bytes())
    [ticket] = await until(box.tickets, "the mail's ticket")
    ours = new_message_id("acme.example")
    await box.sent_reply(ticket["id"], "We are on it.", ours)
    return ticket, ours


async def test_a_bounce_of_our_reply_is_an_internal_note_and_marks_the_customer_bouncing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, ours = await ticket_with_our_reply(box)
    assert (await box.customer("grace@example.com") or {})["bouncing"] is False
    await send(box, fixture("bounce_postfix_dsn.eml", ours))

    outcome = (await box.outcomes(2))[-1]
    assert (outcome["classification"], outcome["ticket_id"]) == ("bounce", ticket["id"])
    assert outcome["outcome"] == "bounce noted on its ticket; bouncing: grace@example.com"
    conversations = await box.conversations(ticket["id"])
    note = conversations[-1]
    assert (note["author_type"], note["internal"]) == ("agent", True)
    assert note["body"].startswith("Delivery failed to grace@example.com: Undelivered Mail Returned to Sender")
    assert (await box.customer("grace@example.com") or {})["bouncing"] is True
    assert len(await box.tickets()) == 1


async def test_an_exim_bounce_quoting_our_reply_in_its_text_is_noted_too(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, ours = await ticket_with_our_reply(box)
    await send(box, fixture("bounce_exim_x_failed_recipients.eml", ours))
    outcome = (await box.outcomes(2))[-1]
    assert (outcome["classification"], outcome["ticket_id"]) == ("bounce", ticket["id"])
    assert (await box.customer("grace@example.com") or {})["bouncing"] is True


async def test_a_bounce_of_no_mail_of_ours_makes_nothing_and_marks_nobody(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    await ticket_with_our_reply(box)
    await send(box, fixture("bounce_postfix_dsn.eml", new_message_id("acme.example")))  # a mail we never sent
    outcome = (await box.outcomes(2))[-1]
    assert (outcome["classification"], outcome["ticket_id"]) == ("bounce", None)
    assert outcome["outcome"] == "no ticket: a bounce of no mail of ours"
    assert (await box.customer("grace@example.com") or {})["bouncing"] is False


async def test_an_auto_reply_to_our_reply_makes_no_ticket_and_no_conversation(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, ours = await ticket_with_our_reply(box)
    await send(box, fixture("auto_reply_exchange_oof.eml", ours))
    await send(box, fixture("auto_reply_apple_vacation.eml", ours))
    outcomes = (await box.outcomes(3))[1:]
    assert [(o["classification"], o["outcome"], o["ticket_id"]) for o in outcomes] == [
        ("auto_reply", "no ticket: auto reply", None),
        ("auto_reply", "no ticket: auto reply", None),
    ]
    assert len(await box.tickets()) == 1
    assert len(await box.conversations(ticket["id"])) == 2  # Grace's mail and our reply


async def test_our_own_bcc_copy_makes_no_ticket_by_its_header_or_by_our_replys_message_id(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, ours = await ticket_with_our_reply(box)
    raw = fixture("outbound_copy_bcc.eml", ours)
    with_header = raw.replace(b"3f1c2b7e-8a4d-4c1e-9b2a-6d5e4f3a2b1c", box.organization_id.encode())
    await send(box, retitled(with_header, Message_ID=new_message_id("acme.example")))
    # A relay dropped our header: the copy is still known by the Message-ID of the reply we sent.
    stripped = retitled(raw, X_Signalyard_Helpdesk=None, From="Ada Agent <ada.agent@acme.example>")
    await send(box, stripped)
    outcomes = (await box.outcomes(3))[1:]
    assert [(o["classification"], o["outcome"]) for o in outcomes] == [
        ("outbound_copy", "no ticket: outbound copy"),
        ("outbound_copy", "no ticket: a copy of our own sent reply"),
    ]
    assert len(await box.tickets()) == 1
    assert len(await box.conversations(ticket["id"])) == 2


async def test_a_delayed_delivery_notice_and_a_feedback_report_make_no_ticket(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    _, ours = await ticket_with_our_reply(box)
    await send(box, fixture("delayed_postfix_dsn.eml", ours))
    await send(box, fixture("arf_feedback_report.eml", ours))
    outcomes = (await box.outcomes(3))[1:]
    assert [(o["classification"], o["ticket_id"]) for o in outcomes] == [
        ("delayed_delivery", None),
        ("feedback_report", None),
    ]
    assert len(await box.tickets()) == 1
    assert (await box.customer("grace@example.com") or {})["bouncing"] is False


async def test_a_channels_own_address_is_never_a_requester(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    sales = f"sales-{box.address}"
    await box.another_channel(sales)
    looped = EmailMessage()
    looped["From"] = f"Acme Support <{box.address}>"
    looped["To"] = box.address
    looped["Subject"] = "Fwd: a mail forwarded back to ourselves"
    looped["Message-ID"] = make_msgid(domain="acme.example")
    looped.set_content("Loop?")
    await send(box, looped.as_bytes())
    other = retitled(looped.as_bytes(), From=f"Sales <{sales.upper()}>", Message_ID=new_message_id("acme.example"))
    await send(box, other)
    # A web form sending as the helpdesk's own address, with the visitor in Reply-To: the visitor asks.
    form = retitled(fixture("inbound_contact_form_reply_to.eml"), From=f"Acme Support <{box.address}>")
    await send(box, form)

    outcomes = await box.outcomes(3)
    assert [(o["classification"], o["outcome"]) for o in outcomes] == [
        ("outbound_copy", "no ticket: outbound copy"),
        ("outbound_copy", "no ticket: outbound copy"),
        ("inbound", "new ticket"),
    ]
    [ticket] = await box.tickets()
    assert ticket["customer_email"] == "vera@example.org"
    assert await box.customer(box.address) is None
    assert await box.customer(sales) is None
