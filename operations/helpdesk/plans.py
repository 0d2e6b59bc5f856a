"""Changing an organization's plan (docs/helpdesk.md, "The agent app" and "Payments"), for its admins, the Stripe
way: a subscribed organization's admin is sent to the payment provider's customer portal (`billing_portal`), where the
plan, the payment method and the invoices are; an organization with no subscription (a free plan that never checked
out, or one whose subscription ended) gets a Checkout for a paid plan (`subscribe`: the same Stripe calls as signup's
checkout, returning to the organization page). Neither writes the plan: it changes when the provider's subscription
events say so (`customer.subscription.updated`, `checkout.session.completed`: processors/helpdesk/inbound/payments.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec

from operations.common.actors import Actor
from operations.common.errors import Conflict, Precondition, ProviderRefused
from operations.helpdesk import team
from operations.helpdesk.billing import Billing, Checkout, PaymentSetupFailed, PortalSession, checkout_for
from operations.helpdesk.desk import Helpdesk
from storage.helpdesk import accounts, workspaces

RETURN_PATH = "/settings/organization"
"""Where the portal and a Checkout send the browser back: the organization page."""
CHECKOUT_SUCCESS_PATH = f"{RETURN_PATH}?checkout=success"
CHECKOUT_CANCEL_PATH = f"{RETURN_PATH}?checkout=cancelled"
MANAGE = "change the organization's plan or billing"
SUBSCRIBED = (workspaces.BILLING_ACTIVE, workspaces.BILLING_PAST_DUE)
"""A live subscription: the portal changes it, and a second one is not sold."""
PORTAL = (*SUBSCRIBED, workspaces.BILLING_CANCELED)
"""The states whose customer the portal shows something to (a subscription, or an ended one's invoices)."""
NO_PROVIDER = (
    "No payment provider is configured here, so plans cannot be changed in the app: the operator sets "
    "SIGNALYARD_HELPDESK_STRIPE_SECRET_KEY"
)


class Subscribe(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    plan: Annotated[Literal["pro", "business"], msgspec.Meta(description="A paid plan: pro or business")]


@dataclass(frozen=True, slots=True)
class PlanOffer:
    """What the organization page offers: the portal (a subscribed organization, or an ended subscription's
    invoices), a Checkout for a paid plan (no live subscription), or neither (no payment provider)."""

    portal: bool
    checkout: bool
    provider: bool


def offer(desk: Helpdesk, found: workspaces.OrganizationRecord) -> PlanOffer:
    """What the organization page offers `found`'s admins to change its plan (no call to the provider)."""
    if desk.billing is None:
        return PlanOffer(portal=False, checkout=False, provider=False)
    portal = _portal_customer(found) is not None
    return PlanOffer(portal=portal, checkout=found.billing_status not in SUBSCRIBED, provider=True)


def _portal_customer(found: workspaces.OrganizationRecord) -> str | None:
    """The organization's customer at the provider when its customer portal has something to show them, else None."""
    return found.billing_customer_id if found.billing_status in PORTAL else None


async def _organization(desk: Helpdesk, actor: Actor) -> tuple[Billing, workspaces.OrganizationRecord]:
    found = await team.organization(desk, actor, to=MANAGE)
    if desk.billing is None:
        raise Precondition(NO_PROVIDER)
    return desk.billing, found


def _failed() -> ProviderRefused:
    return ProviderRefused("The payment provider did not answer as it should: nothing changed, try again in a moment")


async def billing_portal(desk: Helpdesk, actor: Actor) -> PortalSession:
    """A new customer portal session for the organization's payment-provider customer (admins), which returns to the
    organization page. An organization without a customer, or whose checkout never completed, has nothing there: it
    is refused (PRECONDITION_FAILED) with what to do instead."""
    billing, found = await _organization(desk, actor)
    customer_id = _portal_customer(found)
    if customer_id is None:
        raise Precondition("This organization has no subscription yet: choose a paid plan to subscribe to one")
    try:
        return await billing.portal(found.id, customer_id, RETURN_PATH)
    except PaymentSetupFailed:
        raise _failed() from None


async def subscribe(desk: Helpdesk, actor: Actor, given: Subscribe) -> Checkout:
    """A Checkout for a paid plan (admins of an organization without a live subscription: a free one, or one whose
    subscription ended), for the organization's payment-provider customer (made now, once, as signup makes it; or the
    one it has), which returns to the organization page. The plan is the organization's once the provider says the
    checkout is paid."""
    billing, found = await _organization(desk, actor)
    if found.billing_status in SUBSCRIBED:
        raise Conflict("This organization has a subscription: change its plan with Change plan or billing")
    user = await desk.db.read(accounts.user_by_id, actor.user_id) if actor.user_id else None
    try:
        return await checkout_for(
            billing,
            desk.db,
            found.id,
            given.plan,
            customer_id=found.billing_customer_id,
            name=found.name,
            email=user.email if user else None,
            success_path=CHECKOUT_SUCCESS_PATH,
            cancel_path=CHECKOUT_CANCEL_PATH,
        )
    except PaymentSetupFailed:
        raise _failed() from None
