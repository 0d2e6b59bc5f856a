"""A fake Twilio Lookup v2 server on a real local socket, for tests of the carrier_lookup provider.

Usage::

    with TwilioLookupServer("AC_test", "secret") as server:
        server.answer("+14155550100", line_type="mobile", caller_name="SMITH JOHN")
        server.fail("+14155550101", status=503, times=2)   # two 503s, then the default answer
        provider = CarrierLookup(server.base_url, "AC_test", "secret")
        ...
        assert server.count("+14155550101") == 3

The server runs uvicorn in a daemon thread with its own event loop, so it keeps answering whatever the
test's event loop is doing. It serves ``GET /v2/PhoneNumbers/{number}`` only:

* requests without the configured basic auth get 401 and Twilio's error body (code 20003);
* numbers never programmed get 404 and Twilio's error body (code 20404);
* programmed numbers get what the test asked for (see `answer`, `fail`, `hang`, `garbage`, `raw`,
  `not_found`); the ``Fields`` query is honoured: packages not asked for come back as null.

Every request is recorded in `requests` (auth checked or not), in arrival order. `reset()` forgets
programmes and records, so one server can be shared by many tests.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import parse_qs

import uvicorn

__all__ = ["RecordedRequest", "TwilioLookupServer"]

_PREFIX = "/v2/PhoneNumbers/"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake server saw it."""

    method: str
    path: str
    """Percent-decoded path, e.g. ``/v2/PhoneNumbers/+14155550100``."""
    raw_path: str
    """The path as sent on the wire, e.g. ``/v2/PhoneNumbers/%2B14155550100``."""
    query: dict[str, list[str]]
    """Parsed query string, e.g. ``{"Fields": ["line_type_intelligence,caller_name"]}``."""
    number: str | None
    """The phone number from the path (decoded), or None for other paths."""
    auth_present: bool
    """Whether an Authorization header was sent at all."""
    authorized: bool
    """Whether it carried the configured SID and token as HTTP basic auth."""

    @property
    def fields(self) -> set[str]:
        """The Lookup packages asked for in ``Fields``."""
        return {f for value in self.query.get("Fields", []) for f in value.split(",") if f}


@dataclass
class _Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0


@dataclass
class _Programme:
    final: _Response | dict[str, Any] | None = None
    """What the number answers once `transient` is used up: a lookup body (dict), a fixed response, or
    None for `answer()`'s defaults."""
    transient: deque[_Response] = field(default_factory=deque)
    always: _Response | None = None
    """When set, answered on every request before anything else (fail/hang with times=None)."""


def _error_body(status: int, code: int, message: str) -> bytes:
    return json.dumps(
        {"code": code, "message": message, "more_info": f"https://www.twilio.com/docs/errors/{code}", "status": status}
    ).encode()


def _national(e164: str) -> str:
    digits = e164[2:]
    if e164.startswith("+1") and len(digits) == 10 and digits.isdigit():
        return f"({digits[:3]}) {digits[3:6]}-{digits[6:]}"
    return e164


def _lookup_body(
    e164: str,
    *,
    line_type: str | None = "mobile",
    carrier: str | None = "Verizon Wireless",
    caller_name: str | None = "SMITH JOHN",
    caller_type: str | None = "CONSUMER",
    valid: bool = True,
    mobile_country_code: str | None = None,
    mobile_network_code: str | None = None,
    line_type_error_code: int | None = None,
    caller_name_error_code: int | None = None,
) -> dict[str, Any]:
    """A Lookup v2 body as Twilio sends it with Fields=line_type_intelligence,caller_name."""
    return {
        "calling_country_code": "1",
        "country_code": "US",
        "phone_number": e164,
        "national_format": _national(e164),
        "valid": valid,
        "validation_errors": [] if valid else ["INVALID_BUT_POSSIBLE"],
        "caller_name": {"caller_name": caller_name, "caller_type": caller_type, "error_code": caller_name_error_code}
        if valid
        else None,
        "sim_swap": None,
        "call_forwarding": None,
        "line_status": None,
        "line_type_intelligence": {
            "mobile_country_code": mobile_country_code,
            "mobile_network_code": mobile_network_code,
            "carrier_name": carrier,
            "type": line_type,
            "error_code": line_type_error_code,
        }
        if valid
        else None,
        "identity_match": None,
        "reassigned_number": None,
        "sms_pumping_risk": None,
        "phone_number_quality_score": None,
        "pre_fill": None,
        "url": f"https://lookups.twilio.com/v2/PhoneNumbers/{e164}",
    }


class TwilioLookupServer:
    """A fake ``lookups.twilio.com`` on 127.0.0.1 and a free port; use as a context manager.

    Program per E.164 number (each call replaces what the number finally answers, or queues failures):

    * `answer(e164, line_type=..., carrier=..., caller_name=..., caller_type=..., valid=..., ...)`
    * `fail(e164, status=503, times=1, retry_after=None)`: error responses, then the final answer
    * `hang(e164, seconds, times=None)`: wait `seconds` before answering
    * `garbage(e164)`: 200 with a non-JSON body
    * `raw(e164, status, body)`: any status and body (dict/list is sent as JSON)
    * `not_found(e164)`: Twilio's 404

    Inspect with `requests`, `requests_for(e164)` and `count(e164)`; `reset()` clears everything.
    """

    def __init__(self, account_sid: str = "AC00000000000000000000000000000000", auth_token: str = "test-token"):
        self.account_sid = account_sid
        self.auth_token = auth_token
        self._expected_auth = "Basic " + base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()
        self._lock = threading.Lock()
        self._programmes: dict[str, _Programme] = {}
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.base_url = ""
        """``http://127.0.0.1:<port>``; pass it as CarrierLookup's base_url. Set once started."""

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self._socket = sock
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            interface="asgi3",
            lifespan="off",
            proxy_headers=False,
            log_level="warning",
            access_log=False,
            http="h11",
            loop="asyncio",
        )
        self._server = uvicorn.Server(config)
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-twilio-lookup", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("fake Twilio Lookup server did not start")
            time.sleep(0.005)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- programming

    def answer(
        self,
        e164: str,
        *,
        line_type: str | None = "mobile",
        carrier: str | None = "Verizon Wireless",
        caller_name: str | None = "SMITH JOHN",
        caller_type: str | None = "CONSUMER",
        valid: bool = True,
        mobile_country_code: str | None = None,
        mobile_network_code: str | None = None,
        line_type_error_code: int | None = None,
        caller_name_error_code: int | None = None,
    ) -> None:
        """Answer 200 with a Lookup v2 body built from these values (packages null when ``valid=False``)."""
        self._programme(e164).final = _lookup_body(
            e164,
            line_type=line_type,
            carrier=carrier,
            caller_name=caller_name,
            caller_type=caller_type,
            valid=valid,
            mobile_country_code=mobile_country_code,
            mobile_network_code=mobile_network_code,
            line_type_error_code=line_type_error_code,
            caller_name_error_code=caller_name_error_code,
        )

    def fail(self, e164: str, *, status: int = 503, times: int | None = 1, retry_after: float | None = None) -> None:
        """Answer `status` with Twilio's error body `times` times (None: forever), then the final answer.

        A number with no final answer yet gets `answer()`'s defaults. `retry_after` sets a Retry-After header.
        """
        headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
        code = 20429 if status == 429 else 20500
        message = "Too Many Requests" if status == 429 else "Service Unavailable"
        self._queue(e164, _Response(status, _error_body(status, code, message), headers=headers), times)

    def hang(self, e164: str, seconds: float, *, times: int | None = None) -> None:
        """Wait `seconds` before answering the final answer, `times` times (None: every request)."""
        self._queue(e164, _Response(0, b"", delay_s=seconds), times)

    def garbage(self, e164: str, body: bytes = b"<html><body>502 Bad Gateway</body></html>") -> None:
        """Answer 200 with a body that is not JSON."""
        self._programme(e164).final = _Response(200, body, content_type="text/html")

    def raw(self, e164: str, status: int, body: bytes | str | dict[str, Any] | list[Any]) -> None:
        """Answer exactly `status` and `body` (dicts and lists are sent as JSON)."""
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
        else:
            data = body.encode() if isinstance(body, str) else body
        self._programme(e164).final = _Response(status, data)

    def not_found(self, e164: str) -> None:
        """Answer Twilio's 404 (what it says for a number it cannot parse)."""
        self._programme(e164).final = self._not_found_response(e164)

    def reset(self) -> None:
        """Forget every programme and recorded request."""
        with self._lock:
            self._programmes.clear()
            self._requests.clear()

    def _programme(self, e164: str) -> _Programme:
        with self._lock:
            return self._programmes.setdefault(e164, _Programme())

    def _queue(self, e164: str, response: _Response, times: int | None) -> None:
        programme = self._programme(e164)
        if times is None:
            programme.always = response
        else:
            programme.transient.extend(response for _ in range(times))

    # ---------------------------------------------------------------- inspection

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, e164: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.number == e164]

    def count(self, e164: str | None = None) -> int:
        """How many requests arrived for `e164` (all requests when None)."""
        return len(self.requests if e164 is None else self.requests_for(e164))

    # ---------------------------------------------------------------- HTTP

    @staticmethod
    def _not_found_response(e164: str) -> _Response:
        message = f"The requested resource /PhoneNumbers/{e164} was not found"
        return _Response(404, _error_body(404, 20404, message))

    def _respond_for(self, number: str, fields: set[str]) -> _Response:
        with self._lock:
            programme = self._programmes.get(number)
            if programme is None:
                return self._not_found_response(number)
            if programme.always is not None:
                first = programme.always
            elif programme.transient:
                first = programme.transient.popleft()
            else:
                first = None
            final = programme.final
        if first is not None and first.status:
            return first
        if final is None or isinstance(final, dict):
            body = dict(final) if final is not None else _lookup_body(number)
            for package in ("caller_name", "line_type_intelligence"):
                if package not in fields:
                    body[package] = None
            response = _Response(200, json.dumps(body).encode())
        else:
            response = final
        if first is not None:  # a hang: same answer, later
            response = _Response(response.status, response.body, response.content_type, response.headers, first.delay_s)
        return response

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        auth = headers.get("authorization")
        path = scope["path"]
        number = path[len(_PREFIX) :] if path.startswith(_PREFIX) and len(path) > len(_PREFIX) else None
        recorded = RecordedRequest(
            method=scope["method"],
            path=path,
            raw_path=(scope.get("raw_path") or path.encode()).decode("latin-1"),
            query=parse_qs(scope["query_string"].decode("latin-1"), keep_blank_values=True),
            number=number,
            auth_present=auth is not None,
            authorized=auth == self._expected_auth,
        )
        with self._lock:
            self._requests.append(recorded)

        if not recorded.authorized:
            response = _Response(
                401,
                _error_body(401, 20003, "Authenticate"),
                headers=(("www-authenticate", 'Basic realm="Twilio API"'),),
            )
        elif number is None or "/" in number or recorded.method != "GET":
            response = _Response(404, _error_body(404, 20404, f"The requested resource {path} was not found"))
        else:
            response = self._respond_for(number, recorded.fields)

        if response.delay_s:
            deadline = time.monotonic() + response.delay_s
            while time.monotonic() < deadline and not self._stopping.is_set():
                await asyncio.sleep(0.01)
        await send(
            {
                "type": "http.response.start",
                "status": response.status,
                "headers": [(b"content-type", response.content_type.encode())]
                + [(k.encode(), v.encode()) for k, v in response.headers],
            }
        )
        await send({"type": "http.response.body", "body": response.body})
