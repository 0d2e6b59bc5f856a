"""Mail as the inbound processors read it: one `Mail` whatever the provider kind delivered (a raw RFC 5322 message, or
a provider's fields), parsed with the standard library (`email`, policy `default`: every charset Python knows,
encoded words decoded); its classification (section 4.6: inbound, bounce, auto_reply, outbound_copy,
dialpad_voicemail, and the mail that makes no ticket); and what threads it. Pure: no storage, no I/O."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr
from html.parser import HTMLParser

INBOUND, BOUNCE, AUTO_REPLY, OUTBOUND_COPY, VOICEMAIL = (
    "inbound",
    "bounce",
    "auto_reply",
    "outbound_copy",
    "dialpad_voicemail",
)
DELAYED, FEEDBACK_REPORT = "delayed_delivery", "feedback_report"
"""Mail that is neither a message nor a bounce: a DSN saying delivery is only delayed, an abuse feedback report
(ARF). Recorded, and no ticket."""
NO_TICKET = frozenset({AUTO_REPLY, OUTBOUND_COPY, DELAYED, FEEDBACK_REPORT})

OUR_HEADER = "X-Signalyard-Helpdesk"
"""Set on every mail the helpdesk sends (with its organization): a copy of it coming back is ours."""


@dataclass(frozen=True, slots=True)
class Attachment:
    name: str
    content_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class Mail:
    sender: str
    """The From address, lower-cased ('' when there is none)."""
    sender_name: str
    recipients: list[str]
    """To, Cc and Delivered-To addresses, lower-cased, and the envelope recipient first when known."""
    subject: str
    text: str
    message_id: str | None
    """Without its angle brackets."""
    in_reply_to: list[str]
    references: list[str]
    headers: list[tuple[str, str]] = field(repr=False)
    """Every header, names lower-cased, values decoded."""
    attachments: list[Attachment] = field(default_factory=list, repr=False)
    html: str | None = field(default=None, repr=False)
    report: Message | None = field(default=None, repr=False)
    """A delivery status notification's `message/delivery-status` part, or an ARF report's."""
    report_type: str | None = None
    """`delivery-status` or `feedback-report` for a multipart/report."""

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((value for key, value in self.headers if key == lowered), None)

    def headers_named(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.headers if key == lowered]


def message_ids(value: str | None) -> list[str]:
    """The Message-IDs in an In-Reply-To or References header, without their angle brackets, in order."""
    if not value:
        return []
    found = re.findall(r"<([^<>\s]+)>", value)
    return found or [part for part in value.split() if "@" in part]


def from_rfc822(raw: bytes, *, envelope_to: str | None = None) -> Mail:
    """A raw RFC 5322 message (email kind D, or the raw copy kind A sends)."""
    message = BytesParser(policy=policy.default).parsebytes(raw)
    return from_message(message, envelope_to=envelope_to)


def from_message(message: Message, *, envelope_to: str | None = None) -> Mail:
    headers = [(name.lower(), str(value)) for name, value in message.items()]
    sender_name, sender = parseaddr(str(message.get("From", "")))
    recipients = [envelope_to.lower()] if envelope_to else []
    for name in ("Delivered-To", "To", "Cc"):
        for _, address in getaddresses([str(value) for value in message.get_all(name, [])]):
            if address and address.lower() not in recipients:
                recipients.append(address.lower())
    text, html, attachments, report, report_type = _content(message)
    own_ids = message_ids(str(message.get("Message-ID", "")))
    return Mail(
        sender=sender.lower(),
        sender_name=sender_name,
        recipients=recipients,
        subject=str(message.get("Subject", "")).strip(),
        text=text if text else html_to_text(html or ""),
        message_id=own_ids[0] if own_ids else None,
        in_reply_to=message_ids(str(message.get("In-Reply-To", ""))),
        references=message_ids(str(message.get("References", ""))),
        headers=headers,
        attachments=attachments,
        html=html,
        report=report,
        report_type=report_type,
    )


def _content(message: Message) -> tuple[str, str | None, list[Attachment], Message | None, str | None]:
    found = _Found()
    found.walk(message)
    report_type = message.get_param("report-type") if message.get_content_type() == "multipart/report" else None
    text = (found.text or "").strip()
    return text, found.html, found.attachments, found.report, str(report_type) if report_type else None


class _Found:
    """A message's parts: its first text and HTML bodies, its attachments (an attached message whole, never its
    insides), and a report's machine-readable part."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.html: str | None = None
        self.attachments: list[Attachment] = []
        self.report: Message | None = None

    def walk(self, part: Message) -> None:
        content_type = part.get_content_type()
        if content_type in ("message/rfc822", "message/global"):
            inner = part.get_payload(0) if part.is_multipart() else None
            data = inner.as_bytes() if isinstance(inner, Message) else _bytes(part)
            self.attachments.append(Attachment(part.get_filename() or "message.eml", "message/rfc822", data))
            return
        if part.is_multipart():
            for child in part.get_payload():
                if isinstance(child, Message):
                    self.walk(child)
            return
        if content_type in ("message/delivery-status", "message/feedback-report"):
            self.report = part
            return
        disposition = part.get_content_disposition()
        filename = part.get_filename()
        if (
            disposition == "attachment"
            or (filename and disposition != "inline")
            or (filename and content_type not in ("text/plain", "text/html"))
        ):
            self.attachments.append(Attachment(filename or "attachment", content_type, _bytes(part)))
        elif content_type == "text/plain" and self.text is None:
            self.text = _text(part)
        elif content_type == "text/html" and self.html is None:
            self.html = _text(part)
        elif content_type == "text/rfc822-headers":
            self.attachments.append(Attachment("headers.txt", content_type, _bytes(part)))


def _bytes(part: Message) -> bytes:
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _text(part: Message) -> str:
    if isinstance(part, EmailMessage):
        try:
            return str(part.get_content())
        except (LookupError, ValueError):  # an unknown charset: decode what we can
            pass
    return _bytes(part).decode("utf-8", "replace")


class _Text(HTMLParser):
    BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "blockquote"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head"):
            self.skipping += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head") and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The readable text of an HTML body (for a mail that has no text part)."""
    if not html:
        return ""
    parser = _Text()
    parser.feed(html)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line).strip()


# ----------------------------------------------------------------------------------------------- classification

_AUTO_SUBJECT = re.compile(
    r"^\s*(auto(matic)?\s*(reply|response|antwort)|out\s+of\s+(the\s+)?office|abwesenheitsnotiz|"
    r"r[ée]ponse\s+automatique|absence|respuesta\s+autom[áa]tica|fuori\s+ufficio|automatisch\s+antwoord|"
    r"afwezig|自動返信|自动回复|不在)",
    re.IGNORECASE,
)
_MAILER_DAEMON = re.compile(r"^(mailer-daemon|postmaster)@", re.IGNORECASE)


def _report_actions(mail: Mail) -> list[str]:
    if mail.report is None:
        return []
    payload = mail.report.get_payload()
    text = payload if isinstance(payload, str) else "\n".join(str(part) for part in payload or [])
    return [action.lower() for action in re.findall(r"^Action:\s*(\S+)", text, re.MULTILINE | re.IGNORECASE)]


def classify(mail: Mail, own_addresses: Collection[str]) -> str:
    """The mail's class (docs/helpdesk.md, "Email classification"), in this order: our own mail coming back, a
    feedback report, a delivery status notification (failed: bounce; only delayed: no ticket), a mailer daemon's
    bounce, an auto-reply, the voice provider's voicemail notification; else a customer's message."""
    own = {address.lower() for address in own_addresses}
    if mail.header(OUR_HEADER) is not None or (mail.sender and mail.sender in own):
        return OUTBOUND_COPY
    if mail.report_type == "feedback-report":
        return FEEDBACK_REPORT
    actions = _report_actions(mail)
    if mail.report_type == "delivery-status" or actions:
        if any(action == "failed" for action in actions):
            return BOUNCE
        if actions and all(action in ("delayed", "relayed", "expanded", "delivered") for action in actions):
            return DELAYED
        return BOUNCE
    if mail.header("X-Failed-Recipients") or _MAILER_DAEMON.match(mail.sender):
        return BOUNCE
    if is_auto_reply(mail):
        return AUTO_REPLY
    if is_voicemail_notification(mail):
        return VOICEMAIL
    return INBOUND


def is_auto_reply(mail: Mail) -> bool:
    """RFC 3834 `Auto-Submitted` other than `no`; X-Autoreply, X-Autorespond; Precedence bulk, junk, list or
    auto_reply; Exchange's out-of-office (`X-MS-Exchange-Inbox-Rules-Loop`, an `X-Auto-Response-Suppress` only with
    one of these); Apple's vacation (`X-Apple-Vacation`... any X-Apple-Action: vacation); a subject that says so, in
    several languages. `X-Auto-Response-Suppress` alone is not an auto-reply (a mail asking others not to answer)."""
    submitted = (mail.header("Auto-Submitted") or "").strip().lower()
    if submitted and submitted != "no":
        return True
    if mail.header("X-Autoreply") or mail.header("X-Autorespond") or mail.header("X-Autogenerated"):
        return True
    if (mail.header("Precedence") or "").strip().lower() in ("bulk", "junk", "list", "auto_reply"):
        return True
    if mail.header("X-MS-Exchange-Inbox-Rules-Loop") or mail.header("X-MS-Exchange-Generated-Message-Source"):
        return True
    if "vacation" in (mail.header("X-Apple-Action") or "").lower() or mail.header("X-Apple-Vacation"):
        return True
    return bool(_AUTO_SUBJECT.match(strip_reply_prefixes(mail.subject)) or _AUTO_SUBJECT.match(mail.subject))


VOICE_SENDERS = ("dialpad.com", "dialpadmail.com")
"""Domains the voice provider's notifications come from."""


def is_voicemail_notification(mail: Mail) -> bool:
    domain = mail.sender.rpartition("@")[2]
    return any(domain == sender or domain.endswith("." + sender) for sender in VOICE_SENDERS) and (
        "voicemail" in mail.subject.lower()
    )


# ---------------------------------------------------------------------------------------------------- threading

_PREFIX = re.compile(r"^\s*((re|fwd?|aw|wg|sv|vs|tr|rv|antw|odp|r)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_TICKET = re.compile(r"\[Ticket #(\d{1,12})\]", re.IGNORECASE)


def strip_reply_prefixes(subject: str) -> str:
    """A subject without its Re:/Fwd: (and localized) prefixes."""
    return _PREFIX.sub("", subject).strip()


def ticket_number(subject: str) -> int | None:
    """The number in a `[Ticket #<number>]` subject (encoded words are decoded by the parser; prefixes stripped)."""
    found = _TICKET.search(strip_reply_prefixes(subject))
    return int(found.group(1)) if found else None


def bounced_message_ids(mail: Mail) -> list[str]:
    """The Message-IDs of the mail a bounce returns: from its attached original (`message/rfc822` or
    `text/rfc822-headers`), then its own In-Reply-To and References."""
    found: list[str] = []
    for name, value in _returned_headers(mail):
        if name in ("message-id",):
            found += message_ids(value)
    return list(dict.fromkeys([*found, *mail.in_reply_to, *mail.references]))


def bounced_recipients(mail: Mail) -> list[str]:
    """The addresses a bounce says failed: X-Failed-Recipients, and the DSN's Final-Recipient lines."""
    addresses = [value.strip().lower() for value in ", ".join(mail.headers_named("X-Failed-Recipients")).split(",")]
    if mail.report is not None:
        payload = mail.report.get_payload()
        text = payload if isinstance(payload, str) else "\n".join(str(part) for part in payload or [])
        addresses += [value.lower() for value in re.findall(r"Final-Recipient:\s*rfc822;\s*(\S+)", text, re.I)]
    return list(dict.fromkeys(address for address in addresses if "@" in address))


def _returned_headers(mail: Mail) -> Iterable[tuple[str, str]]:
    for attachment in mail.attachments:
        if attachment.content_type in ("message/rfc822", "text/rfc822-headers"):
            returned = BytesParser(policy=policy.default).parsebytes(attachment.data, headersonly=True)
            yield from ((name.lower(), str(value)) for name, value in returned.items())


def address(display: str) -> str:
    """The bare, lower-cased address of `Name <address>`."""
    try:
        return str(Address(addr_spec=parseaddr(display)[1]).addr_spec).lower()
    except (ValueError, IndexError):
        return parseaddr(display)[1].lower()
