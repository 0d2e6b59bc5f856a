"""The helpdesk's automatic mail, on a database alone with a local SMTP server: an email channel's acknowledgement of
a new mailed ticket and its notice when a ticket is resolved, each off until the channel's setting gives its text;
sent through the replies' outbound path with the loop breakers (RFC 3834), never twice to one address within the
hour, never to a bouncing address, a machine's or one of our own; and a helpdesk that gets one makes nothing of it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from operations.common.actors import Actor
from operations.helpdesk import tickets as ticket_operations
from operations.helpdesk.tickets import UpdateTicket
from processors.helpdesk.inbound import mail as mails
from storage.common.db import Database
from storage.helpdesk import channels, customers, outbound
from storage.helpdesk.accounts import USERS
from storage.helpdesk.tickets import OUTBOUND
from tests.integration.test_helpdesk_replies import CIPHER, Desk
from tests.peers.smtp import SmtpPeer

ACKNOWLEDGEMENT = "Thank you for writing: we answer within a working day."
NOTICE = "Your request is resolved. Answer this mail if it is not."


@pytest.fixture
def smtp() -> Iterator[SmtpPeer]:
    with SmtpPeer() as peer:
        yield peer


@pytest.fixture
async def desk(db: Database, tmp_path: Path, smtp: SmtpPeer) -> Desk:
    made = Desk(db, tmp_path, smtp)
    await made.open()
    await texts(made, {"acknowledgement": ACKNOWLEDGEMENT, "resolved_notice": NOTICE})
    return made


async def texts(desk: Desk, settings: dict[str, str]) -> None:
    """The email channel's automatic mail texts set (an empty one removed)."""
    await desk.db.write(
        channels.change,
        CIPHER,
        desk.organization,
        desk.channel_id,
        kind="email",
        given={},
        rotate=[],
        settings=settings,
        now=desk.clock(),
    )


async def send_round(desk: Desk) -> int:
    """One round of the reply sender, at least at real time (the processors queued the mail at real time)."""
    desk.clock.now = max(desk.clock.now, datetime.now(UTC))
    return await desk.sender.send_due()


async def automatic_mails(desk: Desk, address: str) -> int:
    def count(connection: Any) -> int:
        return int(
            connection.scalar(
                select(func.count()).where(
                    OUTBOUND.c.organization_id == desk.organization,
                    OUTBOUND.c.recipient == address,
                    OUTBOUND.c.auto_submitted.is_not(None),
                )
            )
        )

    return await desk.db.read(count)


async def test_a_new_mailed_ticket_is_acknowledged_once_within_the_hour_with_a_null_envelope_sender(desk: Desk) -> None:
    asked = await desk.mail("My order", "It has not arrived.")
    assert asked.outcome == "new ticket; acknowledgement queued"
    assert await send_round(desk) == 1
    [mail] = desk.smtp.received
    sent = mail.message
    assert (mail.mail_from, mail.rcpt_tos) == ("<>", ["ada@example.com"]), "a null envelope sender: nothing answers it"
    assert (sent["Auto-Submitted"], sent["X-Auto-Response-Suppress"]) == ("auto-replied", "All")
    assert sent["From"] == f"Acme <{desk.address}>"
    assert sent["Subject"].startswith("Re: My order [Ticket #")
    body = sent.get_body(("plain",))
    assert body is not None
    assert body.get_content().strip() == ACKNOWLEDGEMENT

    again = await desk.mail("Another thing", "And my invoice?")
    assert again.ticket_id != asked.ticket_id
    assert again.outcome == "new ticket; no acknowledgement: ada@example.com got one within the last hour"
    answered = await desk.mail(f"Re: {sent['Subject']}", "Thanks", **{"In-Reply-To": sent["Message-ID"]})
    assert (answered.ticket_id, answered.outcome) == (asked.ticket_id, "threaded by In-Reply-To")
    out_of_office = await desk.mail(
        f"Automatic reply: {sent['Subject']}",
        "I am away until Monday.",
        **{"In-Reply-To": sent["Message-ID"], "Auto-Submitted": "auto-replied"},
    )
    assert (out_of_office.outcome, out_of_office.ticket_id) == ("no ticket: auto reply", None)
    assert await automatic_mails(desk, "ada@example.com") == 1
    assert await send_round(desk) == 0, "nothing answers an auto-responder's answer to our acknowledgement"


async def test_no_acknowledgement_goes_to_a_machine_a_bouncing_address_or_when_the_channel_sends_none(
    desk: Desk,
) -> None:
    machine = await desk.mail("Your order", "Shipped.", sender="Shop <no-reply@shop.example>")
    assert (
        machine.outcome == "new ticket; no acknowledgement: no-reply@shop.example is an address that takes no answers"
    )

    await desk.db.write(
        customers.find_or_create, desk.organization, email="gone@example.com", name=None, now=desk.clock(), recorded=[]
    )
    await desk.db.write(customers.mark_bouncing, desk.organization, "gone@example.com", desk.clock())
    bouncing = await desk.mail("Hello", "Hi", sender="gone@example.com")
    assert bouncing.outcome == "new ticket; no acknowledgement: gone@example.com is marked bouncing"

    await texts(desk, {"acknowledgement": ""})
    quiet = await desk.mail("Hello", "Hi", sender="grace@example.com")
    assert quiet.outcome == "new ticket"
    assert await send_round(desk) == 0
    assert desk.smtp.received == []


async def test_a_helpdesk_that_gets_our_acknowledgement_makes_no_ticket_of_it_and_sends_nothing_back(
    desk: Desk,
) -> None:
    await desk.mail("Help", "Please", sender="support@other-helpdesk.example")
    assert await send_round(desk) == 1
    [mail] = desk.smtp.received
    raw = mail.message.as_bytes()
    elsewhere = mails.from_rfc822(raw, envelope_to="support@other-helpdesk.example")
    assert mails.classify(elsewhere, ["support@other-helpdesk.example"], "another-organization") == mails.AUTO_REPLY


async def test_resolving_a_mailed_ticket_sends_the_resolved_notice_auto_generated_once_within_the_hour(
    desk: Desk,
) -> None:
    await texts(desk, {"acknowledgement": ""})
    asked = await desk.mail("Broken", "The app crashes.", sender="Lin <lin@example.com>")
    resolved = await ticket_operations.change(desk.desk, desk.agent, asked.ticket_id, UpdateTicket(status="resolved"))
    assert resolved.status == "resolved"
    assert await send_round(desk) == 1
    [mail] = desk.smtp.received
    assert (mail.mail_from, mail.rcpt_tos) == (desk.address, ["lin@example.com"]), "bounces come back to the channel"
    assert mail.message["Auto-Submitted"] == "auto-generated"
    body = mail.message.get_body(("plain",))
    assert body is not None
    assert body.get_content().strip() == NOTICE

    await ticket_operations.change(desk.desk, desk.agent, asked.ticket_id, UpdateTicket(status="open"))
    await ticket_operations.change(desk.desk, desk.agent, asked.ticket_id, UpdateTicket(status="resolved"))
    assert await automatic_mails(desk, "lin@example.com") == 1, "not twice within the hour"
    desk.clock.now += outbound.AUTOMATIC_WINDOW
    await ticket_operations.change(desk.desk, desk.agent, asked.ticket_id, UpdateTicket(status="open"))
    await ticket_operations.change(desk.desk, desk.agent, asked.ticket_id, UpdateTicket(status="resolved"))
    assert await automatic_mails(desk, "lin@example.com") == 2
    assert await send_round(desk) == 1


async def member(desk: Desk, name: str, **preferences: bool) -> tuple[str, str]:
    """A member of the desk's organization: their id and address."""
    user_id, address = str(uuid.uuid4()), f"{name.lower()}.{uuid.uuid4().hex[:6]}@acme.example"
    row = {
        "id": user_id,
        "email": address,
        "email_verified": True,
        "name": name,
        "organization_id": desk.organization,
        "role": "agent",
        "preferences": preferences,
        "created_at": desk.clock(),
        "updated_at": desk.clock(),
    }
    await desk.db.write(lambda connection: connection.execute(insert(USERS).values(**row)))
    return user_id, address


async def test_a_member_is_mailed_when_a_ticket_is_assigned_to_them_and_when_its_customer_answers(desk: Desk) -> None:
    lin, lin_address = await member(desk, "Lin")
    sam, sam_address = await member(desk, "Sam", notify_customer_replied=False)
    asked = await desk.mail("My order", "It has not arrived.")
    assert await send_round(desk) == 1, "the acknowledgement"
    ticket = await ticket_operations.change(desk.desk, desk.agent, asked.ticket_id, UpdateTicket(assignee_id=lin))
    assert await send_round(desk) == 1
    answer = await desk.mail(f"Re: My order [Ticket #{ticket.number}]", "Any news?\nIt is urgent.")
    assert answer.ticket_id == asked.ticket_id
    assert await send_round(desk) == 1
    to_lin = [mail for mail in desk.smtp.received if mail.rcpt_tos == [lin_address]]
    assert [mail.message["Subject"] for mail in to_lin] == [f"[Ticket #{ticket.number}] My order"] * 2
    assigned, answered = (mail.message for mail in to_lin)
    assert (assigned["From"], assigned["Auto-Submitted"], assigned["Reply-To"]) == (
        "Acme <helpdesk@localhost>",
        "auto-generated",
        None,
    )
    assert to_lin[0].mail_from == "helpdesk@localhost"
    assert_text(assigned, f'Ticket #{ticket.number} "My order" is assigned to you.')
    assert_text(answered, f'The customer answered Ticket #{ticket.number} "My order":\n\n> Any news?\n> It is urgent.')
    assert all("ada@example.com" not in mail.message.as_string() for mail in to_lin), "no customer address"

    mine = Actor(desk.organization, sam, "agent")
    await ticket_operations.change(desk.desk, mine, asked.ticket_id, UpdateTicket(assignee_id=sam))
    await desk.mail(f"Re: My order [Ticket #{ticket.number}]", "Hello?")
    assert await send_round(desk) == 0, "Sam assigned it to themself, and turned off the customers' answers"
    assert [mail for mail in desk.smtp.received if mail.rcpt_tos == [sam_address]] == []


def assert_text(message: Any, text: str) -> None:
    body = message.get_body(("plain",))
    assert body is not None
    assert body.get_content().replace("\r\n", "\n").strip() == text
