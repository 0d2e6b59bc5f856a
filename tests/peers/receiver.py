"""A customer's webhook receiver on a real local HTTPS socket (certificate from a test CA made by `trustme`), or plain
HTTP with `tls=False`, for tests of the delivery engine.

Usage::

    with WebhookReceiver() as receiver:                  # serves https://localhost:PORT and https://hooks.example.test
        path = receiver.new_path(secret="whsec_...")     # verify deliveries to this path with this secret
        other = receiver.new_path(secret="s3cret", verify=verify_helpdesk)  # ... as a helpdesk receiver checks them
        receiver.respond(path, 500, times=2)             # two 500s, then 200
        client CA: receiver.ca_bundle
        ...
        [request] = receiver.received(path)
        assert request.verified

The server runs uvicorn in a daemon thread with its own event loop, so it keeps answering whatever the test's event
loop is doing. Every request is recorded on arrival (before any hold or delay), in order. Deliveries to a path with
a secret are checked as that path's receiver does: photo's exactly as the receiver example of docs/photo.md
(`verify_delivery`, against the receiver's own clock, which a test may set to its fake clock), the helpdesk's as its
contract says (`verify_helpdesk`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import trustme
import uvicorn

__all__ = ["Received", "Verify", "WebhookReceiver", "verify_delivery", "verify_helpdesk", "verify_photo"]

HOSTNAMES = ("localhost", "hooks.example.test")
"""The names the receiver's certificate is valid for (not its IP addresses: TLS must be checked on a host name)."""


# The receiver example of docs/photo.md, verbatim: keep the two the same.
def verify_delivery(secret: str, body: bytes, signature: str, timestamp: str, now: float) -> bool:
    """True when `body` (the raw request body, before any JSON parsing) was signed with `secret` and sent within the
    last 5 minutes; `signature` and `timestamp` are the X-Verify-Signature and X-Verify-Timestamp headers."""
    try:
        sent_at = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent_at) > 300:  # a replay of an old delivery, or a clock far off
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


Verify = Callable[[str, bytes, dict[str, str], float], bool]
"""(secret, raw body, lower-cased headers, the receiver's clock) -> whether the delivery is authentic."""


def verify_photo(secret: str, body: bytes, headers: dict[str, str], now: float) -> bool:
    """A photo receiver: docs/photo.md's check on `X-Verify-Signature` and `X-Verify-Timestamp`."""
    return verify_delivery(
        secret, body, headers.get("x-verify-signature", ""), headers.get("x-verify-timestamp", ""), now
    )


def verify_helpdesk(secret: str, body: bytes, headers: dict[str, str], now: float) -> bool:
    """A helpdesk receiver: `x-helpdesk-signature` is the lowercase hex HMAC-SHA256 of the raw body keyed by the
    secret (there is no timestamp to check)."""
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("x-helpdesk-signature", ""))


@dataclass(frozen=True)
class Received:
    """One request as the receiver saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes
    verified: bool | None
    """The path's check passed (None: no secret was given for the path)."""

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def host(self) -> str:
        return self.headers.get("host", "")


@dataclass
class _Answer:
    status: int
    body: bytes
    delay_s: float = 0.0


@dataclass
class _Path:
    secret: str | None = None
    verify: Verify = verify_photo
    queued: deque[_Answer] = field(default_factory=deque)
    always: _Answer | None = None
    held: asyncio.Event | None = None


class WebhookReceiver:
    """Program per path: `respond(path, status, body, times=None)`, `delay(path, seconds)`, `hold(path)` /
    `release(path)` (requests wait until released). Unprogrammed paths answer 200 `ok`."""

    def __init__(
        self, *, hostnames: tuple[str, ...] = HOSTNAMES, clock: Callable[[], float] = time.time, tls: bool = True
    ) -> None:
        self.tls = tls
        """False: plain HTTP (`http://` URLs) on the socket instead of TLS."""
        self.ca = trustme.CA()
        self.hostnames = hostnames
        self.clock = clock
        """Seconds since the epoch, as the receiver's clock; the freshness check uses it."""
        self._dir = tempfile.TemporaryDirectory(prefix="webhook-receiver-")
        self.ca_bundle = Path(self._dir.name) / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_bundle))
        self._lock = threading.Lock()
        self._paths: dict[str, _Path] = {}
        self._received: list[Received] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port = 0

    # ------------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        served = Path(self._dir.name) / "server.pem"
        self.ca.issue_cert(*self.hostnames).private_key_and_cert_chain_pem.write_to_path(str(served))
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            ssl_certfile=str(served) if self.tls else None,
            timeout_keep_alive=30,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="webhook-receiver", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the webhook receiver did not start")
            time.sleep(0.005)
        return self

    def _serve(self) -> None:
        assert self._server is not None
        assert self._socket is not None
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._server.serve(sockets=[self._socket]))
        self._loop.close()

    def stop(self) -> None:
        with self._lock:
            for programme in self._paths.values():
                self._open(programme)
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._dir.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---------------------------------------------------------------------------------------------- programming

    def url(self, path: str, host: str = "localhost") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def new_path(self, *, secret: str | None = None, verify: Verify = verify_photo) -> str:
        """A path of the test's own; deliveries to it are checked by `verify` with `secret` when one is given."""
        path = f"/hooks/{uuid.uuid4().hex}"
        self.expect_secret(path, secret, verify)
        return path

    def expect_secret(self, path: str, secret: str | None, verify: Verify = verify_photo) -> None:
        programme = self._programme(path)
        with self._lock:
            programme.secret, programme.verify = secret, verify

    def respond(self, path: str, status: int, body: bytes | str = b"", *, times: int | None = None) -> None:
        """Answer `status` the next `times` requests (None: from now on, every request)."""
        answer = _Answer(status, body.encode() if isinstance(body, str) else body)
        programme = self._programme(path)
        with self._lock:
            if times is None:
                programme.always, programme.queued = answer, deque()
            else:
                programme.queued.extend(answer for _ in range(times))

    def delay(self, path: str, seconds: float) -> None:
        """Every request waits `seconds` before its answer."""
        programme = self._programme(path)
        with self._lock:
            programme.always = _Answer(200, b"ok", seconds)

    def hold(self, path: str) -> None:
        """Requests are recorded but not answered until `release(path)`."""
        programme = self._programme(path)
        with self._lock:
            programme.held = asyncio.Event()

    def release(self, path: str) -> None:
        with self._lock:
            self._open(self._programme_locked(path))

    def _open(self, programme: _Path) -> None:
        if programme.held is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(programme.held.set)

    def _programme(self, path: str) -> _Path:
        with self._lock:
            return self._programme_locked(path)

    def _programme_locked(self, path: str) -> _Path:
        return self._paths.setdefault(path, _Path())

    # ----------------------------------------------------------------------------------------------- inspection

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [request for request in self._received if path is None or request.path == path]

    async def wait_for(self, path: str, count: int, timeout_s: float = 15) -> list[Received]:
        """The requests to `path` once there are at least `count` (fails after `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while len(requests := self.received(path)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} received {len(requests)} requests, expected {count}")
            await asyncio.sleep(0.01)
        return requests

    # ---------------------------------------------------------------------------------------------------- app

    async def _app(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        assert scope["type"] == "http"
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the sender went away before its body ended (a killed process): no request came
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        path = scope["path"]
        with self._lock:
            programme = self._programme_locked(path)
            verified = None
            if programme.secret is not None:
                verified = programme.verify(programme.secret, body, headers, self.clock())
            self._received.append(Received(scope["method"], path, headers, body, verified))
            answer = programme.queued.popleft() if programme.queued else programme.always or _Answer(200, b"ok")
            held = programme.held
        if held is not None:
            await held.wait()
        if answer.delay_s:
            await asyncio.sleep(answer.delay_s)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(answer.body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": answer.body})
