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
import json
from typing import Any

from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, equal, fresh, refused
from topics.helpdesk.inbound import Provider

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
    used until its signature has been checked), else the query's."""
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    team = payload.get("team_id") if isinstance(payload, dict) else None
    return team.strip() if isinstance(team, str) and team.strip() else (query or "").strip()


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
    try:
        payload = json.loads(body)
    except ValueError:
        raise refused(400, "The body is not JSON") from None
    if not isinstance(payload, dict):
        raise refused(400, "The body is not a JSON object")
    kind = payload.get("type")
    if kind == "url_verification":
        challenge = payload.get("challenge")
        if not isinstance(challenge, str) or not challenge:
            raise refused(400, "The url_verification carries no challenge")
        return Response({"challenge": challenge}, status_code=200)
    if kind != "event_callback":
        raise refused(400, f"type {kind!r} is neither url_verification nor event_callback")
    event = payload.get("event")
    event_id = payload.get("event_id")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise refused(400, "The event_callback carries no `event` with a `type`")
    if not isinstance(event_id, str) or not event_id:
        raise refused(400, "The event_callback carries no `event_id`")
    thread = event.get("thread_ts") or event.get("ts") or event_id
    stored = await inbound.accept(
        channel,
        PROVIDER,
        dedup_key=event_id,
        body=body,
        content_type="application/json",
        partition_key=f"{channel.channel_id}:{event.get('channel', '')}:{thread}",
        details={"team": team, "event_type": event["type"], "retry_num": request.headers.get("x-chat-retry-num")},
    )
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


ROUTES = [chat_events]
