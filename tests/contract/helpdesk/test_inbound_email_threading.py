"""Threading inbound mail onto its ticket through the running stack, one test per rule of section 4.6 in its order
(In-Reply-To; References, every id; a `[Ticket #<number>]` subject after decoding and stripping prefixes; a stored
Message-ID), an earlier rule winning over a later one, our own sent replies' Message-IDs counting, and the reopen
limit (at most 3 reopenings an hour of one ticket by inbound mail)."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.inbound_mail import Mailbox, new_message_id, retitled


def mail(subject: str, body: str, **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Grace Hopper <grace@example.com>"
    message["To"] = "support@acme.example"
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="example.com")
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return message


async def send(box: Mailbox, message: EmailMessage) -> None:
    answer = await box.forward(message.as_bytes(), **{"x-envelope-to": box.address})
    assert answer.json() == {"status": "accepted"}, answer.text


async def first_ticket(box: Mailbox, subject: str = "Printer on fire") -> tuple[dict[str, Any], EmailMessage]:
    first = mail(subject, "It is on fire.")
    await send(box, first)
    [ticket] = await until(box.tickets, "the mail's ticket")
    return ticket, first


async def last_outcome(box: Mailbox, count: int) -> dict[str, Any]:
    return (await box.outcomes(count))[-1]


async def test_rule_1_in_reply_to_threads_a_reply_onto_its_ticket(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, first = await first_ticket(box)
    await send(box, mail("A different subject", "Still burning.", In_Reply_To=str(first["Message-ID"])))
    outcome = await last_outcome(box, 2)
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by In-Reply-To", ticket["id"])
    assert [c["body"].strip() for c in await box.conversations(ticket["id"])] == ["It is on fire.", "Still burning."]


async def test_rule_1_counts_the_message_ids_of_our_own_sent_replies(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, _ = await first_ticket(box)
    ours = new_message_id("acme.example")
    await box.sent_reply(ticket["id"], "We are on it.", ours)
    await send(box, mail("Re: Printer on fire", "Thanks!", In_Reply_To=ours))
    outcome = await last_outcome(box, 2)
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by In-Reply-To", ticket["id"])


async def test_rule_2_references_threads_by_any_of_its_ids_not_only_the_first(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, first = await first_ticket(box)
    references = f"{new_message_id()} {first['Message-ID']} {new_message_id()}"
    await send(box, mail("Unrelated words", "Also the scanner.", In_Reply_To=new_message_id(), References=references))
    outcome = await last_outcome(box, 2)
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by References", ticket["id"])


async def test_rule_3_an_encoded_subject_naming_the_ticket_threads_after_its_prefixes(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, _ = await first_ticket(box)
    subject = f"AW: Re: [Ticket #{ticket['number']}] Größe"
    encoded = f"=?UTF-8?B?{base64.b64encode(subject.encode()).decode()}?="
    raw = retitled(mail("placeholder", "Neue Größe: XL").as_bytes(), Subject=encoded)
    assert f"Subject: {encoded}\n".encode() in raw
    answer = await box.forward(raw, **{"x-envelope-to": box.address})
    assert answer.json() == {"status": "accepted"}
    outcome = await last_outcome(box, 2)
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by subject", ticket["id"])


async def test_rule_4_the_same_mail_through_another_channel_is_recorded_on_its_ticket_once(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, first = await first_ticket(box)
    sales = f"sales-{box.address}"
    second = await box.another_channel(sales)
    answer = await box.forward(first.as_bytes(), **{"x-envelope-to": sales})
    assert answer.json() == {"status": "accepted"}  # another channel: its own delivery

    async def second_processed() -> list[dict[str, Any]]:
        return [m for m in await box.inbound_messages(channel_id=second) if m["state"] == "processed"]

    [outcome] = await until(second_processed, "the mail processed on the second channel")
    assert outcome["outcome"] == "threaded by Message-ID: the same mail is on the ticket already"
    assert outcome["ticket_id"] == ticket["id"]
    assert len(await box.tickets()) == 1
    assert len(await box.conversations(ticket["id"])) == 1


async def test_in_reply_to_comes_before_a_subject_naming_another_ticket(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    older, first = await first_ticket(box)
    await send(box, mail("Scanner jammed", "Jammed."))
    newer = (await until(lambda: _two(box), "a second ticket"))[0]
    assert newer["id"] != older["id"]
    await send(box, mail(f"Re: [Ticket #{newer['number']}] Scanner", "Mixed up.", In_Reply_To=str(first["Message-ID"])))
    outcome = await last_outcome(box, 3)
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by In-Reply-To", older["id"])


async def _two(box: Mailbox) -> list[dict[str, Any]]:
    found = await box.tickets()
    return found if len(found) == 2 else []


async def test_a_mail_no_rule_threads_is_a_new_ticket(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, _ = await first_ticket(box)
    await send(box, mail("Re: [Ticket #999999] Printer", "Hm.", In_Reply_To=new_message_id()))
    outcome = await last_outcome(box, 2)
    assert outcome["outcome"] == "new ticket"
    assert outcome["ticket_id"] != ticket["id"]


async def test_replies_reopen_a_resolved_ticket_at_most_three_times_an_hour(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    ticket, first = await first_ticket(box)
    statuses = []
    for attempt in range(1, 5):
        resolved = await helpdesk_stack.rest(box.key, "PATCH", f"/tickets/{ticket['id']}", json={"status": "resolved"})
        assert resolved.json()["status"] == "resolved"
        await send(box, mail("Re: Printer on fire", f"Again, {attempt}.", In_Reply_To=str(first["Message-ID"])))
        outcome = await last_outcome(box, 1 + attempt)
        now = (await helpdesk_stack.rest(box.key, "GET", f"/tickets/{ticket['id']}")).json()
        statuses.append((outcome["outcome"], now["status"]))
    assert statuses == [
        ("threaded by In-Reply-To, reopened", "open"),
        ("threaded by In-Reply-To, reopened", "open"),
        ("threaded by In-Reply-To, reopened", "open"),
        ("threaded by In-Reply-To, not reopened (reopened 3 times within the hour)", "resolved"),
    ]
    assert len(await box.conversations(ticket["id"])) == 5  # the fourth reply is kept all the same
