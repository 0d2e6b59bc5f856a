"""The messaging provider's Graph API send endpoints, on a real local socket, for tests of the reply sender's business
and page messaging (`processors/helpdesk/outbound.py`, `BusinessSender` and `PageSender`).

It serves `POST /{id}/messages` with `Authorization: Bearer <token>`, as the Graph API does:

* business messaging (Cloud API), `id` a phone number id: JSON `{"messaging_product": "whatsapp", "to", "type":
  "text", "text": {"body"}}` -> 200 `{"messaging_product", "contacts": [{"input", "wa_id"}], "messages": [{"id":
  "wamid..."}]}`; a body past 4,096 characters -> 400, code 100;
* page messaging (Send API), `id` a page id: JSON `{"recipient": {"id"}, "messaging_type", "message": {"text"}}`
  (`messaging_type` `MESSAGE_TAG` with `tag`) -> 200 `{"recipient_id", "message_id": "m_..."}`; a text past 2,000
  characters -> 400, code 100; a tag without `MESSAGE_TAG` -> 400, code 100;
* a wrong token -> 401, code 190 (`OAuthException`); a recipient the test refused (`refuse`) -> 400 with its code;
  during an outage (`unavailable`) -> 500, code 2, `is_transient`.

Error bodies are the Graph API's: `{"error": {"message", "type", "code", "error_subcode"?, "fbtrace_id"}}`.

`business_status(...)` and `page_receipt(...)` make the provider's webhook payloads of what it later reports.

Usage::

    with GraphPeer("token") as graph:
        ...                                    # the reply sender sends through graph.base_url
        graph.messages                         # [{"id": "15550001111", "json": {...}, "sent_id": "wamid..."}, ...]
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from tests.peers.serving import JsonPeer

__all__ = ["GraphPeer", "business_status", "page_receipt"]

LIMITS = {"whatsapp": 4096, "page": 2000}


class GraphPeer(JsonPeer):
    name = "Graph peer"

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self.messages: list[dict[str, Any]] = []
        self.refusals: dict[str, tuple[int, str]] = {}
        self.unavailable = 0
        """How many of the next sends get a 500, as an outage of the provider would."""
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v21.0"

    def refuse(self, recipient: str, *, code: int, message: str) -> None:
        """Sends to `recipient` (a WhatsApp id or a page-scoped id) are refused with a 400 and this error code."""
        self.refusals[recipient] = (code, message)

    def answer(self, scope: dict[str, Any], body: bytes) -> tuple[int, dict[str, Any]]:
        headers = dict(scope["headers"])
        if headers.get(b"authorization", b"").decode() != f"Bearer {self.token}":
            return 401, _error(190, "Invalid OAuth access token - Cannot parse access token", "OAuthException")
        _, version, sender, edge = [*scope["path"].split("/"), "", "", ""][:4]
        if scope["method"] != "POST" or version != "v21.0" or not sender or edge != "messages":
            return 400, _error(100, f"Unknown path components: {scope['path']}")
        try:
            sent = json.loads(body)
        except ValueError:
            return 400, _error(100, "Invalid JSON for postback")
        with self._lock:
            if self.unavailable > 0:
                self.unavailable -= 1
                return 500, _error(2, "Service temporarily unavailable", transient=True)
        if sent.get("messaging_product") == "whatsapp":
            return self._business(sender, sent)
        return self._page(sender, sent)

    def _business(self, sender: str, sent: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        to, text = str(sent.get("to") or ""), (sent.get("text") or {}).get("body")
        if sent.get("type") != "text" or not isinstance(text, str) or not to:
            return 400, _error(100, "(#100) The parameter text['body'] is required.")
        if len(text) > LIMITS["whatsapp"]:
            return 400, _error(100, "(#100) Param text['body'] must be at most 4096 characters long.")
        if to in self.refusals:
            return 400, _error(*self.refusals[to])
        sent_id = "wamid.HBgL" + uuid.uuid4().hex.upper()
        with self._lock:
            self.messages.append({"id": sender, "json": sent, "sent_id": sent_id})
        return 200, {
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": sent_id}],
        }

    def _page(self, sender: str, sent: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        recipient = str((sent.get("recipient") or {}).get("id") or "")
        text = (sent.get("message") or {}).get("text")
        kind, tag = sent.get("messaging_type"), sent.get("tag")
        if not recipient or not isinstance(text, str):
            return 400, _error(100, "(#100) param recipient and message must be non-empty.")
        if kind not in ("RESPONSE", "UPDATE", "MESSAGE_TAG") or (kind == "MESSAGE_TAG") != (tag is not None):
            return 400, _error(100, "(#100) Tag is required for MESSAGE_TAG messaging type and only for it.")
        if len(text) > LIMITS["page"]:
            return 400, _error(100, "(#100) Length of param message[text] must be less than or equal to 2000")
        if recipient in self.refusals:
            return 400, _error(*self.refusals[recipient])
        sent_id = "m_" + uuid.uuid4().hex
        with self._lock:
            self.messages.append({"id": sender, "json": sent, "sent_id": sent_id})
        return 200, {"recipient_id": recipient, "message_id": sent_id}


def _error(code: int, message: str, kind: str = "OAuthException", *, transient: bool = False) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message, "type": kind, "code": code, "fbtrace_id": uuid.uuid4().hex[:11]}
    if transient:
        error["is_transient"] = True
    return {"error": error}


def business_status(
    phone_number_id: str, message_id: str, status: str, recipient: str, *, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The Cloud API's webhook call reporting the status of a message the business sent."""
    reported: dict[str, Any] = {
        "id": message_id,
        "status": status,
        "timestamp": str(int(time.time())),
        "recipient_id": recipient,
    }
    if errors:
        reported["errors"] = errors
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        "statuses": [reported],
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": value}]}],
    }


def page_receipt(
    page_id: str, customer: str, kind: str, *, watermark: int, mids: list[str] | None = None
) -> dict[str, Any]:
    """The Send API's webhook call: the customer's `delivery` (with `mids`) or `read` of the page's messages, up to
    `watermark` (milliseconds since the epoch)."""
    receipt: dict[str, Any] = {"watermark": watermark}
    if mids is not None:
        receipt["mids"] = mids
    event = {
        "sender": {"id": customer},
        "recipient": {"id": page_id},
        "timestamp": int(time.time() * 1000),
        kind: receipt,
    }
    return {"object": "page", "entry": [{"id": page_id, "time": int(time.time() * 1000), "messaging": [event]}]}
