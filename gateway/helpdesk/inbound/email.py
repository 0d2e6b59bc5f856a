"""`POST /api/webhooks/inbound-email`: inbound mail of four provider kinds, told apart by their shape (section 4.6;
docs/helpdesk.md, "Inbound email").

- **A, Mailgun-shaped**: multipart/form-data with `timestamp`, `token` and `signature`, the lowercase hex
  HMAC-SHA256 of timestamp + token keyed by the channel's `signing_key`; the timestamp within the replay window, and a
  token used once (the same token again is the same delivery, or a replay). Routed by `recipient`; de-duplicated by
  the Message-Id of `message-headers`, else the token.
- **B, SendGrid Inbound Parse-shaped**: multipart/form-data with `envelope` (JSON: `to`, `from`), `headers`, `text`...;
  header `x-vendor-email-event-webhook-signature`, the base64 DER ECDSA P-256 / SHA-256 signature of
  `x-vendor-email-event-webhook-timestamp` + the raw body, checked with the channel's `public_key` (base64 DER
  SubjectPublicKeyInfo); the timestamp within the replay window. Routed by the envelope's first recipient that routes;
  de-duplicated by the mail's Message-ID, else a digest of its header block.
- **C, Postmark inbound-shaped**: application/json (`From`, `To`, `Subject`, `Headers`...); the channel's
  `inbound_token` in the query (`?token=`) or in header `x-inbound-token`. Routed by `OriginalRecipient`, then the
  `To` and `Cc` addresses: the first that routes to a channel whose token it is. De-duplicated by the mail's
  Message-ID, else the provider's `MessageID`.
- **D, the email-to-HTTP forwarder** (a mail server's pipe script, an email worker): `Content-Type: message/rfc822`,
  the raw RFC 5322 message as the body, the channel's secret in `x-forwarder-secret`, and optionally the envelope in
  `x-envelope-from` and `x-envelope-to`. Without `x-envelope-to` the recipient comes from `Delivered-To`, then `To`.
  De-duplicated by its Message-ID, else the SHA-256 of what came.

Signatures are checked over the raw bytes read once; a multipart body is read by the standard library's parser from
those same bytes (kinds A and B carry their routing address, and A its signature, inside it)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Iterable
from datetime import timedelta
from email import policy
from email.message import Message
from email.parser import BytesHeaderParser, BytesParser
from email.utils import getaddresses
from typing import Any, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_der_public_key
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.errors import HelpdeskError
from gateway.helpdesk.inbound.common import (
    MAX_BODY_BYTES,
    REPLAY_WINDOW_S,
    Inbound,
    decoded,
    equal,
    fresh,
    refused,
    run_blocking,
)
from storage.helpdesk import inbound as events
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import MAILGUN_HEADERS, POSTMARK_MAIL, SENDGRID_ENVELOPE

PATH = "/api/webhooks/inbound-email"
SIGNATURE_HEADER = "x-vendor-email-event-webhook-signature"
TIMESTAMP_HEADER = "x-vendor-email-event-webhook-timestamp"
MAX_ROUTING_TRIES = 20
"""The most recipients of one call tried as its route (an unsigned call's To may list hundreds)."""
OFF_THE_LOOP_BYTES = 256 * 1024
"""A body larger than this is parsed, and its signature checked, on a thread: the event loop keeps answering."""

T = TypeVar("T")


def accepted(stored: bool) -> Response[dict[str, str]]:
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


def _addresses(*values: str | None) -> list[str]:
    found: list[str] = []
    for value in values:
        if value:
            found += [address.lower() for _, address in getaddresses([value]) if "@" in address]
    return list(dict.fromkeys(found))


def _first_address(*values: str | None) -> str:
    return next(iter(_addresses(*values)), "")


def _message_id(value: str | None) -> str:
    return (value or "").strip().strip("<>").strip()


async def _off_the_loop(size: int, function: Callable[[], T]) -> T:
    return await run_blocking(function) if size > OFF_THE_LOOP_BYTES else function()


def _form(body: bytes, content_type: str) -> dict[str, bytes]:
    """The text fields of a multipart/form-data body (a field given twice: its first value); 400 when the body is not
    a whole multipart body."""
    if "\r" in content_type or "\n" in content_type:
        raise refused(400, "The Content-Type holds a line break")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=policy.default).parsebytes(head + body)
    if not message.is_multipart() or message.defects:
        raise refused(400, "The body is not a whole multipart/form-data body (its boundary, or its end, is missing)")
    fields: dict[str, bytes] = {}
    for part in message.get_payload():
        if not isinstance(part, Message):
            continue
        name = part.get_param("name", header="content-disposition")
        if name and part.get_filename() is None:
            payload = part.get_payload(decode=True)
            fields.setdefault(str(name), payload if isinstance(payload, bytes) else b"")
    return fields


def _text(fields: dict[str, bytes], name: str) -> str:
    return fields.get(name, b"").decode("utf-8", "replace").strip()


async def _route_first(
    inbound: Inbound, addresses: Iterable[str], accepts: Callable[[Routed], bool]
) -> tuple[Routed, str]:
    """The channel of the first address that routes to one `accepts`, and that address; 404 when none routes, 401
    when those that route do not accept the call."""
    routed_any = False
    for address in list(addresses)[:MAX_ROUTING_TRIES]:
        try:
            channel = await inbound.route("email", address)
        except HelpdeskError:
            continue
        routed_any = True
        if accepts(channel):
            return channel, address
    if routed_any:
        raise refused(401, "The call's credentials are not those of the channel its recipient routes to")
    raise refused(404, "No channel receives for any recipient of this mail")


# --------------------------------------------------------------------------------------------- kind A (Mailgun)


def mailgun_signature(signing_key: str, timestamp: str, token: str) -> str:
    """Lowercase hex HMAC-SHA256 of timestamp + token, keyed by the signing key."""
    return hmac.new(signing_key.encode(), (timestamp + token).encode(), hashlib.sha256).hexdigest()


async def mailgun(inbound: Inbound, body: bytes, content_type: str, fields: dict[str, bytes]) -> Response[Any]:
    """Kind A."""
    timestamp, token, signature = (_text(fields, name) for name in ("timestamp", "token", "signature"))
    recipient = _first_address(_text(fields, "recipient"))
    if not recipient:
        raise refused(400, "The form names no recipient")
    channel = await inbound.route("email", recipient)
    key = channel.secrets.get("signing_key")
    if not key or not equal(signature, mailgun_signature(key, timestamp, token)):
        raise refused(401, "signature is not the HMAC of timestamp and token under this channel's signing key")
    if not fresh(timestamp):
        raise refused(401, f"timestamp is more than {REPLAY_WINDOW_S} s away: a replay, or a clock far off")
    headers = decoded(MAILGUN_HEADERS, fields.get("message-headers") or b"[]", "The field message-headers")
    message_id = next(
        (_message_id(value) for name, value in headers if name.lower() == "message-id" and isinstance(value, str)), ""
    )
    dedup_key = message_id or _message_id(_text(fields, "Message-Id")) or f"token:{token}"
    since = inbound.clock() - timedelta(seconds=2 * REPLAY_WINDOW_S)
    seen = await inbound.db.read(
        events.key_of_detail, channel.organization_id, channel.channel_id, "email_a", ("token", token), since=since
    )
    if seen is not None:
        if seen == dedup_key[:255]:
            return accepted(False)
        raise refused(401, "token was used by another delivery: a replay")
    sender = _first_address(_text(fields, "sender"), _text(fields, "from"))
    stored = await inbound.accept(
        channel,
        "email_a",
        dedup_key=dedup_key,
        body=body,
        content_type=content_type,
        partition_key=f"{channel.channel_id}:{sender or recipient}",
        details={"recipient": recipient, "sender": sender, "token": token},
    )
    return accepted(stored)


# -------------------------------------------------------------------------------------------- kind B (SendGrid)


def ecdsa_verified(public_key: str, signature: str, signed: bytes) -> bool:
    """The base64 DER ECDSA signature of `signed` (SHA-256) under the base64 DER SubjectPublicKeyInfo key."""
    try:
        key = load_der_public_key(base64.b64decode(public_key, validate=True))
        if not isinstance(key, ec.EllipticCurvePublicKey):
            return False
        key.verify(base64.b64decode(signature, validate=True), signed, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError, TypeError, binascii.Error):
        return False
    return True


async def sendgrid(
    request: Request[Any, Any, Any], inbound: Inbound, body: bytes, content_type: str, fields: dict[str, bytes]
) -> Response[Any]:
    """Kind B."""
    if "envelope" not in fields:
        raise refused(400, "The form has no envelope")
    envelope = decoded(SENDGRID_ENVELOPE, fields["envelope"], "The field envelope")
    recipients = _addresses(*envelope.recipients)
    if not recipients:
        raise refused(400, "The envelope names no recipient")
    signature = request.headers.get(SIGNATURE_HEADER, "")
    timestamp = request.headers.get(TIMESTAMP_HEADER, "")
    channel, recipient = await _route_first(inbound, recipients, lambda _channel: True)
    public_key = channel.secrets.get("public_key")
    signed = timestamp.encode() + body
    if (
        not public_key
        or not signature
        or not await _off_the_loop(len(body), lambda: ecdsa_verified(public_key, signature, signed))
    ):
        raise refused(401, f"{SIGNATURE_HEADER} is not a signature of the timestamp and body by this channel's key")
    if not fresh(timestamp):
        raise refused(401, f"{TIMESTAMP_HEADER} is more than {REPLAY_WINDOW_S} s away: a replay, or a clock far off")
    header_block = fields.get("headers") or b""
    if fields.get("email"):  # "send raw": the whole mail in one field
        header_block = fields["email"].split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    headers = BytesHeaderParser(policy=policy.compat32).parsebytes(header_block.strip() + b"\r\n\r\n")
    message_id = _message_id(headers.get("Message-ID"))
    sender = _first_address(envelope.sender, _text(fields, "from"))
    stored = await inbound.accept(
        channel,
        "email_b",
        dedup_key=message_id or "sha256:" + hashlib.sha256(header_block or body).hexdigest(),
        body=body,
        content_type=content_type,
        partition_key=f"{channel.channel_id}:{sender or recipient}",
        details={"recipient": recipient, "sender": sender},
    )
    return accepted(stored)


# -------------------------------------------------------------------------------------------- kind C (Postmark)


async def postmark(request: Request[Any, Any, Any], inbound: Inbound, body: bytes) -> Response[Any]:
    """Kind C."""
    token = request.query_params.get("token") or request.headers.get("x-inbound-token", "")
    if not token:
        raise refused(401, "The call carries no inbound token: ?token= or x-inbound-token")
    mail = decoded(POSTMARK_MAIL, body)
    candidates = _addresses(mail.original_recipient, *(address.email for address in mail.to_full), mail.to, mail.cc)
    if not candidates:
        raise refused(400, "The mail names no recipient: OriginalRecipient, To or Cc")

    def owns_token(channel: Routed) -> bool:
        expected = channel.secrets.get("inbound_token")
        return bool(expected) and equal(token, expected or "")

    channel, recipient = await _route_first(inbound, candidates, owns_token)
    message_id = next((_message_id(header.value) for header in mail.headers if header.name.lower() == "message-id"), "")
    dedup_key = message_id or mail.message_id.strip()
    if not dedup_key:
        raise refused(400, "The mail has neither a Message-ID header nor a MessageID")
    sender = _first_address(mail.sender)
    stored = await inbound.accept(
        channel,
        "email_c",
        dedup_key=dedup_key,
        body=body,
        content_type="application/json",
        partition_key=f"{channel.channel_id}:{sender or recipient}",
        details={"recipient": recipient, "sender": sender},
    )
    return accepted(stored)


# ------------------------------------------------------------------------------------------- kind D (forwarder)


async def forwarder(request: Request[Any, Any, Any], inbound: Inbound, body: bytes) -> Response[Any]:
    """Kind D."""
    headers = BytesHeaderParser(policy=policy.compat32).parsebytes(body)
    recipient = _first_address(request.headers.get("x-envelope-to"), headers.get("Delivered-To"), headers.get("To"))
    if not recipient:
        raise refused(400, "The mail names no recipient: send x-envelope-to, or a Delivered-To or To header")
    channel = await inbound.route("email", recipient)
    expected = channel.secrets.get("forwarder_secret")
    given = request.headers.get("x-forwarder-secret", "")
    if not expected or not given or not equal(given, expected):
        raise refused(401, "x-forwarder-secret is not this channel's forwarder secret")
    message_id = _message_id(headers.get("Message-ID"))
    sender = _first_address(request.headers.get("x-envelope-from"), headers.get("From"))
    stored = await inbound.accept(
        channel,
        "email_d",
        dedup_key=message_id or "sha256:" + hashlib.sha256(body).hexdigest(),
        body=body,
        content_type="message/rfc822",
        partition_key=f"{channel.channel_id}:{sender or recipient}",
        details={
            "envelope_to": request.headers.get("x-envelope-to") or recipient,
            "envelope_from": request.headers.get("x-envelope-from"),
        },
    )
    return accepted(stored)


# ------------------------------------------------------------------------------------------------- the endpoint

KINDS = "message/rfc822 (D), application/json (C), multipart/form-data (A, B)"


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def inbound_email(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[Any]:
    body = await request.body()
    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";")[0].strip().lower()
    if media_type == "message/rfc822":
        return await forwarder(request, inbound, body)
    if media_type == "application/json":
        return await postmark(request, inbound, body)
    if media_type == "multipart/form-data":
        fields = await _off_the_loop(len(body), lambda: _form(body, content_type))
        if {"timestamp", "token", "signature"} <= fields.keys():
            return await mailgun(inbound, body, content_type, fields)
        if "envelope" in fields or SIGNATURE_HEADER in request.headers:
            return await sendgrid(request, inbound, body, content_type, fields)
        raise refused(400, "The form is neither kind A (timestamp, token, signature) nor kind B (envelope)")
    raise refused(415, f"Content-Type {media_type or '(none)'} is none of the inbound mail kinds: {KINDS}")


ROUTES = [inbound_email]
