"""Paid plans through Stripe: Checkout (`auth.completeSignup`, and a free organization's first paid plan from its
organization page) and the Billing customer portal (where a subscribed organization's admin changes its plan or its
billing: operations/helpdesk/plans.py), with the official `stripe` library on its async HTTP client. The library is
pointed at a configurable API base (`SIGNALYARD_HELPDESK_STRIPE_API_BASE`), so tests run it against a local server
that speaks Stripe's wire format (`tests/peers/stripe.py`).

A workspace's Stripe customer is made once: its idempotency key is derived from the organization id, so a call retried
after a crash between the customer's creation and its storing gets the same customer back. Every call makes a new
Checkout Session for that customer. Any failure of the provider (an error answer, a refused key, a connection that
fails) is `PaymentSetupFailed`, which the procedure answers as INTERNAL_SERVER_ERROR; the secret key never appears in
what is raised or logged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import stripe
import structlog

from storage.common.db import Database
from storage.helpdesk import workspaces

log = structlog.get_logger("signalyard.operations.helpdesk.billing")

DEFAULT_API_BASE: Final = "https://api.stripe.com"
PAID_PLANS: Final = workspaces.PAID_PLANS
CURRENCY: Final = "usd"
AMOUNTS: Final = {"pro": 2900, "business": 9900}
"""The monthly price of each paid plan, in cents, when no Stripe price id is configured for it."""
PRODUCTS: Final = {"pro": "Helpdesk Pro", "business": "Helpdesk Business"}
TIMEOUT_S: Final = 30.0


class PaymentSetupFailed(Exception):
    """The payment provider failed (INTERNAL_SERVER_ERROR); the workspace stays as it was, and a retry resumes."""


@dataclass(frozen=True, slots=True)
class Checkout:
    session_id: str
    url: str


@dataclass(frozen=True, slots=True)
class PortalSession:
    """A Billing customer portal session: where the browser goes (`url`, short-lived, single use), and where the
    portal sends it back (`return_url`)."""

    session_id: str
    url: str
    return_url: str


def customer_idempotency_key(organization_id: str) -> str:
    """One key per workspace: every attempt to make its customer is the same request to Stripe."""
    return f"signalyard-helpdesk-customer-{organization_id}"


class Billing:
    """Stripe Checkout for the paid plans. `prices` maps a plan to a Stripe price id; a plan without one is sold with
    inline `price_data` (AMOUNTS, CURRENCY, monthly, product PRODUCTS). `public_url` is where Checkout sends the
    browser back. The library makes `max_network_retries` retries itself (none by default: the user retries, and
    the workspace is recoverable)."""

    def __init__(
        self,
        api_base: str,
        secret_key: str,
        public_url: str,
        prices: Mapping[str, str] | None = None,
        *,
        max_network_retries: int = 0,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.public_url = public_url.rstrip("/")
        self.prices = dict(prices or {})
        self._secret_key = secret_key
        self._http = stripe.HTTPXClient(timeout=timeout_s, allow_sync_methods=False)
        self._client = stripe.StripeClient(
            secret_key,
            base_addresses={"api": api_base.rstrip("/")},
            http_client=self._http,
            max_network_retries=max_network_retries,
        )

    def __repr__(self) -> str:  # never the key
        return f"Billing(public_url={self.public_url!r}, prices={self.prices!r})"

    async def customer(self, organization_id: str, *, email: str | None, name: str) -> str:
        """The id of the workspace's Stripe customer: made now, or the one an earlier attempt made."""
        params: Any = {"name": name, "metadata": {"organization_id": organization_id}}
        if email:
            params = {"email": email, **params}
        try:
            customer = await self._client.v1.customers.create_async(
                params, {"idempotency_key": customer_idempotency_key(organization_id)}
            )
        except stripe.StripeError as error:
            raise self._failed("customer", organization_id, error) from None
        return str(customer.id)

    async def checkout(
        self,
        organization_id: str,
        customer_id: str,
        plan: str,
        *,
        success_path: str | None = None,
        cancel_path: str | None = None,
    ) -> Checkout:
        """A new Checkout Session in subscription mode for `plan`, for the workspace's customer. It returns to signup
        (`/signup/complete`) unless `success_path` and `cancel_path` (paths of this site) say otherwise."""
        if plan not in PAID_PLANS:
            raise ValueError(f"{plan!r} is not a paid plan")
        success = success_path or "/signup/complete?checkout=success&session_id={CHECKOUT_SESSION_ID}"
        cancel = cancel_path or f"/signup/complete?plan={plan}&checkout=cancelled"
        params: Any = {
            "mode": "subscription",
            "customer": customer_id,
            "line_items": [self._line_item(plan)],
            "success_url": f"{self.public_url}{success}",
            "cancel_url": f"{self.public_url}{cancel}",
            "client_reference_id": organization_id,
            "metadata": {"organization_id": organization_id, "plan": plan},
            "subscription_data": {"metadata": {"organization_id": organization_id, "plan": plan}},
        }
        try:
            session = await self._client.v1.checkout.sessions.create_async(params)
        except stripe.StripeError as error:
            raise self._failed("checkout_session", organization_id, error) from None
        if not session.url:
            raise PaymentSetupFailed(f"Stripe answered checkout session {session.id} without a url")
        return Checkout(str(session.id), str(session.url))

    async def portal(self, organization_id: str, customer_id: str, return_path: str) -> PortalSession:
        """A new Billing customer portal session for the customer, returning to `return_path` (a path of this site).
        What the portal offers (switching between the plans' prices, cancelling, payment methods, invoices) is the
        Stripe account's portal configuration."""
        params: Any = {"customer": customer_id, "return_url": f"{self.public_url}{return_path}"}
        try:
            session = await self._client.v1.billing_portal.sessions.create_async(params)
        except stripe.StripeError as error:
            raise self._failed("billing_portal_session", organization_id, error) from None
        if not session.url:
            raise PaymentSetupFailed(f"Stripe answered billing portal session {session.id} without a url")
        return PortalSession(str(session.id), str(session.url), str(session.return_url or params["return_url"]))

    async def aclose(self) -> None:
        await self._http.close_async()

    def _line_item(self, plan: str) -> dict[str, Any]:
        price = self.prices.get(plan)
        if price:
            return {"price": price, "quantity": 1}
        return {
            "price_data": {
                "currency": CURRENCY,
                "unit_amount": AMOUNTS[plan],
                "recurring": {"interval": "month"},
                "product_data": {"name": PRODUCTS[plan]},
            },
            "quantity": 1,
        }

    def _failed(self, step: str, organization_id: str, error: stripe.StripeError) -> PaymentSetupFailed:
        """Logs what Stripe said (without the key) and gives the one exception the procedure answers."""
        message = error.user_message or str(error) or type(error).__name__
        if self._secret_key:
            message = message.replace(self._secret_key, "[secret key]")
        log.warning(
            "billing_failed",
            step=step,
            organization_id=organization_id,
            error=type(error).__name__,
            http_status=error.http_status,
            code=error.code,
            request_id=error.request_id,
            message=message,
        )
        return PaymentSetupFailed(f"Stripe {step} failed: {type(error).__name__} ({error.http_status or 'no answer'})")


async def checkout_for(
    billing: Billing,
    db: Database,
    organization_id: str,
    plan: str,
    *,
    customer_id: str | None,
    name: str,
    email: str | None,
    success_path: str | None = None,
    cancel_path: str | None = None,
) -> Checkout:
    """A Checkout for the organization's `plan`, for its payment-provider customer `customer_id`, or, when it has
    none yet, one made now (named `name`, mailed at `email`) and stored once (of two racing calls, the first's
    stays). Signup's checkout, and a free organization's from its organization page. PaymentSetupFailed when the
    provider fails."""
    if customer_id is None:
        made = await billing.customer(organization_id, email=email, name=name)
        customer_id = await db.write(workspaces.record_billing_customer, organization_id, made)
    return await billing.checkout(
        organization_id, customer_id, plan, success_path=success_path, cancel_path=cancel_path
    )
