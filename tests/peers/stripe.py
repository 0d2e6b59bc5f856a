"""A fake Stripe API on a real local socket, for tests of paid plans (`operations/helpdesk/billing.py`) through the
official `stripe` library.

Usage::

    with StripeServer("sk_test_...") as server:
        billing = Billing(server.base_url, "sk_test_...", "http://helpdesk.test")
        server.fail_next("/v1/checkout/sessions", status=500)   # the next session fails, the one after works
        ...
        assert len(server.customers) == 1

The server runs uvicorn in a daemon thread with its own event loop, as `tests/peers/twilio.py` does, and speaks
Stripe's wire format for three endpoints, `POST /v1/customers`, `POST /v1/checkout/sessions` and
`POST /v1/billing_portal/sessions`:

* bodies are `application/x-www-form-urlencoded` with Stripe's nested keys (`metadata[plan]=pro`,
  `line_items[0][price_data][recurring][interval]=month`), read back into dicts and lists (`RecordedRequest.params`);
* `Authorization: Bearer <secret key>` (or HTTP basic with the key as the user, which Stripe also takes) is required:
  anything else is 401 with Stripe's error body;
* `Idempotency-Key` is honoured as Stripe does: the same key with the same parameters replays the first answer (with
  `Idempotent-Replayed: true`), with other parameters it is 400 `idempotency_error`. Failures programmed with
  `fail_next` are not saved under the key (as Stripe saves no result for a request that failed before the endpoint
  ran), so a retry with the key gets a real answer;
* answers are objects of Stripe's shapes (`cus_...` customers, `cs_test_...` open sessions with a `url`), errors
  `{"error": {"type", "message", "code", "param"}}` with a `Request-Id` header; a session for an unknown customer is
  400 `resource_missing`, and missing or malformed parameters are 400 `parameter_missing` / `parameter_invalid_*`;
* a billing portal session (`bps_...`, `object` `billing_portal.session`, with `customer`, `return_url` and its `url`)
  is for a known customer. Its `url` is this server's portal page (`GET /p/session/<id>`): the customer's subscription
  and, for each other price of the catalogue (`prices`: one recurring monthly price per plan, `plan_prices`), a button
  that switches the subscription to it, as Stripe's portal does when its configuration allows plan changes; the
  switch delivers `customer.subscription.updated` (with `previous_attributes`) and sends the browser to `return_url`.

Events: `webhook(url, secret)` names the endpoint (as one made in Stripe's dashboard, with its signing secret);
`complete_checkout(session_id)` plays the customer paying: the session `complete`/`paid`, an active subscription on its
prices with the session's `subscription_data[metadata]`, and `checkout.session.completed` then
`customer.subscription.created` delivered. Each delivery is signed as Stripe signs: `t=<unix>,v1=<hex HMAC-SHA256 of
"{t}.{body}">` keyed by the secret, sent as `Stripe-Signature` and, since the helpdesk's contract names it so, as
`payment-signature`; `deliveries` holds each event and the endpoint's answer status.

Every request is recorded in `requests`, authorized or not, in arrival order; `reset()` forgets everything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx

from net.guard import tls_context
from tests.peers.serving import ServedPeer, read_request

__all__ = ["RecordedRequest", "StripeServer", "parse_form"]

CUSTOMERS = "/v1/customers"
SESSIONS = "/v1/checkout/sessions"
PORTAL_SESSIONS = "/v1/billing_portal/sessions"
PORTAL_PAGE = re.compile(r"^/p/session/(bps_\w+)(/update)?$")
CATALOGUE = {"pro": ("Helpdesk Pro", 2900), "business": ("Helpdesk Business", 9900)}
"""The plans' recurring monthly prices the peer's account sells (and its portal switches between), each with metadata
`plan`."""
_KEY = re.compile(r"([^\[\]]+)|\[([^\[\]]*)\]")


def parse_form(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Stripe's form encoding read back: `a[b][0][c]=v` -> `{"a": {"b": [{"c": "v"}]}}`. Raises ValueError for keys
    that contradict each other (`a=1&a[b]=2`) or are not of that form."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        parts = [name or index for name, index in _KEY.findall(key)]
        if not parts or parts[0] + "".join(f"[{part}]" for part in parts[1:]) != key:
            raise ValueError(f"malformed key {key!r}")
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise _contradicts(key)
        if isinstance(node.get(parts[-1]), dict):
            raise _contradicts(key)
        node[parts[-1]] = value
    return _listed(root)  # type: ignore[no-any-return]


def _contradicts(key: str) -> ValueError:
    return ValueError(f"{key!r} contradicts an earlier key")


def _listed(node: Any) -> Any:
    """Dicts whose keys are 0..n-1 become lists."""
    if not isinstance(node, dict):
        return node
    items = {key: _listed(value) for key, value in node.items()}
    if items and all(key.isdigit() for key in items) and sorted(map(int, items)) == list(range(len(items))):
        return [items[str(index)] for index in range(len(items))]
    return items


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    form: list[tuple[str, str]]
    """The body's pairs, in order, as sent."""
    params: dict[str, Any]
    """The body read back into nested dicts and lists."""
    authorized: bool
    status: int = 0
    """What the server answered."""

    @property
    def idempotency_key(self) -> str | None:
        return self.headers.get("idempotency-key")


@dataclass(frozen=True)
class Delivery:
    event: dict[str, Any]
    status: int
    """What the endpoint answered."""


@dataclass
class _Failure:
    status: int
    body: dict[str, Any]


@dataclass
class _Answer:
    status: int
    body: dict[str, Any]
    headers: list[tuple[str, str]] = field(default_factory=list)


class _Refused(Exception):
    def __init__(self, status: int, type_: str, message: str, *, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.answer = _Answer(status, _error(type_, message, code=code, param=param))


def _error(
    type_: str, message: str, *, code: str | None = None, param: str | None = None, **more: Any
) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type_, "message": message}
    if code is not None:
        error["code"] = code
        error["doc_url"] = f"https://stripe.com/docs/error-codes/{code.replace('_', '-')}"
    if param is not None:
        error["param"] = param
    return {"error": error | more}


def _id(prefix: str, length: int = 24) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def _price(product: str, amount: int, *, active: bool = True, plan: str | None = None) -> dict[str, Any]:
    """A recurring monthly USD price of Stripe's shape (`active` False: one made inline by `price_data`), with
    metadata `plan` when given (as an operator may set it in the dashboard)."""
    return {
        "id": _id("price_", 24),
        "object": "price",
        "active": active,
        "currency": "usd",
        "lookup_key": None,
        "metadata": {"plan": plan} if plan else {},
        "nickname": product,
        "product": _id("prod_", 14),
        "recurring": {"interval": "month", "interval_count": 1, "usage_type": "licensed"},
        "type": "recurring",
        "unit_amount": amount,
    }


def _missing(param: str) -> _Refused:
    return _Refused(
        400, "invalid_request_error", f"Missing required param: {param}.", code="parameter_missing", param=param
    )


def _invalid(param: str, message: str, code: str = "parameter_invalid_string") -> _Refused:
    return _Refused(400, "invalid_request_error", message, code=code, param=param)


class StripeServer(ServedPeer):
    """A fake `api.stripe.com` on 127.0.0.1 and a free port; use as a context manager. See the module's docstring."""

    name = "Stripe peer"

    def __init__(self, secret_key: str = "sk_test_signalyard0000000000000000") -> None:
        self.secret_key = secret_key
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: dict[str, deque[_Failure]] = {}
        self._idempotent: dict[str, tuple[str, list[tuple[str, str]], _Answer]] = {}
        self.customers: dict[str, dict[str, Any]] = {}
        """Customers made, by id, in creation order."""
        self.sessions: dict[str, dict[str, Any]] = {}
        """Checkout Sessions made, by id, in creation order."""
        self.portal_sessions: dict[str, dict[str, Any]] = {}
        """Billing portal sessions made, by id, in creation order."""
        self.subscriptions: dict[str, dict[str, Any]] = {}
        """Subscriptions, by id (made by `complete_checkout`, changed on the portal page)."""
        self.prices: dict[str, dict[str, Any]] = {}
        """The account's prices, by id: one per plan of CATALOGUE."""
        self.plan_prices: dict[str, str] = {}
        """The price id of each plan of CATALOGUE."""
        for plan, (product, amount) in CATALOGUE.items():
            price = _price(product, amount, plan=plan)
            self.prices[price["id"]] = price
            self.plan_prices[plan] = price["id"]
        self._checkouts: dict[str, tuple[list[dict[str, Any]], dict[str, str]]] = {}
        """Each Checkout Session's line items and subscription metadata, for `complete_checkout`."""
        self._webhook: tuple[str, str] | None = None
        self._deliveries: list[Delivery] = []

    # ---------------------------------------------------------------- programming

    def fail_next(
        self,
        path: str,
        *,
        status: int = 500,
        times: int = 1,
        error_type: str | None = None,
        code: str | None = None,
        message: str | None = None,
    ) -> None:
        """The next `times` requests to `path` answer `status` with Stripe's error body: by default `api_error` for
        5xx, `card_error`/`card_declined` for 402, `rate_limit_error` for 429, else `invalid_request_error`. They are
        answered once authorized, and not saved under their idempotency key."""
        default_type, default_code, default_message = {
            402: ("card_error", "card_declined", "Your card was declined."),
            429: ("rate_limit_error", "rate_limit", "Too many requests made to the API too quickly"),
        }.get(
            status,
            ("api_error", None, "An unknown error occurred")
            if status >= 500
            else ("invalid_request_error", None, "Invalid request"),
        )
        more = {"decline_code": "generic_decline"} if (error_type or default_type) == "card_error" else {}
        body = _error(error_type or default_type, message or default_message, code=code or default_code, **more)
        with self._lock:
            self._failures.setdefault(path, deque()).extend(_Failure(status, body) for _ in range(times))

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._failures.clear()
            self._idempotent.clear()
            self.customers.clear()
            self.sessions.clear()
            self.portal_sessions.clear()
            self.subscriptions.clear()
            self._checkouts.clear()
            self._deliveries.clear()

    # ---------------------------------------------------------------- inspection

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    @property
    def deliveries(self) -> list[Delivery]:
        """Every event delivered to the webhook endpoint so far, oldest first (a copy)."""
        with self._lock:
            return list(self._deliveries)

    # ---------------------------------------------------------------- events

    def webhook(self, url: str, secret: str) -> None:
        """The webhook endpoint events are delivered to, and its signing secret (`whsec_...`)."""
        self._webhook = (url, secret)

    def signature(self, body: bytes, secret: str, timestamp: int | None = None) -> str:
        t = int(time.time()) if timestamp is None else timestamp
        return f"t={t},v1={hmac.new(secret.encode(), f'{t}.'.encode() + body, hashlib.sha256).hexdigest()}"

    async def deliver(
        self, event_type: str, obj: dict[str, Any], previous_attributes: dict[str, Any] | None = None
    ) -> Delivery:
        """An event of `event_type` about `obj`, signed and posted to the webhook endpoint, as Stripe delivers it."""
        if self._webhook is None:
            raise RuntimeError("no webhook endpoint: call webhook(url, secret) first")
        url, secret = self._webhook
        data: dict[str, Any] = {"object": obj}
        if previous_attributes is not None:
            data["previous_attributes"] = previous_attributes
        event = {
            "id": _id("evt_"),
            "object": "event",
            "api_version": "2024-06-20",
            "created": int(time.time()),
            "data": data,
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": event_type,
        }
        body = json.dumps(event).encode()
        signed = self.signature(body, secret)
        headers = {"Content-Type": "application/json", "Stripe-Signature": signed, "payment-signature": signed}
        async with httpx.AsyncClient(timeout=10, verify=tls_context()) as client:
            answer = await client.post(url, content=body, headers=headers)
        delivery = Delivery(event, answer.status_code)
        with self._lock:
            self._deliveries.append(delivery)
        return delivery

    async def complete_checkout(self, session_id: str) -> dict[str, Any]:
        """The customer pays the Checkout Session: it is `complete` and `paid`, its subscription is made (active, on
        the session's prices, with its `subscription_data[metadata]`), and `checkout.session.completed` then
        `customer.subscription.created` are delivered. Answers the subscription."""
        with self._lock:
            session = self.sessions[session_id]
            subscription = self._subscription(session, *self._checkouts[session_id])
            session |= {"status": "complete", "payment_status": "paid", "subscription": subscription["id"]}
            completed = dict(session)
        await self.deliver("checkout.session.completed", completed)
        await self.deliver("customer.subscription.created", subscription)
        return subscription

    def _subscription(
        self, session: dict[str, Any], line_items: list[dict[str, Any]], metadata: dict[str, str]
    ) -> dict[str, Any]:
        """Under the lock: the subscription a paid session makes."""
        subscription_id = _id("sub_", 14)
        now = int(time.time())
        items: list[dict[str, Any]] = []
        for item in line_items:
            if "price" in item:
                price = self.prices[item["price"]]
            else:
                price_data = item["price_data"]
                name = (price_data.get("product_data") or {}).get("name", "")
                price = _price(name, int(price_data["unit_amount"]), active=False)
            items.append(
                {
                    "id": _id("si_", 14),
                    "object": "subscription_item",
                    "price": price,
                    "quantity": int(item["quantity"]),
                    "subscription": subscription_id,
                }
            )
        subscription = {
            "id": subscription_id,
            "object": "subscription",
            "cancel_at_period_end": False,
            "created": now,
            "currency": items[0]["price"]["currency"],
            "current_period_start": now,
            "current_period_end": now + 30 * 24 * 3600,
            "customer": session["customer"],
            "items": {"object": "list", "data": items, "has_more": False, "url": "/v1/subscription_items"},
            "livemode": False,
            "metadata": metadata,
            "status": "active",
        }
        self.subscriptions[subscription_id] = subscription
        return json.loads(json.dumps(subscription))  # type: ignore[no-any-return]

    # ---------------------------------------------------------------- the portal

    def _portal_session(self, params: dict[str, Any]) -> dict[str, Any]:
        customer = params.get("customer")
        if customer is None:
            raise _missing("customer")
        if customer not in self.customers:
            raise _Refused(
                400,
                "invalid_request_error",
                f"No such customer: '{customer}'",
                code="resource_missing",
                param="customer",
            )
        return_url = params.get("return_url")
        if return_url is not None and not re.match(r"https?://", return_url):
            raise _invalid("return_url", "Not a valid URL", code="url_invalid")
        session_id = _id("bps_", 24)
        session = {
            "id": session_id,
            "object": "billing_portal.session",
            "configuration": "bpc_" + "0" * 24,
            "created": int(time.time()),
            "customer": customer,
            "flow": None,
            "livemode": False,
            "locale": params.get("locale"),
            "on_behalf_of": None,
            "return_url": return_url,
            "url": f"{self.base_url}/p/session/{session_id}",
        }
        self.portal_sessions[session_id] = session
        return session

    def _customer_subscription(self, customer: str) -> dict[str, Any] | None:
        found = [
            one for one in self.subscriptions.values() if one["customer"] == customer and one["status"] != "canceled"
        ]
        return found[-1] if found else None

    def _portal_page(self, session: dict[str, Any]) -> bytes:
        subscription = self._customer_subscription(session["customer"])
        back = html.escape(session["return_url"] or "")
        if subscription is None:
            current, choices = "<p>No subscription.</p>", ""
        else:
            price = subscription["items"]["data"][0]["price"]
            current = f"<p>Current plan: <strong>{html.escape(price['nickname'] or '')}</strong></p>"
            choices = "".join(
                f'<form method="post" action="/p/session/{session["id"]}/update">'
                f'<input type="hidden" name="price" value="{other["id"]}">'
                f'<button type="submit">Switch to {html.escape(other["nickname"])}</button></form>'
                for other in self.prices.values()
                if other["id"] != price["id"]
            )
        page = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Billing</title></head><body><main>'
            f"<h1>Manage your subscription</h1>{current}{choices}"
            f'<p><a href="{back}">Return to the helpdesk</a></p></main></body></html>'
        )
        return page.encode()

    async def _portal(
        self, path: str, method: str, form: list[tuple[str, str]]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The portal's pages: (status, headers, body)."""
        matched = PORTAL_PAGE.match(path)
        with self._lock:
            session = self.portal_sessions.get(matched.group(1)) if matched else None
        if matched is None or session is None:
            return 404, [("content-type", "text/plain")], b"This portal session does not exist."
        if matched.group(2) is None and method == "GET":
            with self._lock:
                page = self._portal_page(session)
            return 200, [("content-type", "text/html; charset=utf-8")], page
        if matched.group(2) is None or method != "POST":
            return 405, [("content-type", "text/plain")], b"Method not allowed."
        chosen = dict(form).get("price", "")
        with self._lock:
            subscription = self._customer_subscription(session["customer"])
            if subscription is None or chosen not in self.prices:
                return 400, [("content-type", "text/plain")], b"Nothing to switch."
            item = subscription["items"]["data"][0]
            previous = {"items": json.loads(json.dumps(subscription["items"]))}
            item["price"] = self.prices[chosen]
            changed = json.loads(json.dumps(subscription))
        await self.deliver("customer.subscription.updated", changed, previous)
        return 303, [("location", session["return_url"] or "/"), ("content-type", "text/plain")], b""

    # ---------------------------------------------------------------- the API

    def _authorized(self, header: str | None) -> bool:
        if header is None:
            return False
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "bearer":
            return secrets.compare_digest(credentials, self.secret_key)
        if scheme.lower() == "basic":
            try:
                user = base64.b64decode(credentials).decode().partition(":")[0]
            except ValueError:
                return False
            return secrets.compare_digest(user, self.secret_key)
        return False

    def _unauthorized(self, header: str | None) -> _Answer:
        if header is None:
            message = (
                "You did not provide an API key. You need to provide your API key in the Authorization header, using "
                "Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."
            )
        else:
            given = header.partition(" ")[2]
            message = f"Invalid API Key provided: {given[:8]}{'*' * max(len(given) - 12, 0)}{given[-4:]}"
        return _Answer(401, _error("invalid_request_error", message))

    def _answer(self, method: str, path: str, headers: dict[str, str], form: list[tuple[str, str]]) -> _Answer:
        """Under the lock: the answer to one authorized request."""
        failures = self._failures.get(path)
        if failures:
            failure = failures.popleft()
            return _Answer(failure.status, failure.body)
        key = headers.get("idempotency-key")
        if key is not None and key in self._idempotent:
            first_path, first_form, answer = self._idempotent[key]
            if (first_path, sorted(first_form)) != (path, sorted(form)):
                return _Answer(
                    400,
                    _error(
                        "idempotency_error",
                        "Keys for idempotent requests can only be used with the same parameters they were first used "
                        f"with. Try using a key other than '{key}' if you meant to execute a different request.",
                    ),
                )
            return _Answer(answer.status, answer.body, [("idempotent-replayed", "true")])
        try:
            answer = _Answer(200, self._run(method, path, form))
        except _Refused as refused:
            answer = refused.answer
        if key is not None:
            self._idempotent[key] = (path, form, answer)
        return answer

    def _run(self, method: str, path: str, form: list[tuple[str, str]]) -> dict[str, Any]:
        """The object a request makes; raises _Refused with Stripe's error."""
        if method != "POST" or path not in (CUSTOMERS, SESSIONS, PORTAL_SESSIONS):
            raise _Refused(404, "invalid_request_error", f"Unrecognized request URL ({method}: {path}).")
        try:
            params = parse_form(form)
        except ValueError as error:
            raise _Refused(400, "invalid_request_error", f"Invalid parameters: {error}") from None
        if path == PORTAL_SESSIONS:
            return self._portal_session(params)
        return self._customer(params) if path == CUSTOMERS else self._session(params)

    def _customer(self, params: dict[str, Any]) -> dict[str, Any]:
        metadata = params.get("metadata", {})
        if not isinstance(metadata, dict):
            raise _invalid("metadata", "Invalid object", code="parameter_invalid_object")
        customer: dict[str, Any] = {
            "id": _id("cus_", 14),
            "object": "customer",
            "address": None,
            "balance": 0,
            "created": int(time.time()),
            "currency": None,
            "default_source": None,
            "delinquent": False,
            "description": params.get("description"),
            "email": params.get("email"),
            "invoice_prefix": secrets.token_hex(4).upper(),
            "invoice_settings": {
                "custom_fields": None,
                "default_payment_method": None,
                "footer": None,
                "rendering_options": None,
            },
            "livemode": False,
            "metadata": metadata,
            "name": params.get("name"),
            "phone": params.get("phone"),
            "preferred_locales": [],
            "shipping": None,
            "tax_exempt": "none",
            "test_clock": None,
        }
        self.customers[customer["id"]] = customer
        return customer

    def _session(self, params: dict[str, Any]) -> dict[str, Any]:
        mode = params.get("mode")
        if mode is None:
            raise _missing("mode")
        if mode not in ("payment", "setup", "subscription"):
            raise _invalid("mode", f"Invalid mode: must be one of payment, setup, or subscription (got {mode!r})")
        customer = params.get("customer")
        if customer is not None and customer not in self.customers:
            raise _Refused(
                400,
                "invalid_request_error",
                f"No such customer: '{customer}'",
                code="resource_missing",
                param="customer",
            )
        for url in ("success_url", "cancel_url"):
            if url in params and not re.match(r"https?://", params[url]):
                raise _invalid(url, f"Not a valid URL: {url}", code="url_invalid")
        line_items = params.get("line_items")
        if mode != "setup" and not line_items:
            raise _missing("line_items")
        if not isinstance(line_items or [], list):
            raise _invalid("line_items", "Invalid array", code="parameter_invalid_array")
        total = 0
        currency = None
        for index, item in enumerate(line_items or []):
            where = f"line_items[{index}]"
            if not isinstance(item, dict):
                raise _invalid(where, "Invalid object", code="parameter_invalid_object")
            if "quantity" not in item:
                raise _missing(f"{where}[quantity]")
            if not item["quantity"].isdigit():
                raise _invalid(f"{where}[quantity]", "Invalid integer", code="parameter_invalid_integer")
            if "price" in item:
                if item["price"] not in self.prices:
                    raise _Refused(
                        400,
                        "invalid_request_error",
                        f"No such price: '{item['price']}'",
                        code="resource_missing",
                        param=f"{where}[price]",
                    )
                total += self.prices[item["price"]]["unit_amount"] * int(item["quantity"])
                currency = self.prices[item["price"]]["currency"]
                continue
            price_data = item.get("price_data")
            if not isinstance(price_data, dict):
                raise _missing(f"{where}[price]")
            for required in ("currency", "unit_amount"):
                if required not in price_data:
                    raise _missing(f"{where}[price_data][{required}]")
            if not price_data["unit_amount"].isdigit():
                raise _invalid(f"{where}[price_data][unit_amount]", "Invalid integer", "parameter_invalid_integer")
            if "product" not in price_data and not (price_data.get("product_data") or {}).get("name"):
                raise _missing(f"{where}[price_data][product_data][name]")
            interval = (price_data.get("recurring") or {}).get("interval")
            if mode == "subscription" and interval not in ("day", "week", "month", "year"):
                raise _missing(f"{where}[price_data][recurring][interval]")
            total += int(price_data["unit_amount"]) * int(item["quantity"])
            currency = price_data["currency"]
        session_id = _id("cs_test_", 58)
        created = int(time.time())
        session = {
            "id": session_id,
            "object": "checkout.session",
            "amount_subtotal": total if currency else None,
            "amount_total": total if currency else None,
            "cancel_url": params.get("cancel_url"),
            "client_reference_id": params.get("client_reference_id"),
            "created": created,
            "currency": currency,
            "customer": customer,
            "customer_email": None,
            "expires_at": created + 24 * 3600,
            "livemode": False,
            "metadata": params.get("metadata", {}),
            "mode": mode,
            "payment_status": "no_payment_required" if mode == "setup" else "unpaid",
            "status": "open",
            "subscription": None,
            "success_url": params.get("success_url"),
            "ui_mode": "hosted",
            "url": f"https://checkout.stripe.com/c/pay/{session_id}",
        }
        self.sessions[session_id] = session
        subscription_data = params.get("subscription_data") or {}
        self._checkouts[session_id] = (line_items or [], subscription_data.get("metadata", {}))
        return session

    # ---------------------------------------------------------------- HTTP

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, headers = await read_request(scope, receive)
        form = parse_qsl(body.decode(), keep_blank_values=True) if body else []
        if scope["path"].startswith("/p/"):  # the portal's pages, for a browser
            status, page_headers, page = await self._portal(scope["path"], scope["method"], form)
            start = [(name.encode(), value.encode()) for name, value in page_headers]
            await send({"type": "http.response.start", "status": status, "headers": start})
            await send({"type": "http.response.body", "body": page})
            return
        authorization = headers.get("authorization")
        authorized = self._authorized(authorization)
        with self._lock:
            if authorized:
                answer = self._answer(scope["method"], scope["path"], headers, form)
            else:
                answer = self._unauthorized(authorization)
            try:
                params = parse_form(form)
            except ValueError:
                params = {}
            self._requests.append(
                RecordedRequest(scope["method"], scope["path"], headers, form, params, authorized, answer.status)
            )
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"request-id", _id("req_", 14).encode()),
                    (b"stripe-version", headers.get("stripe-version", "2026-10-28.endive").encode()),
                    *((name.encode(), value.encode()) for name, value in answer.headers),
                ],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(answer.body).encode()})
