"""The mail the helpdesk sends is marked against loops (docs/helpdesk.md, "Inbound email"): `Auto-Submitted:
auto-generated`, `X-Auto-Response-Suppress: All`, and the header by which a copy of it coming back is known as its
own; an auto-responder that honours them stays quiet, and the inbound processors make no ticket of the copy."""

from __future__ import annotations

from operations.common.mail import compose
from operations.helpdesk import mail as outgoing
from processors.helpdesk.inbound import mail as inbound


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
