"""What threads an inbound mail (section 4.6's order: In-Reply-To; References, every id; a `[Ticket #<number>]`
subject once encoded words are decoded and Re:/Fwd: prefixes stripped; the stored Message-ID), read off
real-world-shaped replies (tests/fixtures/mail/)."""

# ruff: noqa: RUF001 (mail in many scripts: its full-width and typographic characters are the point)

from __future__ import annotations

from pathlib import Path

import pytest

from processors.helpdesk.inbound import mail as mails
from processors.helpdesk.inbound.mail import ThreadKeys

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mail"


def keys_of(name: str) -> ThreadKeys:
    return mails.thread_keys(mails.from_rfc822((FIXTURES / name).read_bytes()))


def test_a_thunderbird_reply_threads_by_in_reply_to_then_every_reference_nearest_first() -> None:
    assert keys_of("reply_in_reply_to.eml") == ThreadKeys(
        in_reply_to=["ticket-1042.reply-1.9f8e7d@acme.example"],
        references=[
            "ticket-1042.reply-1.9f8e7d@acme.example",
            "CAKx8Jm3ZqR2x+Vn4p5Yw_0ZsH1wq9tB7=gN2dE4c6rU1oXy5aQ@mail.gmail.com",
        ],
        ticket_number=1042,
        message_id="5e1a9c2b-reply-1@example.com",
    )


def test_an_outlook_reply_without_in_reply_to_has_every_reference_of_its_folded_header() -> None:
    keys = keys_of("reply_references_only_outlook.eml")
    assert keys.in_reply_to == []
    assert keys.references == [
        "ticket-77.reply-2.bb22@acme.example",
        "ticket-77.reply-1.aa11@acme.example",
        "AM6PR08MB4321A1B2C3D4E5F6A7B8C9D0E1F2@AM6PR08MB4321.eurprd08.prod.outlook.com",
    ]


def test_an_encoded_subject_with_localized_prefixes_gives_its_ticket_number() -> None:
    keys = keys_of("reply_subject_ticket_number.eml")
    assert (keys.in_reply_to, keys.references, keys.ticket_number) == ([], [], 1042)


def test_a_new_mail_has_only_its_own_message_id() -> None:
    keys = keys_of("inbound_gmail_utf8.eml")
    assert keys == ThreadKeys([], [], None, "CAKx8Jm3ZqR2x+Vn4p5Yw_0ZsH1wq9tB7=gN2dE4c6rU1oXy5aQ@mail.gmail.com")


@pytest.mark.parametrize(
    ("subject", "stripped"),
    [
        ("Re: Printer", "Printer"),
        ("RE: FW: Fwd: Printer", "Printer"),
        ("AW: WG: Drucker", "Drucker"),
        ("SV: VS: Skrivare", "Skrivare"),
        ("TR: RE : Imprimante", "Imprimante"),
        ("RES: ENC: Impressora", "Impressora"),
        ("Re[2]: Printer", "Printer"),
        ("回复：打印机", "打印机"),
        ("転送: プリンター", "プリンター"),
        ("Ответ: Принтер", "Принтер"),
        ("Regarding: Printer", "Regarding: Printer"),
        ("Reply needed: Printer", "Reply needed: Printer"),
    ],
)
def test_reply_and_forward_prefixes_are_stripped_in_many_languages(subject: str, stripped: str) -> None:
    assert mails.strip_reply_prefixes(subject) == stripped


@pytest.mark.parametrize(
    ("subject", "number"),
    [
        ("Re: [Ticket #1042] Printer", 1042),
        ("[ticket #7] lower case", 7),
        ("Printer [Ticket #55]", 55),
        ("Fwd: Re: [Ticket # 9] spaced", 9),
        ("Ticket #1042 without brackets", None),
        ("[Ticket #] no number", None),
    ],
)
def test_the_ticket_number_of_a_subject(subject: str, number: int | None) -> None:
    assert mails.ticket_number(subject) == number


def test_message_ids_are_read_with_or_without_angle_brackets() -> None:
    assert mails.message_ids("<a@x> <b@y>\r\n\t<c@z>") == ["a@x", "b@y", "c@z"]
    assert mails.message_ids("a@x b@y") == ["a@x", "b@y"]
    assert mails.message_ids("") == []
