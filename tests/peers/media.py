"""The inbound providers' media, served as each provider serves them, on a real local socket, for tests of the inbound
processors' fetches (`processors/helpdesk/inbound/media.py`):

* the SMS provider (Twilio): `GET /2010-04-01/Accounts/{AccountSid}/Messages/{MessageSid}/Media/{MediaSid}` with the
  account's sid and auth token as basic auth answers `307` to the medium on its CDN (`http://localhost:PORT/cdn/...`:
  another host name than the API's `127.0.0.1`, as the real CDN is another host), which serves it with no
  credentials; wrong credentials: `401` and Twilio's error body (code 20003); an unknown medium `404` (code 20404);
* the Graph API (business messaging): `GET /v21.0/{media-id}` with `Authorization: Bearer <access token>` answers
  `{"messaging_product", "url", "mime_type", "sha256", "file_size", "id"}`, and the `url` (`/whatsapp/media?mid=...`)
  answers the bytes to the same bearer token; a wrong token: `401` and Graph's OAuthException body (code 190); an
  unknown media id: `400`, GraphMethodException (code 100, subcode 33);
* a page messaging CDN (`/cdn/page/{name}`) and a voice provider's recordings (`/voicemail/{name}`): no credentials;
* the team chat's files (`/files-pri/{team}-{file}/{name}`, `url_private`) with `Authorization: Bearer <bot token>`;
  without a valid token the chat redirects to its sign-in page (`302` to `/signin`, an HTML page), as Slack does.

A test puts media at paths (`sms_medium`, `graph_medium`, `public`, `chat_file`), and may make a path answer a few
statuses first (`fail(url, 500, 500)`), send its body in chunks with no Content-Length (`chunked`: a size the client
learns only by reading), or never answer (`stall`). `asked(url)` lists the Authorization header each request of a
path carried (None: none).

Usage::

    with MediaPeer(account_sid="AC...", auth_token="...", access_token="...", bot_token="xoxb-...").serving() as media:
        url = media.sms_medium(b"\\xff\\xd8 a photo", "image/jpeg")
        ...
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self

from tests.peers.serving import LocalServer

__all__ = ["MediaPeer"]

GRAPH_VERSION = "v21.0"
CHUNK = 64 * 1024


@dataclass
class _File:
    data: bytes
    content_type: str
    credentials: str | None
    """The Authorization header it is served to (None: anyone)."""
    chunked: bool = False
    stall: bool = False


class MediaPeer:
    def __init__(
        self, *, account_sid: str, auth_token: str, access_token: str = "", bot_token: str = "", team: str = "T0MEDIA"
    ) -> None:
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.access_token = access_token
        self.bot_token = bot_token
        self.team = team
        self.requests: list[tuple[str, str | None]] = []
        self._files: dict[str, _File] = {}
        self._graph: dict[str, tuple[str, int]] = {}
        """media id -> (its download path, its size as the lookup declares it)."""
        self._failures: dict[str, list[int]] = {}
        self._redirects: dict[str, str] = {}
        """An MMS medium's path -> the CDN path it redirects to."""
        self._lock = threading.Lock()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def graph_api_url(self) -> str:
        return f"{self.base_url}/{GRAPH_VERSION}"

    # ------------------------------------------------------------------------------------------------ media

    def sms_medium(self, data: bytes, content_type: str) -> str:
        """An MMS's medium: its `MediaUrlN` (the CDN path it redirects to serves the bytes to anyone)."""
        message, medium = "MM" + uuid.uuid4().hex, "ME" + uuid.uuid4().hex
        cdn = f"/cdn/{uuid.uuid4().hex}"
        self._put(cdn, _File(data, content_type, None))
        path = f"/2010-04-01/Accounts/{self.account_sid}/Messages/{message}/Media/{medium}"
        self._put(path, _File(b"", content_type, _basic(self.account_sid, self.auth_token)))
        with self._lock:
            self._redirects[path] = cdn
        return self.base_url + path

    def cdn_of(self, url: str) -> str:
        """The CDN path an MMS medium's URL redirects to."""
        with self._lock:
            return self._redirects[url.removeprefix(self.base_url)]

    def graph_medium(self, data: bytes, content_type: str, *, declared_size: int | None = None) -> str:
        """A business messaging medium: its media id (the lookup declares `declared_size`, else the true size)."""
        media_id = str(uuid.uuid4().int)[:16]
        path = f"/whatsapp/media?mid={media_id}"
        self._put(path, _File(data, content_type, f"Bearer {self.access_token}"))
        with self._lock:
            self._graph[media_id] = (path, len(data) if declared_size is None else declared_size)
        return media_id

    def public(self, path: str, data: bytes, content_type: str, *, chunked: bool = False, stall: bool = False) -> str:
        """A file anyone may fetch (a page CDN's attachment, a voicemail recording): its URL."""
        self._put(path, _File(data, content_type, None, chunked=chunked, stall=stall))
        return self.base_url + path

    def chat_file(self, name: str, data: bytes, content_type: str) -> str:
        """A chat message's file: its `url_private`."""
        path = f"/files-pri/{self.team}-F{uuid.uuid4().hex[:10].upper()}/{name}"
        self._put(path, _File(data, content_type, f"Bearer {self.bot_token}"))
        return self.base_url + path

    def fail(self, url_or_path: str, *statuses: int) -> None:
        """The path's next answers are these statuses, one each, before it serves its file again."""
        path = url_or_path.removeprefix(self.base_url)
        with self._lock:
            self._failures.setdefault(path, []).extend(statuses)

    def asked(self, url_or_path: str) -> list[str | None]:
        """The Authorization header of each request of the path (None: none was sent)."""
        path = url_or_path.removeprefix(self.base_url)
        return [credentials for asked, credentials in self.requests if asked == path]

    def _put(self, path: str, file: _File) -> None:
        with self._lock:
            self._files[path] = file

    # ------------------------------------------------------------------------------------------------ serving

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path = scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        credentials = dict(scope["headers"]).get(b"authorization")
        given = credentials.decode() if credentials is not None else None
        with self._lock:
            self.requests.append((path, given))
            failures = self._failures.get(path)
            failing = failures.pop(0) if failures else None
            file = self._files.get(path)
            cdn = self._redirects.get(path)
        if failing is not None:
            await _answer(send, failing, b"upstream failure", "text/plain")
            return
        if scope["path"].startswith(f"/{GRAPH_VERSION}/"):
            await self._lookup(send, scope["path"].removeprefix(f"/{GRAPH_VERSION}/"), given)
        elif scope["path"] == "/signin":
            await _answer(send, 200, b"<!DOCTYPE html><title>Sign in</title>", "text/html; charset=utf-8")
        elif file is None:
            await self._unknown(send, scope["path"])
        elif file.credentials is not None and given != file.credentials:
            await self._unauthorized(send, scope["path"])
        elif cdn is not None:
            await _answer(send, 307, b"", "text/plain", [(b"location", f"http://localhost:{self.port}{cdn}".encode())])
        elif file.stall:
            while (await receive())["type"] != "http.disconnect":
                pass
        else:
            await _serve(send, file)

    async def _lookup(self, send: Any, media_id: str, given: str | None) -> None:
        if given != f"Bearer {self.access_token}":
            error = {"message": "Invalid OAuth access token - Cannot parse access token", "type": "OAuthException"}
            body = {"error": error | {"code": 190, "fbtrace_id": "A" + uuid.uuid4().hex[:22]}}
            await _answer(send, 401, json.dumps(body).encode(), "application/json")
            return
        with self._lock:
            found = self._graph.get(media_id)
            file = self._files.get(found[0]) if found else None
        if found is None or file is None:
            message = (
                f"Unsupported get request. Object with ID '{media_id}' does not exist, cannot be loaded due to missing "
                "permissions, or does not support this operation."
            )
            missing: dict[str, Any] = {
                "message": message,
                "type": "GraphMethodException",
                "code": 100,
                "error_subcode": 33,
            }
            await _answer(send, 400, json.dumps({"error": missing}).encode(), "application/json")
            return
        path, size = found
        answer = {
            "messaging_product": "whatsapp",
            "url": self.base_url + path,
            "mime_type": file.content_type,
            "sha256": hashlib.sha256(file.data).hexdigest(),
            "file_size": size,
            "id": media_id,
        }
        await _answer(send, 200, json.dumps(answer).encode(), "application/json")

    async def _unknown(self, send: Any, path: str) -> None:
        if path.startswith("/2010-04-01/"):
            await _answer(
                send, 404, _twilio_error(20404, "The requested resource was not found", 404), "application/json"
            )
        else:
            await _answer(send, 404, b"Not Found", "text/plain")

    async def _unauthorized(self, send: Any, path: str) -> None:
        if path.startswith("/2010-04-01/"):
            await _answer(send, 401, _twilio_error(20003, "Authenticate", 401), "application/json")
        elif path.startswith("/files-pri/"):
            await _answer(send, 302, b"", "text/plain", [(b"location", b"/signin")])
        else:
            await _answer(send, 401, b'{"error": {"message": "Unauthorized"}}', "application/json")

    @contextmanager
    def serving(self) -> Iterator[Self]:
        """The peer, answering on its port until the block ends."""
        server = LocalServer(self._app, "media peer").start()
        self.port = server.port
        try:
            yield self
        finally:
            server.stop()


async def _answer(
    send: Any, status: int, body: bytes, content_type: str, more: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()), *(more or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _serve(send: Any, file: _File) -> None:
    """The file's bytes; a `chunked` one in chunks, with no Content-Length."""
    if not file.chunked:
        await _answer(send, 200, file.data, file.content_type)
        return
    headers = [(b"content-type", file.content_type.encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for start in range(0, len(file.data), CHUNK):
        await send({"type": "http.response.body", "body": file.data[start : start + CHUNK], "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _twilio_error(code: int, message: str, status: int) -> bytes:
    body = {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }
    return json.dumps(body).encode()
