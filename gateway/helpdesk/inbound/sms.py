"""`POST /api/webhooks/sms`: an SMS provider's incoming message (Twilio's shape, section 4.6); and
`POST /api/webhooks/sms/status`, its reports on the replies we sent (docs/helpdesk.md, "Replies to customers").

The call is `application/x-www-form-urlencoded` with `From` (E.164), `To`, `Body`, `MessageSid`, `NumMedia`,
`MediaUrl0`, `MediaContentType0`, ... It routes by `To` to the SMS channel of that number (address kind
`sms_number`) and is verified by the provider's own scheme: `x-twilio-signature` is the base64 HMAC-SHA1, keyed by
the channel's `auth_token`, of the URL the provider called (the helpdesk's public URL and this path, with its query
string if any) followed by every POST parameter sorted by name, each name followed by its value (the `twilio`
package's RequestValidator computes it). The scheme signs no timestamp, so it has no replay window: a replayed call is
a duplicate of its MessageSid and stores nothing new. The answer is TwiML, `text/xml`: the channel's `auto_reply`
setting in a `<Message>` for a sender's first message after AUTO_REPLY_QUIET without one (so a machine that answers
our auto-reply does not loop with it, and a customer who texts three times is answered once), else an empty
`<Response/>`; once the message is stored (a retry gets the same answer)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlparse
from xml.sax.saxutils import escape

import msgspec
from litestar import Request, Response, post
from litestar.datastructures import MultiDict
from litestar.di import NamedDependency
from twilio.request_validator import RequestValidator, add_port, remove_port

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, equal, malformed, refused
from storage.helpdesk import inbound as inbound_events
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import sms_message, sms_status_of

PATH = "/api/webhooks/sms"
STATUS_PATH = "/api/webhooks/sms/status"
FORM = "application/x-www-form-urlencoded"
MAX_BODY_BYTES = 256 * 1024
"""An SMS call's form, at most (a message's text, its media URLs, the provider's own fields)."""
MAX_FIELDS = 1000
TWIML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>'
AUTO_REPLY_QUIET = timedelta(hours=1)
"""How long a sender must have sent nothing to the channel for its message to be answered with the auto-reply."""


def twiml(auto_reply: Any) -> str:
    """The answer: the auto-reply in a `<Message>`, or an empty `<Response/>` for no reply."""
    text = str(auto_reply).strip() if auto_reply else ""
    if not text:
        return f"{TWIML_HEAD}<Response/>"
    return f"{TWIML_HEAD}<Response><Message>{escape(text)}</Message></Response>"


def form(body: bytes) -> MultiDict[str]:
    """The call's POST parameters; 400 when the body is no URL-encoded UTF-8 form."""
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=bool(body),
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except ValueError:  # UnicodeDecodeError included
        raise refused(400, "The body is no application/x-www-form-urlencoded UTF-8 form") from None
    return MultiDict(pairs)


def signed(url: str, params: MultiDict[str], token: str, signature: str) -> bool:
    """Twilio's request validation, compared in constant time. The provider signs the URL as it was configured, with
    or without its default port (as RequestValidator.validate, both are tried)."""
    if not token or not signature:
        return False
    validator = RequestValidator(token)
    parsed = urlparse(url)
    return any(
        equal(signature, validator.compute_signature(candidate, params))
        for candidate in dict.fromkeys((remove_port(parsed), add_port(parsed)))
    )


def _called_url(request: Request[Any, Any, Any], inbound: Inbound, path: str = PATH) -> str:
    query = request.scope.get("query_string", b"").decode("latin-1")
    return f"{inbound.public_url}{path}" + (f"?{query}" if query else "")


async def _signed_form(
    request: Request[Any, Any, Any], inbound: Inbound, path: str, number_field: str
) -> tuple[bytes, MultiDict[str], Routed]:
    """The call's form and the SMS channel whose number its `number_field` names, once its signature is checked."""
    body = await request.body()
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != FORM:
        raise refused(415, f"Content-Type {media_type or '(none)'} is not {FORM}")
    params = form(body)
    number = params.get(number_field, "").strip()
    if not number:
        raise refused(400, f"The call names no {number_field} number")
    channel = await inbound.route("sms_number", number)
    signature = request.headers.get("x-twilio-signature", "")
    if not signed(_called_url(request, inbound, path), params, channel.secrets.get("auth_token", ""), signature):
        raise refused(401, "x-twilio-signature is not this channel's signature of the call")
    return body, params, channel


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def sms(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[str]:
    body, params, channel = await _signed_form(request, inbound, PATH, "To")
    to = params.get("To", "").strip()
    try:
        message = sms_message(params)
    except msgspec.ValidationError as error:
        raise malformed(error, "The form") from None
    sender = message.sender.strip()
    if not sender:
        raise refused(400, "The message names no From number")
    dedup_key = message.sid.strip()
    await inbound.accept(
        channel,
        "sms",
        dedup_key=dedup_key,
        body=body,
        content_type=FORM,
        partition_key=f"{channel.organization_id}:sms:{sender}",
        details={"to": to},
    )
    auto_reply = channel.settings.get("auto_reply")
    if auto_reply and not await inbound.db.read(
        inbound_events.after_quiet, channel.channel_id, dedup_key, AUTO_REPLY_QUIET
    ):
        auto_reply = None  # the sender's previous message came less than AUTO_REPLY_QUIET before this one
    return Response(twiml(auto_reply), media_type="text/xml", status_code=200)


@post(
    STATUS_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=204
)
async def sms_status(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> None:
    """The provider's report on a reply we sent (the `StatusCallback` the reply sender names), from the channel's
    number (`From`), signed as the incoming messages are; stored as an inbound event (`sms_status`) whose processing
    moves the reply's delivery state (storage/helpdesk/outbound.py, `report`)."""
    body, params, channel = await _signed_form(request, inbound, STATUS_PATH, "From")
    try:
        status = sms_status_of(params)
    except msgspec.ValidationError as error:
        raise malformed(error, "The form") from None
    if not status.sid or not status.status:
        raise refused(400, "The report names no MessageSid or no MessageStatus")
    await inbound.accept(
        channel,
        "sms_status",
        dedup_key=f"{status.sid}:{status.status}",
        body=body,
        content_type=FORM,
        partition_key=f"{channel.organization_id}:sms_status:{status.sid}",
    )


ROUTES = [sms, sms_status]
