"""Inbound mail classification (docs/helpdesk.md, "Inbound email") on real-world-shaped mails
(tests/fixtures/mail/): every class, the auto-reply signals one by one, the kinds of automatic mail that carry no
auto-reply header (bounces known by their envelope, their sender or what they return, list managers' loop alerts,
sending services' notifications, read receipts), the near misses that must stay customer messages, mail that names no
one to answer, our own mail, and what a bounce says failed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    named = [*EXPECTED, *(name for name, _, _ in AUTOMATIC_MAIL)]
    assert sorted(named) == sorted(path.name for path in FIXTURES.glob("*.eml"))


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED.items()), ids=sorted(EXPECTED))
def test_each_fixture_mail_is_classified_as_its_kind(name: str, expected: str) -> None:
    assert kind_of(fixture(name)) == expected


def test_only_inbound_mail_and_voicemail_make_a_conversation_and_delayed_dsns_and_arf_make_no_ticket() -> None:
    assert {mails.INBOUND, mails.VOICEMAIL} == mails.MAKES_CONVERSATION
    assert {mails.DELAYED, mails.DELIVERED, mails.FEEDBACK_REPORT, mails.AUTO_REPLY, mails.OUTBOUND_COPY} <= (
        mails.NO_TICKET
    )
    assert mails.BOUNCE not in mails.NO_TICKET  # a bounce is a note on its ticket


# ----------------------------------------------------------- automatic mail without an auto-reply header


@dataclass(frozen=True)
class Case:
    """A raw mail, the class it must get, and why."""

    raw: bytes
    expected: str
    why: str


AUTOMATIC_MAIL = [
    (
        "bounce_null_return_path_from.eml",
        mails.BOUNCE,
        "a From that is no mail system's address, but Return-Path <>: the null reverse-path marks a notification, and "
        "nothing says it is an auto-reply",
    ),
    (
        "bounce_null_return_path_auto_submitted.eml",
        mails.BOUNCE,
        "Return-Path <> and Auto-Submitted (as auto-responders send too), but its subject says delivery failed",
    ),
    (
        "bounce_exchange_ndr_mixed.eml",
        mails.BOUNCE,
        "Exchange's plain multipart/mixed NDR: no DSN, no null reverse-path, but `Undeliverable:` on a returned mail",
    ),
    (
        "bounce_report_without_status.eml",
        mails.BOUNCE,
        "a multipart/report of delivery status whose status part is missing: the original as message/rfc822 only",
    ),
    (
        "bounce_postmaster_spelled_otherwise.eml",
        mails.BOUNCE,
        "from post_master@: a mail system's role address, however it is spelt",
    ),
    (
        "auto_reply_mailman_loop.eml",
        mails.AUTO_REPLY,
        "a list manager's loop alert (from <list>-owner, X-Mailman-Version): it names no failed address, and nothing "
        "must answer it",
    ),
    (
        "auto_reply_listserv_loop.eml",
        mails.AUTO_REPLY,
        "LISTSERV's loop alert with Return-Path <> and the looping mail attached: a loop alert, not a bounce",
    ),
    (
        "auto_reply_sympa_loop.eml",
        mails.AUTO_REPLY,
        "Sympa's loop alert, known by its address and X-Loop, though it has no other automatic header",
    ),
    (
        "auto_reply_ses_notification.eml",
        mails.AUTO_REPLY,
        "a no-reply sender through Amazon SES, with an unsubscribe link: a system's notification",
    ),
    ("auto_reply_mailgun_noreply.eml", mails.AUTO_REPLY, "a noreply sender through Mailgun (X-Mailgun-*)"),
    (
        "auto_reply_sendgrid_donotreply.eml",
        mails.AUTO_REPLY,
        "a DoNotReply sender through SendGrid (X-SG-EID), with X-Auto-Response-Suppress",
    ),
    (
        "auto_reply_list_notification.eml",
        mails.AUTO_REPLY,
        "a notification service's mail to its subscribers: List-Id and List-Unsubscribe together",
    ),
    (
        "auto_reply_noreply_auto_generated.eml",
        mails.AUTO_REPLY,
        "a no-reply system sender with Auto-Submitted: auto-generated (RFC 3834 says so alone)",
    ),
    (
        "auto_reply_sieve_vacation_null_path.eml",
        mails.AUTO_REPLY,
        "a vacation reply sent with Return-Path <>, answering our reply: an auto-reply, else its customer would be "
        "marked bouncing",
    ),
    (
        "auto_reply_read_receipt.eml",
        mails.AUTO_REPLY,
        "a read receipt (multipart/report of disposition-notification): a machine's report, not the customer's words",
    ),
    (
        "inbound_list_unsubscribe_personal.eml",
        mails.INBOUND,
        "a person whose newsletter tool puts List-Unsubscribe and SendGrid's headers on every mail: no list (List-Id) "
        "and a sender who reads answers",
    ),
    (
        "inbound_company_relay_ses.eml",
        mails.INBOUND,
        "ordinary Outlook mail that the customer's company relays through Amazon SES, X-Auto-Response-Suppress and all",
    ),
    (
        "inbound_form_noreply_reply_to.eml",
        mails.INBOUND,
        "a web form's mail sent as no-reply through Mailgun, naming the visitor in Reply-To: the visitor's message",
    ),
    (
        "inbound_forwarded_bounce.eml",
        mails.INBOUND,
        "a customer forwarding a bounce as an attachment: `Fwd:` comes before the failed-delivery words",
    ),
    (
        "inbound_undeliverable_parcel.eml",
        mails.INBOUND,
        "`Undeliverable address on ...` with a mail attached: the words go on, as a mail system's never do",
    ),
    (
        "inbound_mentions_mail_loop.eml",
        mails.INBOUND,
        "a customer asking about a mail loop from owner@ (a shop's owner, not a list's <list>-owner)",
    ),
]


def fixture_case(name: str, expected: str, why: str) -> Any:
    return pytest.param(Case((FIXTURES / name).read_bytes(), expected, why), id=name.removesuffix(".eml"))


SPELLED = (FIXTURES / "bounce_postmaster_spelled_otherwise.eml").read_bytes()


def sent_by(sender: str) -> bytes:
    return SPELLED.replace(b"post_master@mail.example.org", sender.encode())


def inline(name: str, raw: bytes, expected: str, why: str) -> Any:
    return pytest.param(Case(raw, expected, why), id=name)


CASES = [
    *(fixture_case(*case) for case in AUTOMATIC_MAIL),
    *(
        inline(f"sender-{sender}", sent_by(sender), mails.BOUNCE, "a postmaster or mailer-daemon, however it is spelt")
        for sender in (
            "post.master@mail.example.org",
            "Postmaster-NoReply@mail.example.org",
            "MAILER_DAEMON@mail.example.org",
            "mailerdaemon@mail.example.org",
            "Mailer-Daemon2@mail.example.org",
            "bounces-postmaster@mail.example.org",
        )
    ),
    inline(
        "sender-postman",
        sent_by("postman.pat@mail.example.org"),
        mails.INBOUND,
        "a person whose address starts like postmaster is no mail system",
    ),
    inline(
        "from-without-an-address",
        b"From: MAILER-DAEMON (Mail Delivery System)\nTo: support@acme.example\nSubject: failure notice\n\n"
        b"<grace@example.com>:\nmailbox unknown\n",
        mails.BOUNCE,
        "a mailer daemon that gives a From without an address, known by its first word",
    ),
    inline(
        "no-sender",
        b"To: support@acme.example\nSubject: Printer on fire\nMessage-ID: <no-from-1@example.com>\n\nHelp!\n",
        mails.INVALID,
        "no From and no Reply-To: no one to answer",
    ),
    inline(
        "sender-without-an-address",
        b"From: Grace Hopper\nTo: support@acme.example\nSubject: Printer on fire\n\nHelp!\n",
        mails.INVALID,
        "a From that holds only a name",
    ),
    inline(
        "broken-header-block",
        b"this line is no header\nFrom: Grace Hopper <grace@example.com>\nTo: support@acme.example\n"
        b"Subject: Printer on fire\n\nHelp!\n",
        mails.INVALID,
        "a header block broken before its From: the whole mail reads as text, with no sender",
    ),
    inline(
        "no-sender-but-reply-to",
        b"To: support@acme.example\nReply-To: vera@example.org\nSubject: Printer on fire\n\nHelp!\n",
        mails.INBOUND,
        "no From, but a Reply-To to answer",
    ),
    inline(
        "no-sender-null-reverse-path",
        b"Return-Path: <>\nTo: support@acme.example\nSubject: Delivery report\n\n<grace@example.com>: unknown\n",
        mails.BOUNCE,
        "no From with Return-Path <>: a mail system's notification, as before",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_each_kind_of_mail_gets_its_class(case: Case) -> None:
    assert kind_of(mails.from_rfc822(case.raw)) == case.expected, case.why


def test_a_mail_that_names_no_one_to_answer_makes_no_conversation() -> None:
    assert mails.INVALID not in mails.MAKES_CONVERSATION


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


# ----------------------------------------------------------------------------------------- sending marks


@pytest.mark.parametrize(
    ("headers", "expected", "why"),
    [
        (["X-MS-Exchange-Message-Is-Ndr:"], mails.BOUNCE, "Exchange marks its own NDRs so"),
        (["X-SES-Outgoing: 2024.05.23-54.240.8.12"], mails.INBOUND, "a company may relay its people's mail via SES"),
        (["X-Mailgun-Sid: WyJ4Il0="], mails.INBOUND, "or through Mailgun"),
        (["X-SG-EID: u001.eA=="], mails.INBOUND, "or through SendGrid"),
        (["List-Unsubscribe: <https://letters.example/u/1>"], mails.INBOUND, "sales tools put it on one-to-one mail"),
        (["List-Id: <printers.lists.example.org>"], mails.INBOUND, "a list's name alone, with no way to leave it"),
        (["Feedback-ID: 1:2:3"], mails.INBOUND, "a feedback loop id alone"),
        (
            ["List-Id: <printers.lists.example.org>", "List-Unsubscribe: <mailto:leave@lists.example.org>"],
            mails.AUTO_REPLY,
            "mail a list sent to its subscribers",
        ),
    ],
    ids=lambda value: "+".join(header.split(":")[0] for header in value) if isinstance(value, list) else "",
)
def test_a_sending_mark_on_a_person_s_mail(headers: list[str], expected: str, why: str) -> None:
    assert kind_of(with_headers(*headers)) == expected, why


@pytest.mark.parametrize(
    ("sender", "headers", "expected", "why"),
    [
        ("no-reply@notify.example", ["X-SES-Outgoing: 1"], mails.AUTO_REPLY, "no one reads answers, and a service"),
        ("noreply@notify.example", ["List-Unsubscribe: <https://n.example/u>"], mails.AUTO_REPLY, "and a list mark"),
        ("do_not_reply@notify.example", ["X-Auto-Response-Suppress: All"], mails.AUTO_REPLY, "and Exchange's mark"),
        ("no-reply@notify.example", [], mails.INBOUND, "a no-reply sender alone: nothing says a machine sent it"),
        (
            "no-reply@forms.example",
            ["Reply-To: Vera Visitor <vera@example.org>", "X-SES-Outgoing: 1"],
            mails.INBOUND,
            "a form's mail that names the visitor to answer",
        ),
    ],
)
def test_a_no_reply_sender_is_a_notification_with_a_mark_of_a_sending(
    sender: str, headers: list[str], expected: str, why: str
) -> None:
    raw = "".join(f"{line}\n" for line in headers).encode() + BASE.replace(b"grace@example.com", sender.encode(), 1)
    mail = mails.from_rfc822(raw)
    assert mail.sender == sender
    assert kind_of(mail) == expected, why


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
        ("bounce_null_return_path_from.eml", ["grace@example.com"], "ticket-1042.reply-1.9f8e7d@acme.example"),
        (
            "bounce_null_return_path_auto_submitted.eml",
            ["grace@example.org"],
            "ticket-1042.reply-1.9f8e7d@acme.example",
        ),
        ("bounce_postmaster_spelled_otherwise.eml", ["grace@example.org"], "ticket-1042.reply-1.9f8e7d@acme.example"),
        # no address in a form the bounce machine-reads: the handler marks the ticket's customer
        ("bounce_exchange_ndr_mixed.eml", [], "ticket-1042.reply-1.9f8e7d@acme.example"),
        ("bounce_report_without_status.eml", [], "ticket-1042.reply-1.9f8e7d@acme.example"),
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
