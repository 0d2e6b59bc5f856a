"""`POST /api/webhooks/email-provider` and its legacy alias `POST /api/webhooks/email`: the email sending provider's
events on the mail the helpdesk sends (delivered, bounce, dropped, deferred, spam report...), as a JSON array in the
shape of SendGrid's Event Webhook (section 4.6 shows no format: docs/helpdesk.md, "Email sending provider"). Both
paths behave the same.

- **Routing and token.** The URL carries the channel's generated `token` (`?token=...`): it routes the call to its
  email-provider channel, and is compared with the channel's secret in constant time.
- **Signature**, when the channel has the provider's `public_key` (base64 DER or PEM, an EC P-256 key): as email kind
  B, `x-vendor-email-event-webhook-signature` is the base64 DER ECDSA-SHA256 signature of
  `x-vendor-email-event-webhook-timestamp` followed by the raw body, and the timestamp must be within 300 s of now.
- **Storing.** Every event of the array is stored as its own inbound event (its canonical JSON), de-duplicated by its
  `sg_event_id` (else the SHA-256 of that JSON), so a retried batch, even regrouped, stores nothing twice. One
  recipient's events share a partition. The answer counts both: `{"status", "accepted", "duplicates"}`."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
from typing import Any

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, decoded, equal, fresh, refused, run_blocking
from topics.helpdesk.inbound import DELIVERY_EVENT, DELIVERY_EVENTS, DeliveryEvent, Provider

PATH = "/api/webhooks/email-provider"
LEGACY_PATH = "/api/webhooks/email"
PROVIDER: Provider = "email_provider"
SIGNATURE = "x-vendor-email-event-webhook-signature"
TIMESTAMP = "x-vendor-email-event-webhook-timestamp"
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_EVENTS = 5000
_OFF_LOOP_BYTES = 64 * 1024


def public_key(text: str) -> ec.EllipticCurvePublicKey:
    """The provider's verification key, as it hands it out (base64 DER) or as PEM; ValueError when it is neither."""
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_public_key(text.encode())
        else:
            key = serialization.load_der_public_key(base64.b64decode(text, validate=True))
    except (ValueError, binascii.Error, TypeError) as error:
        raise ValueError(f"not an EC public key: {error}") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("not an EC public key")  # noqa: TRY004 (one error for every unusable key)
    return key


def ecdsa_valid(key_text: str, signature_b64: str, timestamp: str, body: bytes) -> bool:
    """Whether `signature_b64` is the key's ECDSA-SHA256 signature of `timestamp` followed by `body`."""
    try:
        key = public_key(key_text)
        signature = base64.b64decode(signature_b64, validate=True)
        key.verify(signature, timestamp.encode() + body, ec.ECDSA(hashes.SHA256()))
    except (ValueError, binascii.Error, InvalidSignature):
        return False
    return True


def canonical(item: msgspec.Raw) -> bytes:
    """An event as it is stored, and hashed when it has no id: its JSON with sorted keys, so that the provider's
    retry of it hashes the same however it is written."""
    return json.dumps(msgspec.json.decode(item), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@post(
    [PATH, LEGACY_PATH],
    opt=NO_AUTHENTICATION,
    include_in_schema=False,
    request_max_body_size=MAX_BODY_BYTES,
    status_code=200,
)
async def email_provider_events(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, Any]]:
    body = await request.body()
    token = request.query_params.get("token", "").strip()
    if not token:
        raise refused(404, "The URL carries no channel token (?token=...)")
    channel = await inbound.route("token", token)
    expected = channel.secrets.get("token")
    if not expected or not equal(token, expected):
        raise refused(401, "The token is not this channel's")
    key = channel.secrets.get("public_key")
    if key:
        timestamp = request.headers.get(TIMESTAMP, "").strip()
        if not fresh(timestamp):
            raise refused(401, f"{TIMESTAMP} is missing or not within 300 seconds of now (a replay?)")
        given = request.headers.get(SIGNATURE, "").strip()
        if len(body) > _OFF_LOOP_BYTES:
            valid = await run_blocking(lambda: ecdsa_valid(key, given, timestamp, body))
        else:
            valid = ecdsa_valid(key, given, timestamp, body)
        if not valid:
            raise refused(401, f"{SIGNATURE} is not the channel's key's ECDSA signature of the timestamp and body")
    items = decoded(DELIVERY_EVENTS, body)
    if len(items) > MAX_EVENTS:
        raise refused(413, f"At most {MAX_EVENTS} events a call")
    events = [decoded(DELIVERY_EVENT, item, f"Event {index}") for index, item in enumerate(items)]
    path = request.url.path

    async def store(event: DeliveryEvent, raw: bytes) -> bool:
        return await inbound.accept(
            channel,
            PROVIDER,
            dedup_key=event.sg_event_id or "sha256:" + hashlib.sha256(raw).hexdigest(),
            body=raw,
            content_type="application/json",
            partition_key=f"{channel.channel_id}:{event.email.strip().lower()}",
            details={"event": event.event, "path": path},
        )

    stored = await asyncio.gather(*(store(event, canonical(item)) for event, item in zip(events, items, strict=True)))
    accepted = sum(stored)
    status = "accepted" if accepted else "duplicate"
    return Response({"status": status, "accepted": accepted, "duplicates": len(stored) - accepted}, status_code=200)


ROUTES = [email_provider_events]
