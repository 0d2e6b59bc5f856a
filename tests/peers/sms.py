"""An SMS provider's Messages API in Twilio's shape, on a real local socket, for tests of the reply sender's SMS
(`processors/helpdesk/outbound.py`, `SmsSender`).

It serves `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, a form with `To`, `From`, `Body`,
`StatusCallback` (and `MediaUrl`s), with the account's sid and auth token as basic auth, as Twilio does:

* a wrong account or token: 401 and Twilio's error body (code 20003);
* a body past 1,600 characters: 400, code 21617; a number the test refused (`refuse`): 400 with its code;
* more than 10 `MediaUrl`s: 400, code 21623;
* otherwise 201 with the message resource (`sid` `SM` + 32 hex, `status` `queued`, `num_segments` counted as the
  provider does: 160 GSM-7 characters or 70 UCS-2 ones in one segment, 153 or 67 per segment of a longer one).

`report(sid, status)` then posts a status callback to the message's `StatusCallback` URL, signed with the auth token
as Twilio signs its calls (`x-twilio-signature`, the `twilio` package's RequestValidator), and returns the answer's
status code.

Usage::

    with SmsPeer("AC...", "token") as sms:
        sms.refuse("+15550000000", code=21211, message="The 'To' number is not a valid phone number.")
        ...                                   # the reply sender sends through sms.base_url
        sms.messages                          # [{"To", "From", "Body", "StatusCallback", "sid", ...}, ...]
        await sms.report(sms.messages[0]["sid"], "delivered")
"""

from __future__ import annotations

import base64
import math
import threading
import uuid
from typing import Any
from urllib.parse import parse_qsl

import httpx
from twilio.request_validator import RequestValidator

from net.guard import tls_context
from tests.peers.serving import JsonPeer

__all__ = ["SmsPeer"]

MAX_BODY = 1600
GSM_7 = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿"
    "abcdefghijklmnopqrstuvwxyzäöñüà^{}\\[~]|€"
)


def segments(body: str) -> int:
    """How many SMS segments the provider cuts a body into."""
    single, multi = (160, 153) if set(body) <= GSM_7 else (70, 67)
    return 1 if len(body) <= single else math.ceil(len(body) / multi)


class SmsPeer(JsonPeer):
    name = "SMS peer"

    def __init__(self, account_sid: str, auth_token: str) -> None:
        super().__init__()
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.messages: list[dict[str, Any]] = []
        self.refusals: dict[str, tuple[int, str]] = {}
        self.unavailable = 0
        """How many of the next sends get a 503, as an outage of the provider would."""
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def refuse(self, number: str, *, code: int, message: str) -> None:
        """Sends to `number` are refused with a 400 and this error code, as the provider refuses a bad number."""
        self.refusals[number] = (code, message)

    async def report(self, sid: str, status: str, *, error_code: str | None = None) -> int:
        """The provider's status callback of message `sid`, signed, posted to its StatusCallback: the answer's code."""
        sent = next(message for message in self.messages if message["sid"] == sid)
        params = {
            "AccountSid": self.account_sid,
            "MessageSid": sid,
            "SmsSid": sid,
            "MessageStatus": status,
            "SmsStatus": status,
            "From": sent["From"],
            "To": sent["To"],
            "ApiVersion": "2010-04-01",
        }
        if error_code:
            params["ErrorCode"] = error_code
        url = sent["StatusCallback"]
        signature = RequestValidator(self.auth_token).compute_signature(url, params)
        async with httpx.AsyncClient(verify=tls_context()) as client:
            answer = await client.post(url, data=params, headers={"x-twilio-signature": signature})
        return answer.status_code

    def answer(self, scope: dict[str, Any], body: bytes) -> tuple[int, dict[str, Any]]:
        path = f"/2010-04-01/Accounts/{self.account_sid}/Messages.json"
        headers = dict(scope["headers"])
        expected = base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
        if headers.get(b"authorization", b"").decode() != f"Basic {expected}":
            return 401, _error(20003, "Authenticate", 401)
        if scope["method"] != "POST" or scope["path"] != path:
            return 404, _error(20404, "The requested resource was not found", 404)
        pairs = parse_qsl(body.decode(), keep_blank_values=True)
        form: dict[str, Any] = dict(pairs) | {"MediaUrl": [value for name, value in pairs if name == "MediaUrl"]}
        text, to = form.get("Body", ""), form.get("To", "")
        with self._lock:
            if self.unavailable > 0:
                self.unavailable -= 1
                return 503, _error(20500, "Service unavailable", 503)
        if len(form["MediaUrl"]) > 10:
            return 400, _error(21623, "Number of media files exceeds allowed limit.", 400)
        if len(text) > MAX_BODY:
            return 400, _error(21617, "The concatenated message body exceeds the 1600 character limit.", 400)
        if to in self.refusals:
            code, message = self.refusals[to]
            return 400, _error(code, message, 400)
        sid = "SM" + uuid.uuid4().hex
        with self._lock:
            self.messages.append({**form, "sid": sid, "status": "queued", "num_segments": str(segments(text))})
        return 201, {
            "sid": sid,
            "account_sid": self.account_sid,
            "to": to,
            "from": form.get("From"),
            "body": text,
            "status": "queued",
            "num_segments": str(segments(text)),
            "num_media": str(len(form["MediaUrl"])),
            "direction": "outbound-api",
            "api_version": "2010-04-01",
            "error_code": None,
            "error_message": None,
            "uri": f"{path[:-5]}/{sid}.json",
        }


def _error(code: int, message: str, status: int) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }
