"""`POST /api/webhooks/inbound-email`: inbound mail of four provider kinds, told apart by their shape (section 4.6).

- **D, the email-to-HTTP forwarder** (a mail server's pipe script, an email worker): `Content-Type: message/rfc822`,
  the raw RFC 5322 message as the body, the channel's secret in `x-forwarder-secret`, and optionally the envelope in
  `x-envelope-from` and `x-envelope-to`. Without `x-envelope-to` the recipient comes from `Delivered-To`, then `To`.

Every kind routes by its recipient address to the email channel that receives for it, and is de-duplicated by its
Message-ID (a mail without one, by the SHA-256 of what came)."""

from __future__ import annotations

import hashlib
from email import policy
from email.parser import BytesHeaderParser
from email.utils import getaddresses
from typing import Any

from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import MAX_BODY_BYTES, Inbound, equal, refused

PATH = "/api/webhooks/inbound-email"


def accepted(stored: bool) -> Response[dict[str, str]]:
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


def _first_address(*values: str | None) -> str:
    for value in values:
        if value:
            addresses = [address for _, address in getaddresses([value]) if address]
            if addresses:
                return addresses[0].lower()
    return ""


def _message_id(value: str | None) -> str:
    return (value or "").strip().strip("<>").strip()


async def forwarder(request: Request[Any, Any, Any], inbound: Inbound, body: bytes) -> Response[dict[str, str]]:
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


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def inbound_email(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[dict[str, str]]:
    body = await request.body()
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type == "message/rfc822":
        return await forwarder(request, inbound, body)
    raise refused(415, f"Content-Type {media_type or '(none)'} is none of the inbound mail kinds: message/rfc822")


ROUTES = [inbound_email]
