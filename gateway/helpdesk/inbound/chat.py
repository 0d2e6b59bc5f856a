"""`POST /api/webhooks/chat`: a team chat's events, in the shape of Slack's Events API (section 4.6 shows no format:
this one is documented in docs/helpdesk.md, "Team chat").

- **Routing.** By the team: the body's `team_id` (every event callback carries it), else the `team` query parameter
  (a `url_verification` carries no team: register the URL as `/api/webhooks/chat?team=<team id>`). The chat
  channel with that `team` address receives it.
- **Signature.** `x-chat-signature: v0=<hex HMAC-SHA256 of "v0:{timestamp}:{raw body}">` keyed by the channel's
  `signing_secret`, with `x-chat-request-timestamp` (UNIX seconds) within 300 s of now (older: a replay, 401).
- **Answers.** A `url_verification` is answered `{"challenge": <its challenge>}` and stores nothing. An
  `event_callback` is stored under its `event_id` (a retry, `x-chat-retry-num`, has the same) and answered 200.
- **Ordering.** One chat thread's events (the thread's `thread_ts`, else the message's own `ts`) share a partition."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, decoded, equal, fresh, refused
from topics.helpdesk.inbound import CHAT, CHAT_TEAM, ChatVerification, Provider

PATH = "/api/webhooks/chat"
PROVIDER: Provider = "chat"
SIGNATURE = "x-chat-signature"
TIMESTAMP = "x-chat-request-timestamp"
MAX_BODY_BYTES = 1024 * 1024


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `x-chat-signature` of `body` sent at `timestamp`."""
    signed = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _team(body: bytes, query: str | None) -> str:
    """The team that routes the call: the body's `team_id`, read here for routing alone (nothing else of the body is
    read until its signature has been checked), else the query's."""
    try:
        team = CHAT_TEAM.decode(body).team_id
    except msgspec.DecodeError:
        team = None
    return (team or "").strip() or (query or "").strip()


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def chat_events(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[dict[str, Any]]:
    body = await request.body()
    team = _team(body, request.query_params.get("team"))
    if not team:
        raise refused(400, "The call names no team: a `team_id` in the body, or `?team=` in the URL")
    channel = await inbound.route("team", team)
    timestamp = request.headers.get(TIMESTAMP, "").strip()
    if not fresh(timestamp):
        raise refused(401, f"{TIMESTAMP} is missing or not within 300 seconds of now (a replay?)")
    secret = channel.secrets.get("signing_secret")
    given = request.headers.get(SIGNATURE, "").strip()
    if not secret or not given or not equal(given, signature(secret, timestamp, body)):
        raise refused(401, f"{SIGNATURE} is not v0= the HMAC-SHA256 of v0:timestamp:body under the signing secret")
    payload = decoded(CHAT, body)
    if isinstance(payload, ChatVerification):
        return Response({"challenge": payload.challenge}, status_code=200)
    event = payload.event
    stored = await inbound.accept(
        channel,
        PROVIDER,
        dedup_key=payload.event_id,
        body=body,
        content_type="application/json",
        partition_key=f"{channel.channel_id}:{event.channel or ''}:{event.thread_ts or event.ts or payload.event_id}",
        details={"team": team, "event_type": event.type, "retry_num": request.headers.get("x-chat-retry-num")},
    )
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


ROUTES = [chat_events]
