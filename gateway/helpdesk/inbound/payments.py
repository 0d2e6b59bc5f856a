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

from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
import stripe
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, decoded, fresh, refused
from storage.helpdesk import workspaces
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import BILLING_EVENT, CONNECTED_EVENT, BillingObject, Provider

PATH = "/api/webhooks/payments"
CONNECT_PATH = "/api/webhooks/payments-connect"
PROVIDER: Provider = "payments"
CONNECT_PROVIDER: Provider = "payments_connect"
SIGNATURE = "payment-signature"
TOLERANCE_S = 300
MAX_BODY_BYTES = 1024 * 1024

T = TypeVar("T")


@dataclass(frozen=True)
class StripeWebhookSecrets:
    """The platform's endpoint secrets (`whsec_...`), in `Inbound.providers[PROVIDER]`; None: not configured."""

    payments: str | None = field(default=None, repr=False)
    connect: str | None = field(default=None, repr=False)


def secrets_of(inbound: Inbound) -> StripeWebhookSecrets:
    given = inbound.providers.get(PROVIDER)
    return given if isinstance(given, StripeWebhookSecrets) else StripeWebhookSecrets()


def _verified_event(
    body: bytes, header: str | None, secret: str | None, endpoint: str, decoder: msgspec.json.Decoder[T]
) -> T:
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
    return decoded(decoder, body)


def organization_hint(obj: BillingObject) -> str | None:
    """The organization a billing object names: a checkout session's `client_reference_id`, its metadata's
    `organization_id`, or an invoice's subscription metadata (where checkout put it)."""
    details = (obj.subscription_details, obj.parent.subscription_details if obj.parent else None)
    named = (obj.metadata, *(given.metadata for given in details if given))
    return obj.client_reference_id or next(
        (metadata["organization_id"] for metadata in named if metadata and metadata.get("organization_id")), None
    )


def accepted(stored: bool) -> Response[dict[str, str]]:
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def payments(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[dict[str, str]]:
    body = await request.body()
    secret = secrets_of(inbound).payments
    event = _verified_event(body, request.headers.get(SIGNATURE), secret, "payments", BILLING_EVENT)
    obj = event.data.object
    organization_id = await inbound.db.read(workspaces.billing_organization, organization_hint(obj), obj.customer_id)
    organization_id = organization_id or workspaces.NO_ORGANIZATION
    channel = Routed(workspaces.PLATFORM_PAYMENTS_CHANNEL, organization_id, "payments", {}, {})
    stored = await inbound.accept(
        channel,
        PROVIDER,
        dedup_key=event.id,
        body=body,
        content_type="application/json",
        partition_key=f"{workspaces.PLATFORM_PAYMENTS_CHANNEL}:{organization_id}",
        details={"type": event.type, "livemode": event.livemode},
    )
    return accepted(stored)


@post(
    CONNECT_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200
)
async def payments_connect(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, str]]:
    body = await request.body()
    secret = secrets_of(inbound).connect
    event = _verified_event(body, request.headers.get(SIGNATURE), secret, "payments-connect", CONNECTED_EVENT)
    account = event.account
    if not account:
        raise refused(400, "The event names no connected `account`")
    channel = await inbound.route("account", account)
    stored = await inbound.accept(
        channel,
        CONNECT_PROVIDER,
        dedup_key=event.id,
        body=body,
        content_type="application/json",
        partition_key=f"{channel.channel_id}:{event.data.object.id or event.id}",
        details={"type": event.type, "account": account, "livemode": event.livemode},
    )
    return accepted(stored)


ROUTES = [payments, payments_connect]
