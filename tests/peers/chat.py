"""The team chat's Web API method `chat.postMessage`, on a real local socket, for tests of the reply sender's chat
(`processors/helpdesk/outbound.py`, `ChatSender`).

It serves `POST /api/chat.postMessage` with `Authorization: Bearer <bot token>` and a JSON body (`channel`, `text`,
`thread_ts`), as Slack does:

* a wrong token: HTTP 200, `{"ok": false, "error": "invalid_auth"}`;
* a channel the test closed (`close_channel`): `{"ok": false, "error": "channel_not_found"}`;
* during an outage (`unavailable`): HTTP 429 with `Retry-After` and `{"ok": false, "error": "ratelimited"}`;
* otherwise `{"ok": true, "channel", "ts", "message": {"type": "message", "bot_id", "text", "thread_ts", "ts"}}`.

Usage::

    with ChatPeer("xoxb-...") as chat:
        ...                                     # the reply sender posts through chat.base_url
        chat.posted                             # [{"channel", "text", "thread_ts", "ts"}, ...]
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tests.peers.serving import JsonPeer

__all__ = ["ChatPeer"]

BOT_ID = "B0HELPDESK"


class ChatPeer(JsonPeer):
    name = "chat peer"
    content_type = b"application/json; charset=utf-8"

    def __init__(self, bot_token: str) -> None:
        super().__init__()
        self.bot_token = bot_token
        self.posted: list[dict[str, Any]] = []
        self.closed: set[str] = set()
        self.unavailable = 0
        """How many of the next posts are throttled (429), as the Web API throttles."""
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def close_channel(self, channel: str) -> None:
        """Posts to `channel` fail as they do to an archived or deleted channel."""
        self.closed.add(channel)

    def answer(self, scope: dict[str, Any], body: bytes) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        if scope["path"] != "/api/chat.postMessage" or scope["method"] != "POST":
            return 404, {"ok": False, "error": "unknown_method"}, []
        if dict(scope["headers"]).get(b"authorization", b"").decode() != f"Bearer {self.bot_token}":
            return 200, {"ok": False, "error": "invalid_auth"}, []
        with self._lock:
            if self.unavailable > 0:
                self.unavailable -= 1
                return 429, {"ok": False, "error": "ratelimited"}, [(b"retry-after", b"1")]
        try:
            sent = json.loads(body)
        except ValueError:
            return 200, {"ok": False, "error": "invalid_json"}, []
        channel, text = sent.get("channel"), sent.get("text")
        if not channel or not text:
            return 200, {"ok": False, "error": "no_text" if channel else "channel_not_found"}, []
        if channel in self.closed:
            return 200, {"ok": False, "error": "channel_not_found"}, []
        with self._lock:
            ts = f"{time.time():.6f}"
            posted = {"channel": channel, "text": text, "thread_ts": sent.get("thread_ts"), "ts": ts}
            self.posted.append(posted)
        message = {"type": "message", "bot_id": BOT_ID, "text": text, "thread_ts": sent.get("thread_ts"), "ts": ts}
        return 200, {"ok": True, "channel": channel, "ts": ts, "message": message}, []
