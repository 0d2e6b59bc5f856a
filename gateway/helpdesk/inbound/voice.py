"""`POST /api/webhooks/voice`: a voice provider's call and SMS events (Dialpad's shape, section 4.6).

`x-voice-signature` is the hex HMAC-SHA256 of the raw body keyed by the channel's generated `webhook_secret`; it signs
no timestamp, so there is no replay window: a replayed event is a duplicate of its key and stores nothing new.

- A **call event** (`call_id`, `state`, `direction`, `target` and `contact` with `phone_number` and `name`,
  `started_at`, `answered_at`, `duration`; a voicemail's `voicemail_link` and `transcription_text`) routes by
  `target.phone_number`, the channel's number (address kind `voice_number`), and is de-duplicated by call id and
  state. One call's events are processed in order.
- An **SMS event** (`event_type: sms`, `direction`, `from_number`, `to_number`, `text`, `timestamp`) routes by the
  channel's own number: `to_number` (a number or a list of them) for an inbound message, `from_number` for an outbound
  one; it is de-duplicated by its `id` when it has one, else by the SHA-256 of the body."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, decoded, equal, refused
from storage.helpdesk import channels
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import VOICE_EVENT, VoiceEvent

PATH = "/api/webhooks/voice"
JSON = "application/json"
MAX_BODY_BYTES = 1024 * 1024


def voice_signed(body: bytes, secret: str, signature: str) -> bool:
    if not secret or not signature:
        return False
    return equal(signature.strip().lower(), hmac.new(secret.encode(), body, hashlib.sha256).hexdigest())


async def _route_sms(inbound: Inbound, event: VoiceEvent) -> tuple[Routed, str, str]:
    """The channel, its number and the customer's number of an SMS event."""
    outbound = (event.direction or "").lower() == "outbound"
    ours, theirs = (event.senders, event.recipients) if outbound else (event.recipients, event.senders)
    if not ours or not theirs:
        raise refused(400, "The SMS event needs a from_number and a to_number")
    for number in ours:
        routed = await inbound.db.read(channels.route, inbound.cipher, "voice_number", number)
        if routed is not None:
            return routed, number, theirs[0]
    raise refused(404, f"No channel receives for voice_number {', '.join(ours)}")


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def voice(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[dict[str, str]]:
    body = await request.body()
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != JSON:
        raise refused(415, f"Content-Type {media_type or '(none)'} is not {JSON}")
    event = decoded(VOICE_EVENT, body)
    sms = (event.event_type or "").lower() == "sms"
    if sms:
        channel, number, customer = await _route_sms(inbound, event)
    else:
        number = (event.target.phone_number or "").strip() if event.target else ""
        if not number:
            raise refused(400, "The call event names no target.phone_number")
        channel = await inbound.route("voice_number", number)
    if not voice_signed(body, channel.secrets.get("webhook_secret", ""), request.headers.get("x-voice-signature", "")):
        raise refused(401, "x-voice-signature is not the HMAC-SHA256 of the body with this channel's webhook secret")
    if sms:
        key = "" if event.id is None else str(event.id).strip()
        dedup_key = f"sms:{key}" if key else f"sms:sha256:{hashlib.sha256(body).hexdigest()}"
        partition_key = f"{channel.organization_id}:sms:{customer}"
        details = {"kind": "sms", "to": number}
    else:
        call_id, state = "" if event.call_id is None else str(event.call_id).strip(), (event.state or "").strip()
        if not call_id or not state:
            raise refused(400, "The call event has no call_id or no state")
        dedup_key = f"call:{call_id}:{state}"
        partition_key = f"{channel.organization_id}:call:{call_id}"
        details = {"kind": "call", "to": number}
    stored = await inbound.accept(
        channel,
        "voice",
        dedup_key=dedup_key,
        body=body,
        content_type=JSON,
        partition_key=partition_key,
        details=details,
    )
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


ROUTES = [voice]
