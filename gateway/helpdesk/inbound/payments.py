"""`POST /api/webhooks/payments` and `POST /api/webhooks/payments-connect`: Stripe's events (section 4.6, "Payments").

- **Signature.** `payment-signature` in Stripe's format (`t=<unix>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">`),
  checked by the official `stripe` library (`stripe.WebhookSignature.verify_header`) with a 300 s tolerance: an
  older timestamp is a replay (401). The library lets any later timestamp through; here, as for every other signed
  timestamp, the window has two sides: one more than 300 s ahead of our clock is refused too (401). The secrets are
  the platform's, one per endpoint: `SIGNALYARD_HELPDESK_STRIPE_WEBHOOK_SECRET` and
  `SIGNALYARD_HELPDESK_STRIPE_CONNECT_WEBHOOK_SECRET`; an endpoint whose secret is not configured receives nothing
  (404).
- **Payments** are the platform's own billing events (paid plans): they belong to no channel, and are stored under
  the platform channel `platform-payments` (`workspaces.PLATFORM_PAYMENTS_CHANNEL`) with the organization they
  concern: the one a checkout session names (`client_reference_id`, metadata `organization_id`), or a subscription's
  or invoice's metadata, or else the one whose Stripe customer it is; `platform` when none is known.
- **Connected accounts' events** route by their `account` to the `payments` channel with that `account` address.
- **De-duplication** by the event's id (`evt_...`); one organization's (one account object's) events in order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import stripe
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, fresh, refused
from storage.helpdesk import workspaces
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import Provider

PATH = "/api/webhooks/payments"
CONNECT_PATH = "/api/webhooks/payments-connect"
PROVIDER: Provider = "payments"
CONNECT_PROVIDER: Provider = "payments_connect"
SIGNATURE = "payment-signature"
TOLERANCE_S = 300
MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StripeWebhookSecrets:
    """The platform's endpoint secrets (`whsec_...`), in `Inbound.providers[PROVIDER]`; None: not configured."""

    payments: str | None = field(default=None, repr=False)
    connect: str | None = field(default=None, repr=False)


def secrets_of(inbound: Inbound) -> StripeWebhookSecrets:
    given = inbound.providers.get(PROVIDER)
    return given if isinstance(given, StripeWebhookSecrets) else StripeWebhookSecrets()


def _verified_event(body: bytes, header: str | None, secret: str | None, endpoint: str) -> dict[str, Any]:
    """The event, once its signature checks out (401 otherwise); 400 when it is no Stripe event."""
    if not secret:
        raise refused(404, f"No {endpoint} webhook is configured here")
    try:
        stripe.WebhookSignature.verify_header(body, header, secret, TOLERANCE_S)
    except stripe.SignatureVerificationError as error:
        raise refused(401, f"{SIGNATURE} does not verify: {error.user_message or error}") from None
    except UnicodeDecodeError:
        raise refused(400, "The body is not UTF-8") from None
    signed_at = next((part[2:] for part in (header or "").split(",") if part.startswith("t=")), "")
    if not fresh(signed_at, window_s=TOLERANCE_S):
        raise refused(401, f"{SIGNATURE}'s timestamp is more than {TOLERANCE_S} s ahead of this server's clock")
    try:
        event = json.loads(body)
    except ValueError:
        raise refused(400, "The body is not JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not isinstance(event.get("type"), str):
        raise refused(400, "The body is not a Stripe event: it needs an `id` and a `type`")
    data = event.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("object"), dict):
        raise refused(400, "The event has no `data.object`")
    return event


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def organization_hint(obj: dict[str, Any]) -> str | None:
    """The organization a billing object names: a checkout session's `client_reference_id`, its metadata's
    `organization_id`, or an invoice's subscription metadata (where checkout put it)."""
    parent_details = _object(_object(obj.get("parent")).get("subscription_details"))
    for candidate in (
        obj.get("client_reference_id"),
        _object(obj.get("metadata")).get("organization_id"),
        _object(_object(obj.get("subscription_details")).get("metadata")).get("organization_id"),
        _object(parent_details.get("metadata")).get("organization_id"),
    ):
        if _text(candidate):
            return str(candidate)
    return None


def customer_of(obj: dict[str, Any]) -> str | None:
    customer = obj.get("customer")
    return _text(customer.get("id") if isinstance(customer, dict) else customer)


def accepted(stored: bool) -> Response[dict[str, str]]:
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def payments(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[dict[str, str]]:
    body = await request.body()
    event = _verified_event(body, request.headers.get(SIGNATURE), secrets_of(inbound).payments, "payments")
    obj = event["data"]["object"]
    organization_id = await inbound.db.read(workspaces.billing_organization, organization_hint(obj), customer_of(obj))
    organization_id = organization_id or workspaces.NO_ORGANIZATION
    channel = Routed(workspaces.PLATFORM_PAYMENTS_CHANNEL, organization_id, "payments", {}, {})
    stored = await inbound.accept(
        channel,
        PROVIDER,
        dedup_key=event["id"],
        body=body,
        content_type="application/json",
        partition_key=f"{workspaces.PLATFORM_PAYMENTS_CHANNEL}:{organization_id}",
        details={"type": event["type"], "livemode": bool(event.get("livemode"))},
    )
    return accepted(stored)


@post(
    CONNECT_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200
)
async def payments_connect(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, str]]:
    body = await request.body()
    event = _verified_event(body, request.headers.get(SIGNATURE), secrets_of(inbound).connect, "payments-connect")
    account = _text(event.get("account"))
    if account is None:
        raise refused(400, "The event names no connected `account`")
    channel = await inbound.route("account", account)
    obj = event["data"]["object"]
    stored = await inbound.accept(
        channel,
        CONNECT_PROVIDER,
        dedup_key=event["id"],
        body=body,
        content_type="application/json",
        partition_key=f"{channel.channel_id}:{_text(obj.get('id')) or event['id']}",
        details={"type": event["type"], "account": account, "livemode": bool(event.get("livemode"))},
    )
    return accepted(stored)


ROUTES = [payments, payments_connect]
