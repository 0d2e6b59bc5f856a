"""The four inbound mail providers, as they call the helpdesk's `POST /api/webhooks/inbound-email`: each turns a raw
mail into its own wire format, the way the real service does, and signs it.

- `mailgun_form`: kind A, Mailgun's route forwarding (the parsed mail as multipart/form-data, UTF-8 fields,
  `message-headers` as JSON, `attachment-1`..., and `timestamp`, `token`, `signature`).
- `sendgrid_form`: kind B, SendGrid's Inbound Parse (the raw header block, text and HTML in their own charsets named
  by `charsets`, `envelope`, `attachment-info` and `attachment1`...), signed like its Event Webhook (ECDSA P-256 over
  timestamp + body).
- `postmark_json`: kind C, Postmark's inbound webhook JSON.
- kind D is the raw mail itself (`message/rfc822`).

Written independently of the helpdesk's own mail code (only the standard library reads the mail here), so that a
test of that code is not a test of itself. `Mailbox` is an organization with an email channel that takes all four."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets as random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.header import decode_header
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import func, select

from signalyard import secrets
from signalyard.services.helpdesk import blob_store
from storage.common.blobs import BlobStore
from storage.helpdesk import channels, inbound, tickets
from storage.helpdesk.tickets import ConversationRecord
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until

PATH = "/api/webhooks/inbound-email"

FormField = tuple[str, bytes] | tuple[str, str, str, bytes]
"""(name, value) or (name, filename, content type, data)."""


def multipart(fields: Sequence[FormField], boundary: str | None = None) -> tuple[bytes, str]:
    """A multipart/form-data body as an HTTP client writes it, and its Content-Type."""
    boundary = boundary or f"------------------------{random.token_hex(12)}"
    body = bytearray()
    for item in fields:
        body += f"--{boundary}\r\n".encode()
        if len(item) == 2:
            name, value = item
            body += f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value + b"\r\n"
        else:
            name, filename, content_type, data = item
            body += f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'.encode()
            body += f"Content-Type: {content_type}\r\n\r\n".encode() + data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return bytes(body), f"multipart/form-data; boundary={boundary}"


@dataclass
class Parts:
    """What a provider takes out of a raw mail."""

    message: EmailMessage
    text: Message | None = None
    html: Message | None = None
    attachments: list[tuple[str, str, bytes]] = field(default_factory=list)
    """(filename, content type, data)."""


def parts_of(raw: bytes) -> Parts:
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    found = Parts(message)

    def walk(part: Message) -> None:
        content_type = part.get_content_type()
        if content_type == "message/rfc822":
            inner = part.get_payload(0)
            assert isinstance(inner, Message)
            found.attachments.append((part.get_filename() or "message.eml", content_type, inner.as_bytes()))
        elif part.is_multipart() and content_type not in ("message/delivery-status",):
            for child in part.iter_parts() if isinstance(part, EmailMessage) else []:
                walk(child)
        elif content_type in ("text/plain", "text/html") and not part.get_filename():
            if content_type == "text/plain" and found.text is None:
                found.text = part
            elif content_type == "text/html" and found.html is None:
                found.html = part
        else:
            data = part.get_payload(decode=True) if not part.is_multipart() else part.as_bytes().split(b"\n\n", 1)[1]
            name = part.get_filename() or ("report" if content_type.startswith("message/") else "attachment")
            found.attachments.append((name, content_type, data if isinstance(data, bytes) else b""))

    walk(message)
    return found


CODECS = {"shift_jis": "cp932", "gb2312": "gb18030", "ks_c_5601-1987": "cp949", "iso-8859-1": "cp1252"}
"""How the providers read the charsets mailers name (what a good converter does; a character it cannot read is
replaced, as a provider's is)."""


def _readable(data: bytes, charset: str | None) -> str:
    label = (charset or "us-ascii").lower()
    try:
        return data.decode(CODECS.get(label, label), "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def _decoded(part: Message | None) -> str | None:
    if part is None:
        return None
    payload = part.get_payload(decode=True)
    return _readable(payload if isinstance(payload, bytes) else b"", part.get_content_charset())


def _unfolded(value: str) -> str:
    """A raw header value unfolded, its 8-bit bytes read as UTF-8 (as the providers read them)."""
    return " ".join(value.encode("utf-8", "surrogateescape").decode("utf-8", "replace").split())


def _raw_header(message: Message, name: str) -> str:
    """A header as it came, unfolded."""
    return _unfolded(next((str(v) for k, v in message.raw_items() if k.lower() == name.lower()), ""))


def _people(value: str) -> str:
    chunks = decode_header(value)
    return "".join(
        chunk if isinstance(chunk, str) else _readable(chunk, charset or "utf-8") for chunk, charset in chunks
    )


def _header(message: Message, name: str) -> str:
    """A header decoded for people (the providers' `from`, `subject`...)."""
    return _people(_raw_header(message, name))


def _addresses_of(message: Message, name: str) -> list[tuple[str, str]]:
    """(decoded name, address) of a header's addresses."""
    return [(_people(display), address) for display, address in getaddresses([_raw_header(message, name)])]


# ------------------------------------------------------------------------------------------------ kind A


def mailgun_signature(signing_key: str, timestamp: str, token: str) -> str:
    return hmac.new(signing_key.encode(), (timestamp + token).encode(), hashlib.sha256).hexdigest()


def mailgun_form(
    raw: bytes,
    *,
    recipient: str,
    signing_key: str,
    timestamp: str | None = None,
    token: str | None = None,
    signature: str | None = None,
    mime: bool = False,
) -> tuple[bytes, str]:
    """Kind A: (body, Content-Type). `mime`: the raw mail in `body-mime`, as a route to a URL ending in `mime`."""
    found = parts_of(raw)
    message = found.message
    timestamp = timestamp or str(int(time.time()))
    token = token or random.token_hex(25)
    headers: list[list[Any]] = []
    for name, value in message.raw_items():
        if name.lower() == "content-type":  # Mailgun gives it parsed: [type, {parameters}]
            headers.append([name, [message.get_content_type(), dict((message.get_params() or [])[1:])]])
        else:
            headers.append([name, _unfolded(str(value))])
    fields: list[FormField] = [
        ("recipient", recipient.encode()),
        ("sender", _addresses_of(message, "From")[0][1].encode()),
        ("from", _header(message, "From").encode()),
        ("subject", _header(message, "Subject").encode()),
        ("timestamp", timestamp.encode()),
        ("token", token.encode()),
        ("signature", (signature or mailgun_signature(signing_key, timestamp, token)).encode()),
    ]
    if mime:
        fields.append(("body-mime", raw))
        return multipart(fields)
    fields += [
        ("body-plain", (_decoded(found.text) or "").encode()),
        ("stripped-text", (_decoded(found.text) or "").split("\n>")[0].encode()),
        ("message-headers", json.dumps(headers).encode()),
        ("attachment-count", str(len(found.attachments)).encode()),
    ]
    if found.html is not None:
        fields += [("body-html", (_decoded(found.html) or "").encode()), ("stripped-html", b"")]
    for name in ("Message-Id", "In-Reply-To", "References"):
        if message.get(name):
            fields.append((name, _raw_header(message, name).encode()))
    for number, (filename, content_type, data) in enumerate(found.attachments, 1):
        fields.append((f"attachment-{number}", filename, content_type, data))
    return multipart(fields)


# ------------------------------------------------------------------------------------------------ kind B


@dataclass
class SendgridKey:
    """The provider's signing key pair; `public_key` is what the channel is given (base64 DER, as SendGrid shows)."""

    private: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    @property
    def public_key(self) -> str:
        der = self.private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(der).decode()

    def sign(self, timestamp: str, body: bytes) -> str:
        return base64.b64encode(self.private.sign(timestamp.encode() + body, ec.ECDSA(hashes.SHA256()))).decode()


def sendgrid_form(raw: bytes, *, envelope_to: Sequence[str], raw_mode: bool = False) -> tuple[bytes, str]:
    """Kind B: (body, Content-Type), unsigned (sign with `SendgridKey.sign`)."""
    found = parts_of(raw)
    message = found.message
    header_block = raw.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0] + b"\n"
    envelope = {"to": list(envelope_to), "from": _addresses_of(message, "From")[0][1]}
    fields: list[FormField] = [
        ("headers", header_block),
        ("dkim", b"{@example.com : pass}"),
        ("to", _header(message, "To").encode()),
        ("from", _header(message, "From").encode()),
        ("sender_ip", b"198.51.100.7"),
        ("envelope", json.dumps(envelope).encode()),
        ("subject", _header(message, "Subject").encode()),
        ("spam_score", b"0.1"),
        ("SPF", b"pass"),
    ]
    if raw_mode:
        fields.append(("email", raw))
        return multipart(fields)
    charsets = {"to": "UTF-8", "from": "UTF-8", "subject": "UTF-8"}
    for name, part in (("text", found.text), ("html", found.html)):
        if part is not None:
            payload = part.get_payload(decode=True)
            fields.append((name, payload if isinstance(payload, bytes) else b""))
            charsets[name] = part.get_content_charset() or "us-ascii"
    info = {}
    for number, (filename, content_type, data) in enumerate(found.attachments, 1):
        fields.append((f"attachment{number}", filename, content_type, data))
        info[f"attachment{number}"] = {"filename": filename, "name": filename, "type": content_type}
    fields += [
        ("charsets", json.dumps(charsets).encode()),
        ("attachments", str(len(found.attachments)).encode()),
        ("attachment-info", json.dumps(info).encode()),
    ]
    return multipart(fields)


# ------------------------------------------------------------------------------------------------ kind C


def postmark_json(raw: bytes, *, original_recipient: str) -> bytes:
    """Kind C: Postmark's inbound JSON."""
    found = parts_of(raw)
    message = found.message
    skipped = {"from", "to", "cc", "subject", "date", "reply-to"}
    [(sender_name, sender)] = _addresses_of(message, "From")[:1] or [("", "")]
    payload = {
        "FromName": sender_name,
        "MessageStream": "inbound",
        "From": sender,
        "FromFull": {"Email": sender, "Name": sender_name, "MailboxHash": ""},
        "To": _header(message, "To"),
        "ToFull": [
            {"Email": address, "Name": name, "MailboxHash": ""} for name, address in _addresses_of(message, "To")
        ],
        "Cc": _header(message, "Cc"),
        "CcFull": [],
        "Bcc": "",
        "BccFull": [],
        "OriginalRecipient": original_recipient,
        "Subject": _header(message, "Subject"),
        "MessageID": str(uuid.uuid4()),
        "ReplyTo": _header(message, "Reply-To"),
        "MailboxHash": "",
        "Date": _header(message, "Date"),
        "TextBody": _decoded(found.text) or "",
        "HtmlBody": _decoded(found.html) or "",
        "StrippedTextReply": "",
        "Tag": "",
        "Headers": [
            {"Name": name, "Value": _unfolded(str(value))}
            for name, value in message.raw_items()
            if name.lower() not in skipped
        ],
        "Attachments": [
            {
                "Name": filename,
                "Content": base64.b64encode(data).decode(),
                "ContentType": content_type,
                "ContentLength": len(data),
            }
            for filename, content_type, data in found.attachments
        ],
    }
    return json.dumps(payload).encode()


# ------------------------------------------------------------------------------------------- the mailbox


@dataclass
class Mailbox:
    """An organization (signed up through the browser) with an email channel at `address` that takes every kind:
    A's signing key, B's public key (the matching private key in `sendgrid`), C's inbound token, D's secret."""

    stack: HelpdeskStack
    key: str
    organization_id: str
    address: str
    channel_id: str
    secrets: dict[str, str]
    sendgrid: SendgridKey

    @classmethod
    async def open(cls, stack: HelpdeskStack, *more_addresses: str) -> Mailbox:
        address = f"support-{uuid.uuid4().hex[:8]}@acme.example"
        sendgrid = SendgridKey()
        given = {
            "forwarder_secret": f"fwd-{uuid.uuid4().hex}",
            "inbound_token": f"tok-{uuid.uuid4().hex}",
            "signing_key": f"key-{uuid.uuid4().hex}",
            "public_key": sendgrid.public_key,
        }
        async with signed_up(stack) as organization:
            channel = await stack.db.write(
                channels.create,
                secrets.secrets_cipher(stack.settings.platform),
                organization.id,
                kind="email",
                name="Support mailbox",
                addresses=[("email", address), *(("email", more) for more in more_addresses)],
                secrets=given,
                now=datetime.now(UTC),
            )
        return cls(stack, organization.key, organization.id, address, channel.id, given, sendgrid)

    async def another_channel(self, address: str) -> str:
        """A second email channel of the organization at `address` (the same forwarder secret); its id."""
        channel = await self.stack.db.write(
            channels.create,
            secrets.secrets_cipher(self.stack.settings.platform),
            self.organization_id,
            kind="email",
            name="Another mailbox",
            addresses=[("email", address)],
            secrets={"forwarder_secret": self.secrets["forwarder_secret"]},
            now=datetime.now(UTC),
        )
        return channel.id

    async def forward(self, raw: bytes, **headers: str) -> httpx.Response:
        """Kind D."""
        sent = {"Content-Type": "message/rfc822", "x-forwarder-secret": self.secrets["forwarder_secret"]} | headers
        return await self.stack.client.post(PATH, content=raw, headers=sent)

    async def mailgun(self, raw: bytes, **options: Any) -> httpx.Response:
        """Kind A."""
        options.setdefault("recipient", self.address)
        body, content_type = mailgun_form(raw, signing_key=self.secrets["signing_key"], **options)
        return await self.stack.client.post(PATH, content=body, headers={"Content-Type": content_type})

    async def sendgrid_post(
        self, body: bytes, content_type: str, *, timestamp: str | None = None, signature: str | None = None
    ) -> httpx.Response:
        timestamp = timestamp or str(int(time.time()))
        headers = {
            "Content-Type": content_type,
            "x-vendor-email-event-webhook-timestamp": timestamp,
            "x-vendor-email-event-webhook-signature": signature or self.sendgrid.sign(timestamp, body),
        }
        return await self.stack.client.post(PATH, content=body, headers=headers)

    async def sendgrid_mail(self, raw: bytes, **options: Any) -> httpx.Response:
        """Kind B."""
        body, content_type = sendgrid_form(raw, envelope_to=[self.address], **options)
        return await self.sendgrid_post(body, content_type)

    async def postmark(self, raw: bytes, *, in_header: bool = False) -> httpx.Response:
        """Kind C, the token in the URL (or in x-inbound-token)."""
        body = postmark_json(raw, original_recipient=self.address)
        return await self.postmark_post(body, in_header=in_header)

    async def postmark_post(self, body: bytes, *, in_header: bool = False, token: str | None = None) -> httpx.Response:
        token = token or self.secrets["inbound_token"]
        headers = {"Content-Type": "application/json"} | ({"x-inbound-token": token} if in_header else {})
        return await self.stack.client.post(
            PATH, content=body, headers=headers, params={} if in_header else {"token": token}
        )

    async def tickets(self) -> list[dict[str, Any]]:
        return list((await self.stack.rest(self.key, "GET", "/tickets")).json()["data"])

    async def conversations(self, ticket_id: str) -> list[dict[str, Any]]:
        """The ticket's conversations, oldest first."""
        listed = await self.stack.rest(self.key, "GET", f"/tickets/{ticket_id}/conversations")
        return list(reversed(listed.json()["data"]))

    async def customer(self, email: str) -> dict[str, Any] | None:
        listed = (await self.stack.rest(self.key, "GET", "/customers", params={"email": email})).json()["data"]
        return dict(listed[0]) if listed else None

    async def inbound_messages(self, **filters: str) -> list[dict[str, Any]]:
        """`GET /api/v1/inbound-messages` of this channel, oldest first."""
        params = {"channel_id": self.channel_id, "limit": "100", **filters}
        answer = await self.stack.rest(self.key, "GET", "/inbound-messages", params=params)
        assert answer.status_code == 200, answer.text
        return list(reversed(answer.json()["data"]))

    async def outcomes(self, count: int, timeout_s: float = 30) -> list[dict[str, Any]]:
        """The channel's first `count` inbound messages once each is processed, oldest first (as the REST API lists
        them: classification, outcome, ticket_id, conversation_id)."""

        async def done() -> list[dict[str, Any]]:
            listed = await self.inbound_messages()
            processed = [message for message in listed if message["state"] == "processed"]
            return listed if len(processed) >= count else []

        return await until(done, f"{count} inbound messages of the channel processed", timeout_s=timeout_s)

    async def sent_reply(self, ticket_id: str, body: str, message_id: str) -> None:
        """An agent's reply on the ticket as the helpdesk sent it by mail: stored with its Message-ID (`<...>`)."""

        def record(connection: Any) -> None:
            ticket = tickets.get(connection, self.organization_id, ticket_id)
            assert ticket is not None
            tickets.add_conversation(
                connection,
                ticket,
                author_type="agent",
                author_id=None,
                body=body,
                internal=False,
                message_id=message_id.strip("<>"),
                now=datetime.now(UTC),
                recorded=[],
            )

        await self.stack.db.write(record)

    async def stored(self) -> int:
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == self.channel_id)
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))

    async def stored_conversations(self, ticket_id: str) -> list[ConversationRecord]:
        found, _ = await self.stack.db.read(tickets.conversations, ticket_id, limit=100, cursor=None)
        return list(reversed(found))

    def blobs(self) -> BlobStore:
        """The blob store the processors put attachments in."""
        return blob_store(self.stack.settings.platform, self.stack.settings.services["helpdesk"])


def retitled(raw: bytes, **headers: str | None) -> bytes:
    """The raw mail with the given headers replaced (or added; None: removed), names with `_` for `-`; the rest
    byte for byte."""
    head, separator, body = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    kept: list[bytes] = []
    replaced = {name.replace("_", "-").lower() for name in headers}
    skipping = False
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            if not skipping:
                kept.append(line)
            continue
        skipping = line.split(b":", 1)[0].strip().lower().decode() in replaced
        if not skipping:
            kept.append(line)
    kept += [f"{name.replace('_', '-')}: {value}".encode() for name, value in headers.items() if value is not None]
    return b"\n".join(kept) + separator + body


def new_message_id(domain: str = "example.com") -> str:
    return f"<{uuid.uuid4().hex}@{domain}>"
