"""A local commerce platform (Shopify's wire format, `commerce` in the header names where our contract says so) on a
real socket, for tests of connecting a store by its app install (docs/helpdesk.md, "Commerce").

Usage::

    with CommercePlatform("app-client-id", "app-secret") as platform:
        settings: SIGNALYARD_HELPDESK_COMMERCE_SHOP_URL = platform.shop_url   # http://127.0.0.1:<port>/{shop}
        ...  # the admin's browser goes to the authorize URL and clicks "Install app"
        assert platform.registrations("tea-shop.myshopify.com") == [...]
        await platform.deliver("tea-shop.myshopify.com", "orders/create", {...})

Every shop lives under `/{shop}` (the helpdesk's `{shop}` template puts it there). It serves:

* `GET /{shop}/admin/oauth/authorize?client_id&scope&redirect_uri&state`: checks the app's client id, a scope, a
  redirect URI and a state (else 400, no redirect), and shows the install page: the app, the shop, the scopes asked,
  and an **Install app** button (a form posting back here);
* `POST /{shop}/admin/oauth/authorize`: the merchant said yes: 302 to the redirect URI with `code`, `hmac`, `host`,
  `shop`, `state` and `timestamp`, `hmac` the hex HMAC-SHA256, keyed by the app's secret, of the other parameters
  sorted by name as `name=value` joined by `&`;
* `POST /{shop}/admin/oauth/access_token` (JSON `client_id`, `client_secret`, `code`): the app's credentials (else 401),
  a code issued for this shop and never presented before (spent by its first presentation, whatever its outcome; else
  400); then `{"access_token": "shpat_...", "scope": "read_orders,read_customers"}`. `refuse_tokens()` makes it 400;
* `POST /{shop}/admin/api/{version}/webhooks.json` with `X-Commerce-Access-Token`: a token issued for this shop (else
  401), `{"webhook": {"topic", "address", "format"}}` of a known topic (else 422); a topic already subscribed at that
  address is 422 `{"errors": {"address": ["for this topic has already been taken"]}}`; `fail_topic(topic)` makes one
  topic's registration fail (403). 201 with the webhook, recorded (`registrations(shop)`).

`deliver(shop, topic, payload)` posts a webhook as the platform does to the address subscribed for that topic, signed
`x-commerce-hmac-sha256` (Base64 HMAC-SHA256 of the raw body under the app's secret). `reset()` forgets everything
programmed and recorded but the subscriptions of shops of earlier tests, which share nothing with a new shop.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx

from net.guard import tls_context
from tests.peers.serving import ServedPeer, read_request

__all__ = ["TOPICS", "CommercePlatform", "Registration", "signed_query"]

TOPICS = ("orders/create", "orders/updated", "customers/create", "customers/update", "app/uninstalled")
"""The topics the platform lets an app subscribe to by API (the privacy topics are set in the app's settings)."""
TAKEN = {"errors": {"address": ["for this topic has already been taken"]}}


def signed_query(secret: str, params: dict[str, str]) -> dict[str, str]:
    """`params` with the platform's `hmac` added."""
    message = "&".join(f"{name}={value}" for name, value in sorted(params.items()) if name != "hmac")
    return {**params, "hmac": hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()}


@dataclass(frozen=True)
class Registration:
    id: int
    topic: str
    address: str
    format: str


@dataclass(frozen=True)
class _Grant:
    shop: str
    scope: str


class CommercePlatform(ServedPeer):
    """The platform on 127.0.0.1 and a free port; use as a context manager."""

    name = "commerce platform peer"

    def __init__(self, client_id: str, client_secret: str, *, app_name: str = "Signalyard Helpdesk") -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.app_name = app_name
        self._lock = threading.Lock()
        self._registrations: dict[str, list[Registration]] = {}
        self.reset()

    @property
    def shop_url(self) -> str:
        """The helpdesk's SIGNALYARD_HELPDESK_COMMERCE_SHOP_URL for this platform."""
        return f"{self.base_url}/{{shop}}"

    # ---------------------------------------------------------------- programming

    def reset(self) -> None:
        with self._lock:
            self._grants: dict[str, _Grant] = {}
            self._tokens: dict[str, str] = {}
            self._refuse_tokens = False
            self._failing: set[str] = set()
            self.granted_scope = "read_orders,read_customers"
            self.requests: list[tuple[str, str, int]] = []
            """(method, path, status) of every request."""

    def refuse_tokens(self) -> None:
        """The access-token endpoint refuses every code from now on (400 invalid_request)."""
        with self._lock:
            self._refuse_tokens = True

    def fail_topic(self, topic: str) -> None:
        """Registering `topic` fails from now on (403)."""
        with self._lock:
            self._failing.add(topic)

    # ---------------------------------------------------------------- inspection

    def registrations(self, shop: str) -> list[Registration]:
        with self._lock:
            return list(self._registrations.get(shop, []))

    def tokens(self, shop: str) -> list[str]:
        """The access tokens issued for `shop`, oldest first."""
        with self._lock:
            return [token for token, owner in self._tokens.items() if owner == shop]

    def count(self, suffix: str) -> int:
        with self._lock:
            return sum(1 for _, path, _ in self.requests if path.endswith(suffix))

    # ---------------------------------------------------------------- the platform's webhooks

    async def deliver(self, shop: str, topic: str, payload: dict[str, Any]) -> httpx.Response:
        """`payload` posted as the platform delivers `topic` to the address the shop subscribed for it."""
        (registration,) = [found for found in self.registrations(shop) if found.topic == topic]
        body = json.dumps(payload).encode()
        signature = base64.b64encode(hmac.new(self.client_secret.encode(), body, hashlib.sha256).digest()).decode()
        headers = {
            "Content-Type": "application/json",
            "x-commerce-topic": topic,
            "x-commerce-shop-domain": shop,
            "x-commerce-webhook-id": str(uuid.uuid4()),
            "x-commerce-api-version": "2025-01",
            "x-commerce-hmac-sha256": signature,
        }
        async with httpx.AsyncClient(timeout=10, verify=tls_context()) as client:
            return await client.post(registration.address, content=body, headers=headers)

    # ---------------------------------------------------------------- HTTP

    def _authorize_page(self, shop: str, query: dict[str, str]) -> tuple[int, str, bytes]:
        wrong = [
            name
            for name, good in (
                ("client_id", query.get("client_id") == self.client_id),
                ("scope", bool(query.get("scope"))),
                ("redirect_uri", query.get("redirect_uri", "").startswith(("http://", "https://"))),
                ("state", bool(query.get("state"))),
            )
            if not good
        ]
        if wrong:  # never redirected: the redirect URI itself may be the wrong thing
            return 400, "text/plain", f"invalid request: {', '.join(wrong)}".encode()
        hidden = "".join(
            f'<input type="hidden" name="{name}" value="{html.escape(query[name])}">'
            for name in ("scope", "redirect_uri", "state")
        )
        scopes = "".join(f"<li>{html.escape(scope)}</li>" for scope in query["scope"].split(","))
        page = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Install app</title></head><body>'
            f"<main><h1>Install {html.escape(self.app_name)} in {html.escape(shop)}</h1>"
            f"<p>It asks to:</p><ul>{scopes}</ul>"
            f'<form method="post" action="/{html.escape(shop)}/admin/oauth/authorize">{hidden}'
            '<button type="submit">Install app</button></form></main></body></html>'
        )
        return 200, "text/html; charset=utf-8", page.encode()

    def _installed(self, shop: str, form: dict[str, str]) -> tuple[int, list[tuple[str, str]]]:
        code = secrets.token_hex(16)
        with self._lock:
            self._grants[code] = _Grant(shop, form.get("scope", ""))
        host = base64.urlsafe_b64encode(f"{shop}/admin".encode()).decode().rstrip("=")
        params = {"code": code, "host": host, "shop": shop, "state": form["state"], "timestamp": str(int(time.time()))}
        back = f"{form['redirect_uri']}?{urlencode(signed_query(self.client_secret, params))}"
        return 302, [("location", back)]

    def _access_token(self, shop: str, given: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            grant = self._grants.pop(str(given.get("code", "")), None)  # spent by its first presentation
            refuse = self._refuse_tokens
        if given.get("client_id") != self.client_id or given.get("client_secret") != self.client_secret:
            return 401, {"error": "invalid_client", "error_description": "Client credentials are invalid"}
        if refuse or grant is None or grant.shop != shop:
            return 400, {
                "error": "invalid_request",
                "error_description": "The authorization code was not found or was already used",
            }
        token = f"shpat_{secrets.token_hex(16)}"
        with self._lock:
            self._tokens[token] = shop
        return 200, {"access_token": token, "scope": self.granted_scope}

    def _webhook(self, shop: str, token: str | None, given: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            owner = self._tokens.get(token or "")
            failing = set(self._failing)
        if owner != shop:
            return 401, {"errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"}
        webhook = given.get("webhook")
        if not isinstance(webhook, dict):
            return 400, {"errors": {"webhook": "Required parameter missing or invalid"}}
        topic, address, form = webhook.get("topic"), webhook.get("address"), webhook.get("format", "json")
        if topic not in TOPICS:
            return 422, {"errors": {"topic": ["Invalid topic specified."]}}
        if not isinstance(address, str) or not address.startswith(("http://", "https://")):
            return 422, {"errors": {"address": ["is invalid"]}}
        if topic in failing:
            return 403, {"errors": f"This app is not approved to subscribe to webhook topics {topic}"}
        with self._lock:
            kept = self._registrations.setdefault(shop, [])
            if any(found.topic == topic and found.address == address for found in kept):
                return 422, TAKEN
            made = Registration(len(kept) + 1, str(topic), address, str(form))
            kept.append(made)
        return 201, {"webhook": {"id": made.id, "topic": made.topic, "address": made.address, "format": made.format}}

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, headers = await read_request(scope, receive)
        query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode(), keep_blank_values=True).items()}
        method, path = scope["method"], scope["path"]
        shop, _, rest = path.lstrip("/").partition("/")
        status, content_type, answer = 404, "application/json", b'{"errors": "Not Found"}'
        extra: list[tuple[str, str]] = []
        if (method, rest) == ("GET", "admin/oauth/authorize"):
            status, content_type, answer = self._authorize_page(shop, query)
        elif (method, rest) == ("POST", "admin/oauth/authorize"):
            form = {k: v[-1] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
            status, extra = self._installed(shop, form)
            answer = b""
        elif method == "POST" and (
            rest == "admin/oauth/access_token" or (rest.startswith("admin/api/") and rest.endswith("/webhooks.json"))
        ):
            try:
                given = json.loads(body or b"{}")
            except ValueError:
                given = None
            if not isinstance(given, dict):
                status, document = 400, {"errors": "The body is not JSON"}
            elif rest == "admin/oauth/access_token":
                status, document = self._access_token(shop, given)
            else:
                status, document = self._webhook(shop, headers.get("x-commerce-access-token"), given)
            answer = json.dumps(document).encode()
        with self._lock:
            self.requests.append((method, path, status))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type.encode()), *((k.encode(), v.encode()) for k, v in extra)],
            }
        )
        await send({"type": "http.response.body", "body": answer})
