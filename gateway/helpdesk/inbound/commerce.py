"""`POST /api/webhooks/commerce` and `POST /api/webhooks/commerce/gdpr`: a shop's events, as a Shopify-shaped
commerce platform sends them (section 4.6, "Commerce").

- **Routing.** `x-commerce-shop-domain` names the shop: the commerce channel with that `shop` address receives it.
- **Signature.** `x-commerce-hmac-sha256` is the Base64 HMAC-SHA256 of the raw body, keyed by the channel's
  `webhook_secret` on the events endpoint and by its `api_secret` (the app's API secret) on the privacy endpoint.
  The scheme signs no timestamp, so there is no replay window: a replay is a duplicate (below).
- **Topics.** `x-commerce-topic`: `orders/create`, `orders/updated`, `customers/create`, `customers/update` on the
  events endpoint; `customers/data_request`, `customers/redact`, `shop/redact` on the privacy endpoint. Any other is
  400.
- **De-duplication.** `x-commerce-webhook-id` (the same on every retry of a delivery). Without it, the topic, the
  resource's id and its `updated_at` (a privacy request: the topic and the request's or the customer's id), and
  failing those the body's SHA-256.
- **Ordering.** Events about one customer share a partition (`<channel>:customer:<id>`), so they are applied in the
  order they came; a redaction comes after that customer's orders."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import MAX_BODY_BYTES, Inbound, equal, refused
from topics.helpdesk.inbound import Provider

PATH = "/api/webhooks/commerce"
PRIVACY_PATH = "/api/webhooks/commerce/gdpr"
PROVIDER: Provider = "commerce"
PRIVACY_PROVIDER: Provider = "commerce_privacy"
TOPICS = ("orders/create", "orders/updated", "customers/create", "customers/update")
PRIVACY_TOPICS = ("customers/data_request", "customers/redact", "shop/redact")
SIGNATURE = "x-commerce-hmac-sha256"


def signature(secret: str, body: bytes) -> str:
    """The `x-commerce-hmac-sha256` value of `body` under `secret`."""
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resource_key(topic: str, payload: dict[str, Any]) -> str | None:
    """The de-duplication key of a delivery without a webhook id."""
    customer = _object(payload.get("customer"))
    if topic == "customers/data_request":
        request = _object(payload.get("data_request"))
        ident = request.get("id") or customer.get("id")
        return f"{topic}:{ident}" if ident is not None else None
    if topic == "customers/redact":
        return f"{topic}:{customer['id']}" if customer.get("id") is not None else None
    if topic == "shop/redact":
        return f"{topic}:{payload.get('shop_id') or payload.get('shop_domain')}"
    if payload.get("id") is None:
        return None
    return f"{topic}:{payload['id']}:{payload.get('updated_at', '')}"


def _partition(channel_id: str, topic: str, payload: dict[str, Any]) -> str:
    """One customer's events in order: by the shop's customer id (an order's, a customer event's own, a privacy
    request's); an order without a customer by the order; a shop's redaction on its own."""
    if topic == "shop/redact":
        return f"{channel_id}:shop"
    if topic.startswith("customers/") and topic in TOPICS:
        customer_id = payload.get("id")
    else:
        customer = payload.get("customer")
        customer_id = customer.get("id") if isinstance(customer, dict) else None
    if customer_id is not None:
        return f"{channel_id}:customer:{customer_id}"
    return f"{channel_id}:order:{payload.get('id')}"


async def _receive(
    request: Request[Any, Any, Any], inbound: Inbound, *, topics: tuple[str, ...], secret_name: str, provider: Provider
) -> Response[dict[str, str]]:
    body = await request.body()
    shop = request.headers.get("x-commerce-shop-domain", "").strip().lower()
    if not shop:
        raise refused(400, "x-commerce-shop-domain names no shop")
    channel = await inbound.route("shop", shop)
    secret = channel.secrets.get(secret_name)
    given = request.headers.get(SIGNATURE, "").strip()
    if not secret or not given or not equal(given, signature(secret, body)):
        raise refused(401, f"{SIGNATURE} is not the HMAC-SHA256 of the body under this shop's {secret_name}")
    topic = request.headers.get("x-commerce-topic", "").strip()
    if topic not in topics:
        raise refused(400, f"x-commerce-topic {topic!r} is none of this endpoint's topics: {', '.join(topics)}")
    try:
        payload = json.loads(body)
    except ValueError:
        raise refused(400, "The body is not JSON") from None
    if not isinstance(payload, dict):
        raise refused(400, "The body is not a JSON object")
    webhook_id = request.headers.get("x-commerce-webhook-id", "").strip()
    dedup_key = webhook_id or _resource_key(topic, payload) or "sha256:" + hashlib.sha256(body).hexdigest()
    stored = await inbound.accept(
        channel,
        provider,
        dedup_key=dedup_key,
        body=body,
        content_type="application/json",
        partition_key=_partition(channel.channel_id, topic, payload),
        details={
            "topic": topic,
            "shop": shop,
            "webhook_id": webhook_id or None,
            "api_version": request.headers.get("x-commerce-api-version"),
            "triggered_at": request.headers.get("x-commerce-triggered-at"),
        },
    )
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def commerce_events(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, str]]:
    return await _receive(request, inbound, topics=TOPICS, secret_name="webhook_secret", provider=PROVIDER)


@post(
    PRIVACY_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200
)
async def commerce_privacy(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, str]]:
    return await _receive(request, inbound, topics=PRIVACY_TOPICS, secret_name="api_secret", provider=PRIVACY_PROVIDER)


ROUTES = [commerce_events, commerce_privacy]
