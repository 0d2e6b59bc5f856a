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
from collections.abc import Mapping
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import MAX_BODY_BYTES, Inbound, decoded, equal, refused
from topics.helpdesk.inbound import (
    SHOP_EVENTS,
    SHOP_PRIVACY_EVENTS,
    Provider,
    ShopCustomer,
    ShopEvent,
    ShopOrder,
    ShopPrivacyRequest,
)

PATH = "/api/webhooks/commerce"
PRIVACY_PATH = "/api/webhooks/commerce/gdpr"
PROVIDER: Provider = "commerce"
PRIVACY_PROVIDER: Provider = "commerce_privacy"
SIGNATURE = "x-commerce-hmac-sha256"


def signature(secret: str, body: bytes) -> str:
    """The `x-commerce-hmac-sha256` value of `body` under `secret`."""
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def _resource_key(topic: str, payload: ShopEvent) -> str | None:
    """The de-duplication key of a delivery without a webhook id."""
    if isinstance(payload, ShopPrivacyRequest):
        customer = payload.customer or ShopCustomer()
        if topic == "customers/data_request":
            ident = (payload.data_request.id if payload.data_request else None) or customer.id
            return f"{topic}:{ident}" if ident is not None else None
        if topic == "customers/redact":
            return f"{topic}:{customer.id}" if customer.id is not None else None
        return f"{topic}:{payload.shop_id or payload.shop_domain}"
    if payload.id is None:
        return None
    return f"{topic}:{payload.id}:{payload.updated_at or ''}"


def _partition(channel_id: str, topic: str, payload: ShopEvent) -> str:
    """One customer's events in order: by the shop's customer id (an order's, a customer event's own, a privacy
    request's); an order without a customer by the order; a shop's redaction on its own."""
    if topic == "shop/redact":
        return f"{channel_id}:shop"
    customer = payload if isinstance(payload, ShopCustomer) else payload.customer
    customer_id = customer.id if customer else None
    if customer_id is not None:
        return f"{channel_id}:customer:{customer_id}"
    return f"{channel_id}:order:{payload.id if isinstance(payload, ShopOrder) else None}"


async def _receive(
    request: Request[Any, Any, Any],
    inbound: Inbound,
    *,
    events: Mapping[str, msgspec.json.Decoder[ShopEvent]],
    secret_name: str,
    provider: Provider,
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
    decoder = events.get(topic)
    if decoder is None:
        raise refused(400, f"x-commerce-topic {topic!r} is none of this endpoint's topics: {', '.join(events)}")
    payload = decoded(decoder, body)
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
    return await _receive(request, inbound, events=SHOP_EVENTS, secret_name="webhook_secret", provider=PROVIDER)


@post(
    PRIVACY_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200
)
async def commerce_privacy(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, str]]:
    return await _receive(
        request, inbound, events=SHOP_PRIVACY_EVENTS, secret_name="api_secret", provider=PRIVACY_PROVIDER
    )


ROUTES = [commerce_events, commerce_privacy]
