"""The mail the helpdesk sends is marked against loops (docs/helpdesk.md, "Inbound email"): `Auto-Submitted:
auto-generated`, `X-Auto-Response-Suppress: All`, and the header by which a copy of it coming back is known as its
own; an auto-responder that honours them stays quiet, and the inbound processors make no ticket of the copy."""

from __future__ import annotations

import asyncio
import email
import email.policy

from operations.common.mail import compose
from operations.helpdesk import mail as outgoing
from processors.helpdesk.inbound import mail as inbound
from processors.helpdesk.outbound import OUTGOING
from processors.helpdesk.outbound import compose as reply_mail
from storage.helpdesk.outbound import Claimed


def test_the_account_mail_carries_the_loop_breakers() -> None:
    account = {outgoing.OUR_HEADER: outgoing.ACCOUNT_MAIL}
    sent = compose("Acme Helpdesk <helpdesk@acme.example>", "ada@example.com", "Your sign-in link", "Hi", account)
    assert sent["Auto-Submitted"] == "auto-generated"
    assert sent["X-Auto-Response-Suppress"] == "All"
    assert sent[inbound.OUR_HEADER] == inbound.ACCOUNT_MAIL
    assert str(sent["Message-ID"]).endswith("@acme.example>")


def test_the_header_names_agree_on_both_sides() -> None:
    assert (outgoing.OUR_HEADER, outgoing.ACCOUNT_MAIL) == (inbound.OUR_HEADER, inbound.ACCOUNT_MAIL)


def test_a_copy_of_our_own_mail_coming_back_is_our_own_and_makes_no_ticket() -> None:
    organization = "6a0c9d1e-2b3f-4a5b-8c7d-9e0f1a2b3c4d"
    sent = compose(
        "support@acme.example", "ada@example.com", "Re: Printer", "On it.", {outgoing.OUR_HEADER: organization}
    )
    copy = inbound.from_rfc822(sent.as_bytes())
    assert inbound.classify(copy, [], organization) == inbound.OUTBOUND_COPY
    assert inbound.OUTBOUND_COPY in inbound.NO_TICKET
    # At another organization of the service it is not its own, but an automatic mail: no ticket, no answer.
    assert inbound.classify(copy, [], "0d9e8f7a-0000-4000-8000-000000000000") == inbound.AUTO_REPLY
    account = {outgoing.OUR_HEADER: outgoing.ACCOUNT_MAIL}
    link = inbound.from_rfc822(compose("helpdesk@acme.example", "x@example.com", "Link", "l", account).as_bytes())
    assert inbound.classify(link, [], organization) == inbound.OUTBOUND_COPY


def test_a_reply_s_long_headers_are_folded_to_the_line_and_read_back_as_written() -> None:
    thread = [f"{n}.1764553200.{n * 7919}@mail.customer.example" for n in range(10)]
    subjects = [
        "Re: The printer on the third floor prints every page twice and then jams [Ticket #4242]",
        "Re: Two  spaces,  kept as they are, in a subject longer than one line of mail [Ticket #4242]",
    ]
    for subject in subjects:
        reply = Claimed(
            id="1",
            medium="email",
            organization_id="6a0c9d1e-2b3f-4a5b-8c7d-9e0f1a2b3c4d",
            organization_name="Acme",
            ticket_id="2",
            ticket_number=4242,
            subject=subject,
            conversation_id="3",
            body="On it.",
            attachments=[],
            sender="support@acme.example",
            recipient="ada@example.com",
            message_id="171.42@acme.example",
            in_reply_to=thread[-1],
            references=thread,
            attempts=0,
        )
        written = asyncio.run(reply_mail(reply, None)).as_bytes(policy=OUTGOING.clone(linesep="\r\n"))
        head = written.split(b"\r\n\r\n")[0].split(b"\r\n")
        assert max(len(line) for line in head) <= 78
        assert b"References: <0.1764553200.0@mail.customer.example>" in head
        read = email.message_from_bytes(written, policy=email.policy.default)
        assert read["References"] == " ".join(f"<{message_id}>" for message_id in thread)
        assert read["Subject"] == subject
