"""Inbound mail classification (docs/helpdesk.md, "Inbound email") on real-world-shaped mails
(tests/fixtures/mail/): every class, the auto-reply signals one by one, the near misses that must stay customer
messages, our own mail, and what a bounce says failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from processors.helpdesk.inbound import mail as mails
from processors.helpdesk.inbound.mail import Mail, classify

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mail"
ORGANIZATION = "3f1c2b7e-8a4d-4c1e-9b2a-6d5e4f3a2b1c"
"""The organization the fixtures' own mail (X-Signalyard-Helpdesk) was sent for."""
OWN = {"support@acme.example"}


def fixture(name: str) -> Mail:
    return mails.from_rfc822((FIXTURES / name).read_bytes())


def kind_of(mail: Mail) -> str:
    return classify(mail, OWN, ORGANIZATION)


EXPECTED = {
    "inbound_gmail_utf8.eml": mails.INBOUND,
    "inbound_iso2022jp.eml": mails.INBOUND,
    "inbound_shift_jis.eml": mails.INBOUND,
    "inbound_latin1_outlook.eml": mails.INBOUND,
    "inbound_gb2312.eml": mails.INBOUND,
    "inbound_ks_c_5601.eml": mails.INBOUND,
    "inbound_koi8r_cp1251.eml": mails.INBOUND,
    "inbound_utf8_raw_headers.eml": mails.INBOUND,
    "inbound_html_only.eml": mails.INBOUND,
    "inbound_attachments.eml": mails.INBOUND,
    "inbound_exchange_rule_forwarded.eml": mails.INBOUND,
    "inbound_auto_response_suppress_only.eml": mails.INBOUND,
    "inbound_contact_form_reply_to.eml": mails.INBOUND,
    "reply_in_reply_to.eml": mails.INBOUND,
    "reply_references_only_outlook.eml": mails.INBOUND,
    "reply_subject_ticket_number.eml": mails.INBOUND,
    "bounce_postfix_dsn.eml": mails.BOUNCE,
    "bounce_gmail_dsn.eml": mails.BOUNCE,
    "bounce_exchange_ndr.eml": mails.BOUNCE,
    "bounce_exim_x_failed_recipients.eml": mails.BOUNCE,
    "bounce_qmail_plain.eml": mails.BOUNCE,
    "delayed_postfix_dsn.eml": mails.DELAYED,
    "delayed_exim_warning.eml": mails.DELAYED,
    "delivered_dsn.eml": mails.DELIVERED,
    "arf_feedback_report.eml": mails.FEEDBACK_REPORT,
    "auto_reply_gmail_vacation.eml": mails.AUTO_REPLY,
    "auto_reply_exchange_oof.eml": mails.AUTO_REPLY,
    "auto_reply_lotus_notes_de.eml": mails.AUTO_REPLY,
    "auto_reply_apple_vacation.eml": mails.AUTO_REPLY,
    "auto_reply_cpanel_autorespond.eml": mails.AUTO_REPLY,
    "auto_reply_x_autoreply.eml": mails.AUTO_REPLY,
    "auto_reply_subject_fr.eml": mails.AUTO_REPLY,
    "auto_reply_subject_ja.eml": mails.AUTO_REPLY,
    "auto_reply_precedence_bulk.eml": mails.AUTO_REPLY,
    "auto_reply_precedence_list.eml": mails.AUTO_REPLY,
    "outbound_copy_bcc.eml": mails.OUTBOUND_COPY,
    "dialpad_voicemail.eml": mails.VOICEMAIL,
}


def test_every_fixture_has_its_expected_class() -> None:
    assert sorted(EXPECTED) == sorted(path.name for path in FIXTURES.glob("*.eml"))


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED.items()), ids=sorted(EXPECTED))
def test_each_fixture_mail_is_classified_as_its_kind(name: str, expected: str) -> None:
    assert kind_of(fixture(name)) == expected


def test_only_inbound_mail_and_voicemail_make_a_conversation_and_delayed_dsns_and_arf_make_no_ticket() -> None:
    assert {mails.INBOUND, mails.VOICEMAIL} == mails.MAKES_CONVERSATION
    assert {mails.DELAYED, mails.DELIVERED, mails.FEEDBACK_REPORT, mails.AUTO_REPLY, mails.OUTBOUND_COPY} <= (
        mails.NO_TICKET
    )
    assert mails.BOUNCE not in mails.NO_TICKET  # a bounce is a note on its ticket


# ------------------------------------------------------------------------------------ auto-reply signals

BASE = (FIXTURES / "inbound_gmail_utf8.eml").read_bytes()


def with_headers(*lines: str, subject: str | None = None) -> Mail:
    raw = BASE
    if subject is not None:
        raw = raw.replace(b"Subject: =?UTF-8?Q?Printer_on_fire_=F0=9F=94=A5?=", f"Subject: {subject}".encode())
    return mails.from_rfc822("".join(f"{line}\n" for line in lines).encode() + raw)


@pytest.mark.parametrize(
    "header",
    [
        "Auto-Submitted: auto-replied",
        "Auto-Submitted: auto-generated",
        "Auto-Submitted: auto-notified",
        "Auto-Submitted: auto-replied; owner-email=grace@example.com",
        "Auto-Submitted: Vacation",
        "X-Autoreply: yes",
        "X-Autorespond: On vacation",
        "Precedence: bulk",
        "Precedence: junk",
        "Precedence: list",
        "Precedence: auto_reply",
        "X-Apple-Action: VACATION",
    ],
)
def test_an_auto_reply_header_alone_makes_it_an_auto_reply(header: str) -> None:
    assert kind_of(with_headers(header)) == mails.AUTO_REPLY


def test_exchange_out_of_office_is_suppress_and_rules_loop_together() -> None:
    both = with_headers("X-Auto-Response-Suppress: All", "X-MS-Exchange-Inbox-Rules-Loop: pat@contoso.example")
    assert kind_of(both) == mails.AUTO_REPLY


@pytest.mark.parametrize(
    "headers",
    [
        ["X-Auto-Response-Suppress: All"],
        ["X-Auto-Response-Suppress: DR, RN, NRN, OOF, AutoReply"],
        ["X-MS-Exchange-Inbox-Rules-Loop: frontdesk@contoso.example"],
        ["X-MS-Exchange-Generated-Message-Source: Mailbox Rules Agent"],
        ["Auto-Submitted: no"],
        ["Precedence: first-class"],
        ["X-Autoreply: no"],
        ["X-Apple-Action: none"],
    ],
    ids=lambda headers: headers[0].split(":")[0] + "=" + headers[0].split(":")[1].strip(),
)
def test_a_header_that_is_no_auto_reply_leaves_a_customer_message(headers: list[str]) -> None:
    assert kind_of(with_headers(*headers)) == mails.INBOUND


@pytest.mark.parametrize(
    "subject",
    [
        "Automatic reply: Printer on fire",
        "Out of Office: Printer on fire",
        "Out of Office AutoReply: Printer on fire",
        "Out of office",
        "Automatische Antwort: Drucker",
        "Abwesenheitsnotiz: Drucker",
        "=?utf-8?Q?R=C3=A9ponse_automatique_:_Imprimante?=",
        "=?utf-8?Q?Respuesta_autom=C3=A1tica:_Impresora?=",
        "Risposta automatica: Stampante",
        "Automatisch antwoord: Printer",
        "Autosvar: Skrivare",
        "=?utf-8?B?0JDQstGC0L7QvtGC0LLQtdGCOiDQn9GA0LjQvdGC0LXRgA==?=",
        "=?utf-8?B?6Ieq5Yqo5Zue5aSNOiDmiZPljbDmnLo=?=",
        "=?ISO-2022-JP?B?GyRCPCtGMEpWPy4bKEI6IBskQiVXJWolcyU/ITwbKEI=?=",
        "RE: Automatic reply: Printer on fire",
    ],
)
def test_a_localized_auto_reply_subject_makes_it_an_auto_reply(subject: str) -> None:
    assert kind_of(with_headers(subject=subject)) == mails.AUTO_REPLY


@pytest.mark.parametrize(
    "subject",
    [
        "Automatic replies do not work in my account",
        "Out of office chairs: order 4471",
        "Auto: Reparatur am Montag",
        "Absence of invoice in my order",
        "Re: Your out of office message",
    ],
)
def test_a_subject_that_only_mentions_auto_replies_is_a_customer_message(subject: str) -> None:
    assert kind_of(with_headers(subject=subject)) == mails.INBOUND


# ----------------------------------------------------------------------------------------------- our own


def test_our_header_is_our_own_only_for_this_organization_or_the_account_mail() -> None:
    assert kind_of(with_headers(f"X-Signalyard-Helpdesk: {ORGANIZATION}")) == mails.OUTBOUND_COPY
    assert kind_of(with_headers("X-Signalyard-Helpdesk: account")) == mails.OUTBOUND_COPY
    # another organization's helpdesk (on the same service) writing to this one: a customer's message
    assert kind_of(with_headers("X-Signalyard-Helpdesk: 0d9e8f7a-0000-4000-8000-000000000000")) == mails.INBOUND


def test_a_mail_from_our_own_address_is_our_own_unless_it_names_someone_else_to_answer() -> None:
    own = fixture("outbound_copy_bcc.eml")
    without_header = mails.from_rfc822(
        (FIXTURES / "outbound_copy_bcc.eml").read_bytes().replace(b"X-Signalyard", b"X-Old")
    )
    assert kind_of(own) == kind_of(without_header) == mails.OUTBOUND_COPY
    assert mails.requester(without_header, OWN) is None
    form = fixture("inbound_contact_form_reply_to.eml")
    assert mails.requester(form, OWN) == ("Vera Visitor", "vera@example.org")
    assert mails.requester(form, {"SUPPORT@acme.example", "vera@example.org"}) is None


# ---------------------------------------------------------------------------------------------- bounces


@pytest.mark.parametrize(
    ("name", "failed", "returned"),
    [
        ("bounce_postfix_dsn.eml", ["grace@example.com"], "ticket-1042.reply-1.9f8e7d@acme.example"),
        ("bounce_gmail_dsn.eml", ["grace@example.com"], "ticket-1042.reply-1.9f8e7d@acme.example"),
        ("bounce_exchange_ndr.eml", ["pat.gone@contoso.example"], "ticket-1042.reply-1.9f8e7d@acme.example"),
        ("bounce_exim_x_failed_recipients.eml", ["grace@example.com"], "ticket-1042.reply-1.9f8e7d@acme.example"),
        ("bounce_qmail_plain.eml", ["grace@example.org"], "ticket-1042.reply-1.9f8e7d@acme.example"),
    ],
)
def test_a_bounce_says_which_address_failed_and_which_mail_of_ours_it_returns(
    name: str, failed: list[str], returned: str
) -> None:
    bounce = fixture(name)
    assert mails.bounced_recipients(bounce) == failed
    assert mails.bounced_message_ids(bounce)[0] == returned


def test_a_dsn_marks_only_its_failed_recipients_not_its_delayed_ones() -> None:
    raw = (FIXTURES / "bounce_postfix_dsn.eml").read_bytes()
    delayed_too = raw.replace(
        b"    rejected: User unknown in virtual mailbox table\n\n",
        b"    rejected: User unknown in virtual mailbox table\n\n"
        b"Final-Recipient: rfc822; late@example.com\nAction: delayed\nStatus: 4.4.1\n\n",
    )
    bounce = mails.from_rfc822(delayed_too)
    assert kind_of(bounce) == mails.BOUNCE
    assert mails.bounced_recipients(bounce) == ["grace@example.com"]
