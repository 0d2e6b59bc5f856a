"""Mail as the inbound processors read it: one `Mail` whatever the provider kind delivered (a raw RFC 5322 message, or
a provider's fields: kind A's form, kind B's form, kind C's JSON), parsed with the standard library (`email`, policy
`default`); every charset decoded, with the supersets real mailers mean (Shift_JIS as CP932, GB2312 as GB18030,
ISO-2022-JP with its NEC and IBM extensions...), encoded words joined and decoded; its classification (section 4.6:
inbound, bounce, auto_reply, outbound_copy, dialpad_voicemail, invalid, and the mail that makes no ticket); and what
threads it. Pure: no storage, no I/O."""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from email import policy
from email.headerregistry import BaseHeader, HeaderRegistry
from email.message import Message
from email.parser import BytesParser
from email.utils import formataddr, getaddresses
from html.parser import HTMLParser
from typing import TypeVar

import msgspec

from topics.helpdesk.inbound import (
    MAILGUN_HEADERS,
    POSTMARK_MAIL,
    SENDGRID_ATTACHMENTS,
    SENDGRID_CHARSETS,
    SENDGRID_ENVELOPE,
    MailgunHeaderValue,
    SendgridAttachment,
)
from wire.mailboxes import LIST_MANAGER, MAIL_SYSTEM, NO_REPLY, squashed

INBOUND, BOUNCE, AUTO_REPLY, OUTBOUND_COPY, VOICEMAIL, INVALID = (
    "inbound",
    "bounce",
    "auto_reply",
    "outbound_copy",
    "dialpad_voicemail",
    "invalid",
)
DELAYED, DELIVERED, FEEDBACK_REPORT = "delayed_delivery", "delivery_report", "feedback_report"
"""Mail that is neither a message nor a bounce: a DSN saying delivery is only delayed, or that it succeeded, and an
abuse feedback report (ARF). Recorded, and no ticket."""
NO_TICKET = frozenset({AUTO_REPLY, OUTBOUND_COPY, DELAYED, DELIVERED, FEEDBACK_REPORT})
MAKES_CONVERSATION = frozenset({INBOUND, VOICEMAIL})

T = TypeVar("T")

OUR_HEADER = "X-Signalyard-Helpdesk"
"""Set on every mail the helpdesk sends: the organization's id on an organization's mail, ACCOUNT_MAIL on the
account mail (sign-in and reset links). A copy of it coming back to that organization is its own mail."""
ACCOUNT_MAIL = "account"


class _RepeatedHeaders(HeaderRegistry):
    """policy.default's header factory, remembering the headers it built and their classes: the standard library
    parses a header again on every read of it (a part's Content-Type is read by each question asked of the part), and
    mails repeat the same short header values (`text/plain; charset=utf-8`) again and again. A header object is
    immutable, so one can be shared; long values (References, Received) are built each time and never kept."""

    @functools.lru_cache(maxsize=2048)  # noqa: B019 - one instance, for the life of the process
    def _cached(self, name: str, value: str) -> BaseHeader:
        return super().__call__(name, value)

    def __call__(self, name: str, value: str) -> BaseHeader:
        return self._cached(name, value) if len(value) <= 200 else super().__call__(name, value)

    @functools.lru_cache(maxsize=256)  # noqa: B019 - one instance, for the life of the process
    def __getitem__(self, name: str) -> type[BaseHeader]:
        """The class of a header's name, made once: the standard library makes a new class on every call (each
        header built, each header set on a message to count its kind)."""
        return super().__getitem__(name)  # type: ignore[no-any-return]


MAIL_POLICY = policy.default.clone(header_factory=_RepeatedHeaders())
"""policy.default, with its headers built once per distinct short value."""
_BLOCK_PARSER = BytesParser(policy=MAIL_POLICY)


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
    """Encoded words decoded."""
    text: str
    message_id: str | None
    """Without its angle brackets."""
    in_reply_to: list[str]
    references: list[str]
    headers: list[tuple[str, str]] = field(repr=False)
    """Every header, names lower-cased, values unfolded and decoded."""
    attachments: list[Attachment] = field(default_factory=list, repr=False)
    html: str | None = field(default=None, repr=False)
    report: list[dict[str, str]] = field(default_factory=list, repr=False)
    """A report's machine-readable part, as its field blocks (names lower-cased): a delivery status notification's
    per-message block then one per recipient, or an ARF report's one block."""
    report_type: str | None = None
    """A multipart/report's `report-type` (`delivery-status`, `feedback-report`, a read receipt's
    `disposition-notification`...), or the type of a report part found among attachments."""
    reply_to: list[tuple[str, str]] = field(default_factory=list, repr=False)
    """(name, address) pairs of Reply-To, addresses lower-cased."""

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((value for key, value in self.headers if key == lowered), None)

    def headers_named(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.headers if key == lowered]


# ---------------------------------------------------------------------------------------------------- charsets

_SUPERSETS = {
    # what real mailers mean by the charset they name (the WHATWG encoding standard's choices, where it has one)
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "csshiftjis": "cp932",
    "euc-jp": "euc_jis_2004",
    "x-euc-jp": "euc_jis_2004",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "euc-cn": "gb18030",
    "cp936": "gb18030",
    "ks_c_5601-1987": "cp949",
    "ks_c_5601": "cp949",
    "euc-kr": "cp949",
    "big5": "big5hkscs",
    "x-big5": "big5hkscs",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
    "iso-8859-9": "cp1254",
    "iso-8859-8-i": "iso-8859-8",
    "iso-8859-6-i": "iso-8859-6",
    "unicode-1-1-utf-8": "utf-8",
    "utf8": "utf-8",
}
_LATIN = frozenset({"us-ascii", "ascii", "ansi_x3.4-1968", "iso-8859-1", "latin1", "latin-1", "iso_8859-1", "l1"})
"""Labels whose 8-bit bytes are, in practice, UTF-8 (a mislabelled message) or windows-1252."""
_JIS = frozenset({"iso-2022-jp", "csiso2022jp", "iso-2022-jp-ms", "cp50220", "cp50221", "cp50222"})


def _codec(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_text(data: bytes, charset: str | None) -> str:
    """Bytes in a declared charset, as people would read them: the charset's common superset; for a US-ASCII or
    Latin-1 label, UTF-8 when the bytes are UTF-8 (mislabelled mail), else windows-1252; an unknown charset as UTF-8;
    what still cannot be decoded is replaced, never an error."""
    label = (charset or "us-ascii").strip().strip('"').lower()
    if label in _JIS:
        try:
            return data.decode("iso2022_jp")
        except UnicodeDecodeError:
            converted = _jis_to_cp932(data)
            return converted.decode("cp932", "replace") if converted is not None else data.decode("utf-8", "replace")
    if label in _LATIN:
        if data.isascii():
            return data.decode("ascii")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.decode("cp1252", "replace")
    codec = _codec(_SUPERSETS.get(label, label))
    if codec is not None:
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode(codec or "utf-8", "replace")


def _jis_to_cp932(data: bytes) -> bytes | None:
    """ISO-2022-JP as Outlook and Japanese phones send it (CP50220/50221: NEC row 13, IBM extensions, half-width
    katakana), turned into CP932 bytes, which hold the same characters at the same JIS positions; None when it is not
    ISO-2022-JP at all."""
    if not data.isascii():
        return None
    out = bytearray()
    mode = "ascii"
    i = 0
    while i < len(data):
        byte = data[i]
        if byte == 0x1B:
            escape = data[i + 1 : i + 3]
            if escape in (b"(B", b"(J"):
                mode = "ascii"
            elif escape in (b"$@", b"$B"):
                mode = "jis"
            elif escape == b"(I":
                mode = "kana"
            else:
                return None
            i += 3
        elif byte in (0x0E, 0x0F):  # shift out / in: half-width katakana
            mode = "kana" if byte == 0x0E else "ascii"
            i += 1
        elif byte in (0x0A, 0x0D) or mode == "ascii":
            out.append(byte)
            i += 1
        elif mode == "kana":
            out.append(byte + 0x80 if 0x21 <= byte <= 0x5F else byte)
            i += 1
        else:
            if i + 1 >= len(data):
                return None
            first, second = byte, data[i + 1]
            lead = ((first - 0x21) >> 1) + 0x81
            lead += 0x40 if lead > 0x9F else 0
            trail = second + (0x1F + (second >= 0x60) if first & 1 else 0x7E)
            out += bytes((lead & 0xFF, trail & 0xFF))
            i += 2
    return bytes(out)


# ------------------------------------------------------------------------------------------------------ headers

_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_FOLD = re.compile(r"\r?\n(?=[ \t])")
_HEADER_NAME = re.compile(r"^[!-9;-~]+$")


def _word_bytes(encoding: str, text: str) -> bytes:
    if encoding in "bB":
        try:
            return base64.b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            return text.encode("ascii", "replace")
    decoded = re.sub(
        rb"=([0-9A-Fa-f]{2})", lambda found: bytes([int(found.group(1), 16)]), text.encode("ascii", "replace")
    )
    return decoded.replace(b"_", b" ")


def header_text(raw: str, fallback_charset: str | None = None) -> str:
    """A header's value as people read it: unfolded; raw 8-bit bytes decoded (UTF-8, else `fallback_charset`);
    encoded words decoded, adjacent ones joined (and one charset's bytes split across words put back together
    before decoding, as Japanese mailers split them)."""
    value = _FOLD.sub("", raw).replace("\r", "").replace("\n", " ")
    if not value.isascii() and any("\udc80" <= character <= "\udcff" for character in value):
        raw_bytes = value.encode("utf-8", "surrogateescape")
        try:
            value = raw_bytes.decode("utf-8")
        except UnicodeDecodeError:
            value = decode_text(raw_bytes, fallback_charset)
    if "=?" not in value:
        return value.strip()
    pieces: list[str] = []
    pending: tuple[str, bytearray] | None = None
    position = 0

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            pieces.append(decode_text(bytes(pending[1]), pending[0]))
            pending = None

    for word in _WORD.finditer(value):
        between = value[position : word.start()]
        if between and not (pending is not None and between.isspace()):
            flush()
            pieces.append(between)
        charset = word.group(1).split("*", 1)[0].lower()
        data = _word_bytes(word.group(2), word.group(3))
        if pending is not None and pending[0] == charset:
            pending[1].extend(data)
        else:
            flush()
            pending = (charset, bytearray(data))
        position = word.end()
    flush()
    pieces.append(value[position:])
    return "".join(pieces).strip()


def message_ids(value: str | None) -> list[str]:
    """The Message-IDs in an In-Reply-To or References header, without their angle brackets, in order."""
    if not value:
        return []
    found = re.findall(r"<([^<>\s]+)>", value)
    return found or [part for part in value.split() if "@" in part]


def _addresses(message: Message, name: str, fallback_charset: str | None) -> list[tuple[str, str]]:
    """(display name, lower-cased address) of every address in the headers named `name`: split while still encoded
    (an encoded word never holds a bare comma), then each name decoded, whatever its charset."""
    found: list[tuple[str, str]] = []
    for key, raw in message.raw_items():
        if key.lower() == name.lower():
            found += [(header_text(display, fallback_charset), address) for display, address in _split(str(raw))]
    return found


@functools.lru_cache(maxsize=4096)
def _split(raw: str) -> tuple[tuple[str, str], ...]:
    """(encoded display name, lower-cased address) of each address of a header value, unfolded. One sender's mails
    and one mailbox's repeat their values, which the standard library's address parser reads slowly: kept."""
    unfolded = _FOLD.sub("", raw).replace("\r", "").replace("\n", " ")
    return tuple((display, address.strip().lower()) for display, address in getaddresses([unfolded]) if "@" in address)


def _charset_of(message: Message) -> str | None:
    for part in message.walk():
        if part.get_content_maintype() == "text":
            charset = part.get_content_charset()
            if charset:
                return charset
    return None


# ------------------------------------------------------------------------------------------------------ parsing


def from_rfc822(raw: bytes, *, envelope_to: str | None = None) -> Mail:
    """A raw RFC 5322 message (email kind D, kind A's `body-mime`, kind B's `email`)."""
    message = _BLOCK_PARSER.parsebytes(raw)
    found = _Found()
    found.walk(message)
    return _assemble(
        message,
        envelope_to=envelope_to,
        text=found.text,
        html=found.html,
        attachments=found.attachments,
        report=found.report,
    )


def _assemble(
    message: Message,
    *,
    envelope_to: str | None,
    text: str | None,
    html: str | None,
    attachments: list[Attachment],
    report: Message | None,
    subject: str | None = None,
    sender: tuple[str, str] | None = None,
) -> Mail:
    """A Mail of a message's headers and the body its provider kind gave."""
    fallback = _charset_of(message)
    headers = [(name.lower(), header_text(str(value), fallback)) for name, value in message.raw_items()]
    senders = _addresses(message, "From", fallback)
    sender_name, sender_address = sender or (senders[0] if senders else ("", ""))
    recipients = [envelope_to.lower()] if envelope_to else []
    for name in ("Delivered-To", "To", "Cc"):
        recipients += [address for _, address in _addresses(message, name, fallback) if address not in recipients]
    raw_subject = next((value for name, value in message.raw_items() if name.lower() == "subject"), None)
    report_part = report
    kept = []
    for attachment in attachments:
        if report_part is None and attachment.content_type in ("message/delivery-status", "message/feedback-report"):
            report_part = _BLOCK_PARSER.parsebytes(
                f"Content-Type: {attachment.content_type}\r\n\r\n".encode() + attachment.data
            )
        else:
            kept.append(attachment)
    report_type = None
    if message.get_content_type() == "multipart/report":
        report_type = str(message.get_param("report-type") or "").lower() or None
    if report_type is None and report_part is not None:
        report_type = report_part.get_content_type().removeprefix("message/")
    text = (text or "").strip()
    own_ids = message_ids(_raw(message, "Message-ID"))
    return Mail(
        sender=sender_address.lower(),
        sender_name=sender_name,
        recipients=recipients,
        subject=subject if subject is not None else header_text(raw_subject or "", fallback),
        text=text if text else html_to_text(html or ""),
        message_id=own_ids[0] if own_ids else None,
        in_reply_to=message_ids(_raw(message, "In-Reply-To")),
        references=message_ids(_raw(message, "References")),
        headers=headers,
        attachments=kept,
        html=html,
        report=_blocks(report_part),
        report_type=report_type,
        reply_to=_addresses(message, "Reply-To", fallback),
    )


def _raw(message: Message, name: str) -> str:
    return " ".join(value for key, value in message.raw_items() if key.lower() == name.lower())


def _blocks(report: Message | None) -> list[dict[str, str]]:
    if report is None:
        return []
    payload = report.get_payload()
    if isinstance(payload, list):
        return [
            {name.lower(): str(value) for name, value in block.items()}
            for block in payload
            if isinstance(block, Message)
        ]
    text = payload if isinstance(payload, str) else ""
    blocks = []
    for chunk in re.split(r"\r?\n\s*\r?\n", _FOLD.sub("", text)):
        fields = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in chunk.splitlines())
            if value
        }
        if fields:
            blocks.append(fields)
    return blocks


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
            data = _message_bytes(inner) if isinstance(inner, Message) else _bytes(part)
            self.attachments.append(Attachment(_filename(part) or "message.eml", "message/rfc822", data))
            return
        if content_type in ("message/delivery-status", "message/feedback-report"):
            if self.report is None:
                self.report = part
            return
        if part.is_multipart():
            for child in part.get_payload():
                if isinstance(child, Message):
                    self.walk(child)
            return
        disposition = part.get_content_disposition()
        filename = _filename(part)
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
        elif part.get_content_maintype() != "text" and _bytes(part):
            self.attachments.append(Attachment(filename or "attachment", content_type, _bytes(part)))


def _message_bytes(message: Message) -> bytes:
    try:
        return message.as_bytes(policy=policy.SMTP)
    except (ValueError, LookupError, TypeError):  # a header the generator cannot write again
        return message.as_string(policy=policy.compat32).encode("utf-8", "surrogateescape")


def _filename(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except (ValueError, LookupError):  # a malformed RFC 2231 parameter
        return None
    return header_text(name) if name else None


def _bytes(part: Message) -> bytes:
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _text(part: Message) -> str:
    return decode_text(_bytes(part), part.get_content_charset())


# --------------------------------------------------------------------------------------- the providers' fields


@dataclass(frozen=True, slots=True)
class FormPart:
    """One part of a multipart/form-data body."""

    name: str
    filename: str | None
    content_type: str
    data: bytes = field(repr=False)


def form_parts(body: bytes, content_type: str) -> list[FormPart]:
    """A multipart/form-data body's parts, read by the standard library's parser (given the body's Content-Type);
    ValueError when it is not a whole multipart body."""
    if "\r" in content_type or "\n" in content_type:
        raise ValueError("the Content-Type holds a line break")
    message = _BLOCK_PARSER.parsebytes(f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode() + body)
    if not message.is_multipart() or message.defects:
        raise ValueError("the body is not a whole multipart/form-data body")
    parts = []
    for part in message.get_payload():
        name = part.get_param("name", header="content-disposition") if isinstance(part, Message) else None
        if not isinstance(part, Message) or not name:
            continue
        parts.append(FormPart(str(name), _filename(part), part.get_content_type(), _form_bytes(part)))
    return parts


def _form_bytes(part: Message) -> bytes:
    """A form part's content; a part the parser read as a message of its own (a `message/rfc822` file, a DSN's
    `message/delivery-status`) written back as it was read."""
    if not part.is_multipart():
        return _bytes(part)
    written = _message_bytes(part).replace(b"\r\n", b"\n")
    return written.split(b"\n\n", 1)[1] if b"\n\n" in written else b""


def _fields(parts: list[FormPart]) -> dict[str, bytes]:
    fields: dict[str, bytes] = {}
    for part in parts:
        if part.filename is None:
            fields.setdefault(part.name, part.data)
    return fields


def _header_block(pairs: Iterable[tuple[str, str]]) -> Message:
    """Headers a provider gave as (name, value) pairs, as a message of those headers alone."""
    lines = []
    for given_name, given_value in pairs:
        name = str(given_name).strip()
        if not _HEADER_NAME.match(name):
            continue
        value = re.sub(r"\r?\n(?![ \t])", " ", str(given_value)).replace("\r", "")
        lines.append(f"{name}: {value}\r\n")
    return _BLOCK_PARSER.parsebytes(("".join(lines) + "\r\n").encode("utf-8", "surrogateescape"), headersonly=True)


def _with(pairs: list[tuple[str, str]], **given: str | None) -> list[tuple[str, str]]:
    """The pairs, and each given header the pairs lack."""
    present = {name.lower() for name, _ in pairs}
    added = [
        (name.replace("_", "-"), value)
        for name, value in given.items()
        if value and name.replace("_", "-").lower() not in present
    ]
    return [*pairs, *added]


def _numbered(parts: list[FormPart], pattern: str) -> list[FormPart]:
    numbered = []
    for part in parts:
        found = re.fullmatch(pattern, part.name)
        if found and part.filename is not None:
            numbered.append((int(found.group(1)), part))
    return [part for _, part in sorted(numbered, key=lambda item: item[0])]


def _json_field(fields: dict[str, bytes], name: str, decoder: msgspec.json.Decoder[T], absent: bytes) -> T:
    """A form field holding JSON, in its provider's shape; msgspec.DecodeError naming the field when it is not."""
    try:
        return decoder.decode(fields.get(name) or absent)
    except msgspec.DecodeError as error:
        raise type(error)(f"the field {name}: {error}") from None


def _mailgun_value(value: MailgunHeaderValue) -> str:
    """A `message-headers` value: a string, or (Content-Type, Content-Disposition) `[value, {parameter: value}]`."""
    if isinstance(value, str):
        return value
    given, parameters = value
    return given + "".join(f'; {name}="{parameter}"' for name, parameter in parameters.items())


def from_mailgun(body: bytes, content_type: str, *, recipient: str | None = None) -> Mail:
    """Kind A (Mailgun-shaped): a multipart/form-data of the parsed mail (`from`, `subject`, `body-plain`,
    `body-html`, `message-headers` as a JSON list of [name, value], `attachment-1`...), or of the raw mail in
    `body-mime` (a route forwarding to a URL that ends in `mime`). Its text fields are UTF-8."""
    parts = form_parts(body, content_type)
    fields = _fields(parts)
    if fields.get("body-mime"):
        return from_rfc822(fields["body-mime"], envelope_to=recipient)
    given = _json_field(fields, "message-headers", MAILGUN_HEADERS, b"[]")
    pairs = [(name, _mailgun_value(value)) for name, value in given]

    def text(name: str) -> str | None:
        return fields[name].decode("utf-8", "replace") if name in fields else None

    headers = _header_block(
        _with(
            pairs,
            From=text("from"),
            Subject=text("subject"),
            In_Reply_To=text("In-Reply-To"),
            References=text("References"),
            Message_Id=text("Message-Id"),
        )
    )
    attachments = [
        Attachment(part.filename or "attachment", part.content_type, part.data)
        for part in _numbered(parts, r"attachment-(\d+)")
    ]
    return _assemble(
        headers,
        envelope_to=recipient,
        text=text("body-plain"),
        html=text("body-html"),
        attachments=attachments,
        report=None,
    )


def from_sendgrid(body: bytes, content_type: str) -> Mail:
    """Kind B (SendGrid Inbound Parse-shaped): a multipart/form-data of `headers` (the raw header block), `from`,
    `to`, `subject`, `text`, `html` (each in the charset the `charsets` JSON names for it), `envelope` (JSON, `to` and
    `from`), `attachments` (a count), `attachment-info` (JSON) and `attachment1`...; or the raw mail in `email` (the
    "send raw" setting)."""
    parts = form_parts(body, content_type)
    fields = _fields(parts)
    envelope = _json_field(fields, "envelope", SENDGRID_ENVELOPE, b"{}")
    envelope_to = next(iter(envelope.recipients), None)
    if fields.get("email"):
        return from_rfc822(fields["email"], envelope_to=envelope_to)
    charsets = _json_field(fields, "charsets", SENDGRID_CHARSETS, b"{}")

    def text(name: str) -> str | None:
        return decode_text(fields[name], charsets.get(name, "utf-8")) if name in fields else None

    headers: Message = _BLOCK_PARSER.parsebytes((fields.get("headers") or b"").strip() + b"\r\n\r\n", headersonly=True)
    if not headers.keys():
        headers = _header_block(_with([], From=text("from"), To=text("to"), Subject=text("subject")))
    info = _json_field(fields, "attachment-info", SENDGRID_ATTACHMENTS, b"{}")
    attachments = []
    for part in _numbered(parts, r"attachment(\d+)"):
        described = info.get(part.name) or SendgridAttachment()
        name = described.filename or described.name or part.filename or "attachment"
        attachments.append(Attachment(name, described.type or part.content_type, part.data))
    subject = text("subject") if "subject" not in {key.lower() for key in headers} else None
    return _assemble(
        headers,
        envelope_to=envelope_to,
        text=text("text"),
        html=text("html"),
        attachments=attachments,
        report=None,
        subject=subject,
    )


def from_postmark(body: bytes, *, recipient: str | None = None) -> Mail:
    """Kind C (Postmark inbound-shaped): JSON with `From`, `FromName`, `To`, `Cc`, `Subject`, `TextBody`,
    `HtmlBody`, `ReplyTo`, `MessageID` (the provider's own id), `Headers` ([{Name, Value}], the mail's Message-ID
    among them) and `Attachments` ([{Name, ContentType, Content}], content base64)."""
    mail = POSTMARK_MAIL.decode(body)
    sender = mail.sender
    headers = _header_block(
        _with(
            [(header.name, header.value) for header in mail.headers],
            From=formataddr((mail.from_name, sender), charset="utf-8") if sender else None,
            To=mail.to or None,
            Cc=mail.cc or None,
            Reply_To=mail.reply_to or None,
        )
    )
    attachments = [
        Attachment(item.name or "attachment", item.content_type, base64.b64decode(item.content, validate=False))
        for item in mail.attachments
    ]
    return _assemble(
        headers,
        envelope_to=recipient,
        text=mail.text_body,
        html=mail.html_body or None,
        attachments=attachments,
        report=None,
        subject=mail.subject,
        sender=(mail.from_name, sender.lower()) if sender else None,
    )


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
    r"^\s*("
    r"auto(matic)?[\s-]*(reply|response|answer)|out\s+of\s+(the\s+)?office(\s+auto\s*reply)?|"
    r"automatische\s+antwort|abwesenheitsnotiz|automatisch\s+antwoord|afwezigheidsbericht|"
    r"r[ée]ponse\s+automatique|absent(e)?\s+du\s+bureau|respuesta\s+autom[áa]tica|fuera\s+de\s+la\s+oficina|"
    r"risposta\s+automatica|fuori\s+sede|resposta\s+autom[áa]tica|fora\s+do\s+escrit[óo]rio|"
    r"automatisk\s+(svar|besked)|autosvar|automaattinen\s+vastaus|automatikus\s+v[áa]lasz|"
    r"automatyczna\s+odpowied[źz]|automatick[áa]\s+odpov[ěe]ď|otomatik\s+(yan[\u0131i]t|cevap)|"
    r"автоматический\s+ответ|автоответ|αυτόματη\s+απάντηση|"
    r"自動応答|自動返信|不在通知|自动回复|自動回覆|자동\s*회신|자동\s*응답"
    r")\s*([:\uff1a]|$)",
    re.IGNORECASE,
)
"""The subjects auto-responders give in many languages: the words, then a colon (or nothing after them)."""
_NON_DELIVERY_SUBJECT = re.compile(
    r"^\s*("
    r"undelivered\s+mail(\s+returned\s+to\s+sender)?|undeliverable(\s+(mail|message))?|returned\s+mail|"
    r"mail\s+delivery\s+(failed|failure|problem)|delivery\s+(status\s+notification|failure|failed|has\s+failed)|"
    r"failure\s+notice|non[\s-]?delivery(\s+(report|notification))?|nondeliverable(\s+(mail|message))?|"
    r"message\s+(not\s+delivered|undeliverable)|unzustellbar|nicht\s+zustellbar|non\s+remis|non\s+distribu[ée]|"
    r"non\s+recapitabile|no\s+se\s+puede\s+entregar|onbestelbaar|kan\s+ikke\s+leveres|kunde\s+inte\s+levereras"
    r")\s*([:\uff1a(]|$)",
    re.IGNORECASE,
)
"""The subjects mail systems give a report of failed (or delayed) delivery: the words at the very start, then a colon,
a parenthesis or nothing (`Undeliverable: <subject>`, `Delivery Status Notification (Failure)`, `failure notice`). A
customer who forwards one writes `Fwd:` before it, and one who writes `Undeliverable address on my order` goes on
after the words."""
_RETURNED = frozenset({"message/rfc822", "text/rfc822-headers"})
"""An attached mail, or its headers: what a report of failed delivery returns."""
_LOOP_ALERT = re.compile(
    r"\b(mail(ing)?[\s-]*loops?|loop(ing)?\s+(detected|suspected|alert|warning)|(possible|suspected|probable)\s+loop|"
    r"looping\s+(mail|message|posting)s?)\b",
    re.IGNORECASE,
)
_LIST_MANAGER_HEADERS = frozenset({"list-id", "x-mailman-version", "x-beenthere", "x-loop", "x-listserver"})
_BULK_HEADERS = frozenset(
    {
        "list-unsubscribe",
        "list-id",
        "feedback-id",
        "x-auto-response-suppress",
        "x-ses-outgoing",
        "x-sg-eid",
        "x-sg-id",
        "x-pm-message-id",
        "x-mandrill-user",
        "x-mc-user",
        "x-msfbl",
    }
)
"""The marks of a bulk or transactional sending: an unsubscribe link, a list, a feedback loop id, Exchange's
"send no auto-reply", and the sending services' own headers (Amazon SES, SendGrid, Postmark, Mandrill, Mailchimp,
SparkPost)."""
_BULK_PREFIXES = ("x-mailgun", "x-ses-", "x-sg-", "x-pm-", "x-mandrill-")
_DELAY_SUBJECT = re.compile(r"\b(delayed|delay|warning: message .* delayed|still being retried)\b", re.IGNORECASE)
_PRECEDENCE = frozenset({"bulk", "junk", "list", "auto_reply"})


def _actions(mail: Mail) -> list[str]:
    return [block["action"].strip().lower() for block in mail.report if block.get("action")]


def _null_reverse_path(mail: Mail) -> bool:
    """`Return-Path: <>`: the final mail system's record of a null envelope sender (the nearest, the first, counts)."""
    value = mail.header("Return-Path")
    return value is not None and value.replace(" ", "") in ("<>", "")


def _auto_submitted(mail: Mail) -> bool:
    submitted = (mail.header("Auto-Submitted") or "").split(";", 1)[0].strip().lower()
    return bool(submitted) and submitted != "no"


def is_our_own(mail: Mail, organization_id: str) -> bool:
    """A copy of mail the helpdesk sent for this organization (or its account mail): it carries OUR_HEADER."""
    value = mail.header(OUR_HEADER)
    return value is not None and value.strip() in (organization_id, ACCOUNT_MAIL)


def requester(mail: Mail, own_addresses: Collection[str]) -> tuple[str, str] | None:
    """(name, address) of whom a ticket of this mail is for: its sender; for a mail from one of the organization's own
    addresses (a web form that sends as the helpdesk), the first Reply-To address that is not its own; never one of
    its own addresses (None then)."""
    own = {address.lower() for address in own_addresses}
    if mail.sender and mail.sender not in own:
        return mail.sender_name, mail.sender
    return next(((name, address) for name, address in mail.reply_to if address not in own), None)


def classify(mail: Mail, own_addresses: Collection[str], organization_id: str) -> str:
    """The mail's class (docs/helpdesk.md, "Inbound email"), in this order: our own mail coming back (our header, or
    sent from one of our own addresses with no one else to answer); a feedback report; a read receipt (an
    auto-reply); a delivery status notification (a failed action: bounce; only delayed: delayed; only delivered: a
    delivery report); a bounce by its headers (X-Failed-Recipients, Exchange's NDR mark) or its sender (a mail
    system's role address); a list manager's loop alert (an auto-reply); the voice provider's voicemail notification;
    a bounce by its envelope (a null reverse-path) or by what it says (a failed-delivery subject on a returned mail);
    an auto-reply or a notification; else a customer's message, or an invalid one when it names no one to answer."""
    if is_our_own(mail, organization_id):
        return OUTBOUND_COPY
    if mail.sender and requester(mail, own_addresses) is None:
        return OUTBOUND_COPY
    if mail.report_type == "feedback-report":
        return FEEDBACK_REPORT
    if mail.report_type == "disposition-notification":
        return AUTO_REPLY
    actions = _actions(mail)
    if mail.report_type == "delivery-status" or actions:
        if "failed" in actions or not actions:
            return BOUNCE
        if "delayed" in actions:
            return DELAYED
        return DELIVERED
    if mail.header("X-Failed-Recipients") or mail.header("X-MS-Exchange-Message-Is-Ndr") is not None:
        return BOUNCE
    if is_mail_system(mail) or (not mail.sender and _null_reverse_path(mail)):
        return _failed_or_delayed(mail)
    if is_loop_alert(mail):
        return AUTO_REPLY
    if is_voicemail_notification(mail):
        return VOICEMAIL
    if is_non_delivery_report(mail):
        return _failed_or_delayed(mail)
    if is_auto_reply(mail) or is_notification(mail):
        return AUTO_REPLY
    return INBOUND if requester(mail, own_addresses) is not None else INVALID


def _failed_or_delayed(mail: Mail) -> str:
    return DELAYED if _DELAY_SUBJECT.search(mail.subject) else BOUNCE


def is_mail_system(mail: Mail) -> bool:
    """From a mail system's role address, `postmaster` or `mailer-daemon` however it is spelt (`post.master`,
    `MAILER_DAEMON`, `mailerdaemon`, `postmaster-noreply`...): the local part without its separators and digits
    starts or ends with one. A From without an address (`MAILER-DAEMON (Mail Delivery System)`) by its first word."""
    address = mail.sender or (mail.header("From") or "").strip().split(" ", 1)[0] + "@"
    return bool(MAIL_SYSTEM.search(squashed(address)))


def is_non_delivery_report(mail: Mail) -> bool:
    """A report of failed delivery without a DSN, from a sender that is no mail system's role address:

    - a null reverse-path (`Return-Path: <>`, which RFC 5321 keeps for notifications so that they never bounce
      back), unless the mail is an auto-reply or a notification by its own signals (auto-responders send with a null
      reverse-path too) and nothing says delivery failed;
    - a subject that starts with the words mail systems use (`Undeliverable:`, `Undelivered Mail Returned to Sender`,
      `Delivery Status Notification`, `Mail delivery failed`, `failure notice`, `Unzustellbar:`...) on a mail that
      returns a mail (an attached `message/rfc822` or `text/rfc822-headers`: Exchange's plain multipart/mixed NDR)
      or says it was sent automatically (`Auto-Submitted`). The subject alone is not one: a customer may write
      `Undeliverable: my parcel`; nor is an attached mail alone: a customer may forward one as an attachment."""
    says_failed = bool(_NON_DELIVERY_SUBJECT.match(mail.subject))
    returns = any(attachment.content_type in _RETURNED for attachment in mail.attachments)
    if _null_reverse_path(mail):
        return says_failed or returns or not (is_auto_reply(mail) or is_notification(mail))
    return says_failed and (returns or _auto_submitted(mail))


def is_loop_alert(mail: Mail) -> bool:
    """A mailing list manager's notice that it stopped a mail loop (Mailman, LISTSERV, Sympa, Majordomo...): its
    subject, or the start of its text, speaks of a mail loop, and it comes from a list manager (its address, or the
    headers a list manager writes: List-Id, X-Mailman-Version, X-BeenThere, X-Loop, X-Listserver). An auto-reply,
    not a bounce: it names no address that failed, so as a bounce it would mark the ticket's customer bouncing; and
    the loop ends where nothing answers it."""
    if not (_LOOP_ALERT.search(mail.subject) or _LOOP_ALERT.search(mail.text[:2000])):
        return False
    return bool(LIST_MANAGER.search(mail.sender.rpartition("@")[0])) or any(
        name in _LIST_MANAGER_HEADERS for name, _ in mail.headers
    )


def is_notification(mail: Mail) -> bool:
    """A system's notification that carries no auto-reply header: two independent signs, as no one alone tells a
    machine from a person (companies send their people's mail through Amazon SES, SendGrid or Mailgun, Outlook puts
    X-Auto-Response-Suppress on ordinary mail, sales and newsletter tools put List-Unsubscribe on one-to-one mail):

    - it came through a list to its subscribers: List-Id and List-Unsubscribe together;
    - its sender says answers go nowhere (`no-reply`, `noreply`, `do-not-reply`...), it names no one else to answer
      in Reply-To (a web form's mail sent as no-reply for a visitor is the visitor's), and it carries a mark of a bulk
      or transactional sending (`_BULK_HEADERS`, or a sending service's `X-Mailgun-*`, `X-SES-*`, `X-SG-*`...)."""
    if mail.header("List-Id") is not None and mail.header("List-Unsubscribe") is not None:
        return True
    if not NO_REPLY.search(squashed(mail.sender)):
        return False
    if any(not NO_REPLY.search(squashed(address)) for _, address in mail.reply_to):
        return False
    return any(name in _BULK_HEADERS or name.startswith(_BULK_PREFIXES) for name, _ in mail.headers)


def _yes(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("no", "false", "0", "off")


def is_auto_reply(mail: Mail) -> bool:
    """RFC 3834 `Auto-Submitted` other than `no` (`auto-replied`, `auto-generated`, `auto-notified`, Zimbra's
    `vacation`...); `X-Autoreply`, `X-Autorespond`; `Precedence` bulk, junk, list or auto_reply; Exchange's
    out-of-office (`X-Auto-Response-Suppress` together with `X-MS-Exchange-Inbox-Rules-Loop`: either alone is not
    one, the first is what careful senders (this helpdesk too) put on their own mail, the second what an Outlook rule
    that forwards mail adds); Apple iCloud's vacation (`X-Apple-Action: VACATION`, without Auto-Submitted); a subject
    that says so, in many languages."""
    if _auto_submitted(mail):
        return True
    if _yes(mail.header("X-Autoreply")) or _yes(mail.header("X-Autorespond")):
        return True
    if (mail.header("Precedence") or "").strip().lower() in _PRECEDENCE:
        return True
    if mail.header("X-Auto-Response-Suppress") is not None and mail.header("X-MS-Exchange-Inbox-Rules-Loop"):
        return True
    if "vacation" in (mail.header("X-Apple-Action") or "").lower():
        return True
    return bool(_AUTO_SUBJECT.match(mail.subject) or _AUTO_SUBJECT.match(strip_reply_prefixes(mail.subject)))


VOICE_SENDERS = ("dialpad.com", "dialpadmail.com")
"""Domains the voice provider's notifications come from."""


def is_voicemail_notification(mail: Mail) -> bool:
    domain = mail.sender.rpartition("@")[2]
    return any(domain == sender or domain.endswith("." + sender) for sender in VOICE_SENDERS) and (
        "voicemail" in mail.subject.lower()
    )


# ---------------------------------------------------------------------------------------------------- threading

_PREFIX = re.compile(
    r"^\s*((re|fwd?|aw|wg|sv|vs|tr|rv|res|enc|antw|odp|pd|ynt|ilt|r|回复|回覆|答复|转发|轉寄|転送|返信|Отв|Ответ|"
    r"Пересл|회신|전달)\s*(\[\d+\]|\(\d+\))?\s*[:\uff1a]\s*)+",
    re.IGNORECASE,
)
_TICKET = re.compile(r"\[Ticket\s*#\s*(\d{1,12})\]", re.IGNORECASE)


def strip_reply_prefixes(subject: str) -> str:
    """A subject without its Re:/Fwd: (and localized) prefixes."""
    return _PREFIX.sub("", subject).strip()


def ticket_number(subject: str) -> int | None:
    """The number in a `[Ticket #<number>]` subject (encoded words decoded by the parser; prefixes stripped)."""
    found = _TICKET.search(strip_reply_prefixes(subject))
    return int(found.group(1)) if found else None


@dataclass(frozen=True, slots=True)
class ThreadKeys:
    """What may thread a mail onto a ticket, in the order of section 4.6."""

    in_reply_to: list[str]
    references: list[str]
    """Every References id, the nearest (the last) first."""
    ticket_number: int | None
    message_id: str | None


def thread_keys(mail: Mail) -> ThreadKeys:
    return ThreadKeys(
        in_reply_to=mail.in_reply_to,
        references=list(reversed(mail.references)),
        ticket_number=ticket_number(mail.subject),
        message_id=mail.message_id,
    )


_QUOTED_MESSAGE_ID = re.compile(r"^message-id:\s*<([^<>\s]+)>", re.IGNORECASE | re.MULTILINE)
"""The Message-ID line of an original a bounce quotes in its text (Exim's and qmail's plain-text bounces)."""
_QUOTED_RECIPIENT = re.compile(r"^<([^<>\s@]+@[^<>\s]+)>:", re.MULTILINE)
"""A failed recipient as qmail's (and Postfix's) text names it: `<address>:` at the start of a line."""


def bounced_message_ids(mail: Mail) -> list[str]:
    """The Message-IDs of the mail a bounce returns: from its attached original (`message/rfc822` or
    `text/rfc822-headers`), or the original it quotes in its text, then its own In-Reply-To and References."""
    found: list[str] = []
    for name, value in _returned_headers(mail):
        if name == "message-id":
            found += message_ids(value)
    quoted = [found for found in _QUOTED_MESSAGE_ID.findall(mail.text) if found != mail.message_id]
    return list(dict.fromkeys([*found, *quoted, *mail.in_reply_to, *reversed(mail.references)]))


def bounced_recipients(mail: Mail) -> list[str]:
    """The addresses a bounce says failed: X-Failed-Recipients, and the Final-Recipient (else Original-Recipient) of
    each DSN recipient block whose action is failed; without either, the `<address>:` lines of a plain-text bounce."""
    addresses = [value.strip().lower() for value in ", ".join(mail.headers_named("X-Failed-Recipients")).split(",")]
    for block in mail.report:
        if block.get("action", "").strip().lower() == "failed":
            recipient = block.get("final-recipient") or block.get("original-recipient") or ""
            addresses.append(recipient.partition(";")[2].strip().strip("<>").lower())
    if not any("@" in address for address in addresses) and not mail.report:
        addresses += [address.lower() for address in _QUOTED_RECIPIENT.findall(mail.text)]
    return list(dict.fromkeys(address for address in addresses if "@" in address))


def _returned_headers(mail: Mail) -> Iterable[tuple[str, str]]:
    for attachment in mail.attachments:
        if attachment.content_type in ("message/rfc822", "text/rfc822-headers"):
            returned = _BLOCK_PARSER.parsebytes(attachment.data, headersonly=True)
            yield from ((name.lower(), str(value)) for name, value in returned.raw_items())
