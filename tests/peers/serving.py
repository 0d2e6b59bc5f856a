"""A peer's ASGI app served by uvicorn on a real local socket, from a daemon thread with its own event loop, so that
it keeps answering whatever the test's event loop is doing.

Usage::

    server = LocalServer(app, "sms-peer").start()      # or LocalServer(app, name, certfile=path) for HTTPS
    server.port
    server.stop()
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any, Self

import uvicorn

__all__ = ["JsonPeer", "LocalServer", "ServedPeer", "read_request"]


class LocalServer:
    def __init__(self, app: Any, name: str, *, certfile: str | None = None) -> None:
        self.app = app
        self.name = name
        self.certfile = certfile
        self.port = 0
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            ssl_certfile=self.certfile,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.005)
        return self

    def _serve(self) -> None:
        assert self._server is not None
        assert self._socket is not None
        loop = asyncio.new_event_loop()
        loop.run_until_complete(self._server.serve(sockets=[self._socket]))
        loop.close()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()


async def read_request(scope: dict[str, Any], receive: Any) -> tuple[bytes, dict[str, str]]:
    """An HTTP request's whole body, and its headers by lower-case name."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    return body, {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


class ServedPeer:
    """A provider's HTTP API as an ASGI app (`_app`) on a LocalServer: `with Peer(...) as peer:` serves it at
    `peer.base_url` (`http://127.0.0.1:<port>`, once started)."""

    name = "peer"
    base_url = ""
    _server: LocalServer | None = None

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self._server = LocalServer(self._app, self.name).start()
        self.base_url = f"http://127.0.0.1:{self._server.port}"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class JsonPeer:
    """A provider's JSON API on a LocalServer: a subclass answers each request in `answer(scope, body)` with its
    status and JSON body (and, third, any further headers); `with Peer(...) as peer:` serves it, `peer.port` is
    where."""

    name = "peer"
    content_type = b"application/json"

    def __init__(self) -> None:
        self._server = LocalServer(self._app, self.name)
        self.port = 0

    def answer(self, scope: dict[str, Any], body: bytes) -> tuple[Any, ...]:
        raise NotImplementedError

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body, _ = await read_request(scope, receive)
        status, answer, *more = self.answer(scope, body)
        headers = more[0] if more else []
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", self.content_type), *headers],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    def start(self) -> Self:
        self._server.start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
