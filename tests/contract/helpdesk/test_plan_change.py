"""An admin changes the organization's plan from its page (docs/helpdesk.md, "The agent app" and "Payments";
operations/helpdesk/plans.py), against a local server speaking Stripe's wire format (`tests/peers/stripe.py`): a
subscribed organization's admin gets a customer portal session for its Stripe customer that returns to the
organization page, offered as a link (never a redirect from a form); the plan changes when Stripe's
`customer.subscription.updated` says so; an organization without a subscription is offered a paid plan's Checkout
instead (for its own customer, back to the organization page); an agent is refused both."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from cryptography.fernet import Fernet

from signalyard.secrets import kept
from storage.helpdesk import workspaces
from tests.helpdesk_stack import Browser, HelpdeskGatewayOnly, HelpdeskStack, data
from tests.helpers import Organization, joined_agent, new_organization, until
from tests.peers.stripe import PORTAL_SESSIONS, SESSIONS, StripeServer

SECRET = "whsec_plans_" + "2" * 24


@pytest.fixture
def stripe() -> Iterator[StripeServer]:
    with StripeServer("sk_test_helpdesk_plans") as server:
        yield server


@pytest.fixture
async def billing(
    helpdesk_stack: HelpdeskStack, helpdesk_gateway_only: HelpdeskGatewayOnly, stripe: StripeServer
) -> AsyncIterator[HelpdeskStack]:
    """A gateway whose payment provider is the Stripe peer (its plans sold at the peer's prices, its events signed
    with SECRET), publishing to the shared stack's topics, whose processors apply the events."""
    platform = helpdesk_stack.settings.platform
    async with helpdesk_gateway_only(
        topic_prefix=platform.topic_prefix,
        secret_keys=platform.secret_keys
        or [kept(platform.data_dir, "webhook-secret-key", Fernet.generate_key().decode())],
        helpdesk_stripe_secret_key=stripe.secret_key,
        helpdesk_stripe_api_base=stripe.base_url,
        helpdesk_stripe_webhook_secret=SECRET,
        helpdesk_stripe_price_pro=stripe.plan_prices["pro"],
        helpdesk_stripe_price_business=stripe.plan_prices["business"],
    ) as alone:
        stripe.webhook(f"{alone.base_url}/api/webhooks/payments", SECRET)
        yield alone


async def organization(stack: HelpdeskStack, organization_id: str) -> workspaces.OrganizationRecord:
    found = await stack.db.read(workspaces.organization, organization_id)
    assert found is not None
    return found


async def subscribed(stack: HelpdeskStack, browser: Browser, stripe: StripeServer, plan: str = "pro") -> str:
    """A workspace signed up on a paid plan whose checkout the customer paid, once the helpdesk has it `active`: its
    id."""
    await browser.sign_in()
    made = data(
        await browser.call(
            "auth.completeSignup",
            {"name": "Pat Payer", "organizationName": f"Paying {uuid.uuid4().hex[:6]}", "planTier": plan},
        )
    )
    organization_id = str(made["organization"]["id"])
    [session] = [s for s in stripe.sessions.values() if s["client_reference_id"] == organization_id]
    await stripe.complete_checkout(session["id"])
    assert [delivery.status for delivery in stripe.deliveries] == [200, 200]

    async def active() -> bool:
        return (await organization(stack, organization_id)).billing_status == "active"

    await until(active, "the paid checkout applied")
    return organization_id


async def post_form(browser: Browser, path: str, fields: dict[str, str] | None = None) -> httpx.Response:
    """A form of the organization page posted as the browser posts it (with the page's CSRF token)."""
    shown = await browser.client.get("/settings/organization")
    token = re.search(r'name="_csrf_token" value="([^"]+)"', shown.text)
    assert token, shown.text
    return await browser.client.post(path, data={**(fields or {}), "_csrf_token": token.group(1)})


def link(page: str, name: str) -> str | None:
    found = re.search(rf'<a class="button" href="([^"]+)" hx-boost="false">{re.escape(name)}</a>', page)
    return html.unescape(found.group(1)) if found else None


def alert(page: str) -> str:
    found = re.search(r'<p class="error" role="alert" id="billing-error">([^<]*)</p>', page)
    assert found, page
    return html.unescape(found.group(1))


async def test_a_subscribed_admin_gets_a_portal_session_for_the_organizations_customer_returning_to_its_page(
    billing: HelpdeskStack, stripe: StripeServer
) -> None:
    async with billing.browser() as browser:
        organization_id = await subscribed(billing, browser, stripe)
        shown = await browser.client.get("/settings/organization")
        assert '<button type="submit">Change plan or billing</button>' in shown.text
        assert 'action="/settings/organization/subscribe"' not in shown.text  # no second subscription is sold

        answer = await post_form(browser, "/settings/organization/billing")
        assert answer.status_code == 200, answer.text  # a page with a link: a form may only lead to this site
        [made] = stripe.requests_to(PORTAL_SESSIONS)
        found = await organization(billing, organization_id)
        assert made.authorized
        assert made.params == {
            "customer": found.billing_customer_id,
            "return_url": f"{billing.base_url}/settings/organization",
        }
        [session] = stripe.portal_sessions.values()
        assert session["object"] == "billing_portal.session"
        assert link(answer.text, "Continue to billing") == session["url"]


async def test_the_plan_follows_the_subscription_the_portal_changes(
    billing: HelpdeskStack, stripe: StripeServer
) -> None:
    async with billing.browser() as browser:
        organization_id = await subscribed(billing, browser, stripe, "pro")
        assert (await organization(billing, organization_id)).plan == "pro"
        portal = link((await post_form(browser, "/settings/organization/billing")).text, "Continue to billing")
        assert portal is not None
        async with httpx.AsyncClient() as person:  # the person at the portal: picks the business plan
            page = await person.get(portal)
            assert "Current plan: <strong>Helpdesk Pro</strong>" in page.text
            picked = await person.post(f"{portal}/update", data={"price": stripe.plan_prices["business"]})
        assert (picked.status_code, picked.headers["location"]) == (303, f"{billing.base_url}/settings/organization")
        updated = stripe.deliveries[-1]
        assert (updated.event["type"], updated.status) == ("customer.subscription.updated", 200)

        async def business() -> workspaces.OrganizationRecord | None:
            found = await organization(billing, organization_id)
            return found if found.plan == "business" else None

        found = await until(business, "the subscription's new plan applied")
        assert found.billing_status == "active"
        shown = await browser.client.get("/settings/organization")
        assert "<dt>Plan</dt><dd>business</dd>" in shown.text


async def test_an_organization_without_a_customer_is_offered_a_paid_plans_checkout_instead(
    billing: HelpdeskStack, stripe: StripeServer
) -> None:
    async with billing.browser() as browser:
        org = await new_organization(browser)
        shown = await browser.client.get("/settings/organization")
        assert "Change plan or billing" not in shown.text
        assert "No subscription yet: subscribe to a paid plan" in shown.text

        refused = await post_form(browser, "/settings/organization/billing")
        assert refused.status_code == 412
        assert alert(refused.text) == (
            "This organization has no subscription yet: choose a paid plan to subscribe to one"
        )
        assert stripe.requests_to(PORTAL_SESSIONS) == []

        answer = await post_form(browser, "/settings/organization/subscribe", {"plan": "business"})
        assert answer.status_code == 200, answer.text
        [(customer_id, customer)] = stripe.customers.items()
        assert customer["metadata"] == {"organization_id": org.id}
        [session] = stripe.sessions.values()
        assert link(answer.text, "Continue to payment") == session["url"]
        [made] = stripe.requests_to(SESSIONS)
        assert made.params["line_items"] == [{"price": stripe.plan_prices["business"], "quantity": "1"}]
        assert (made.params["customer"], made.params["client_reference_id"]) == (customer_id, org.id)
        assert made.params["subscription_data"]["metadata"] == {"organization_id": org.id, "plan": "business"}
        assert made.params["success_url"] == f"{billing.base_url}/settings/organization?checkout=success"
        assert made.params["cancel_url"] == f"{billing.base_url}/settings/organization?checkout=cancelled"
        before = await organization(billing, org.id)
        assert (before.plan, before.billing_status, before.billing_customer_id) == ("free", "none", customer_id)

        await stripe.complete_checkout(session["id"])

        async def business() -> workspaces.OrganizationRecord | None:
            found = await organization(billing, org.id)
            return found if (found.plan, found.billing_status) == ("business", "active") else None

        await until(business, "the paid checkout's plan applied")
        shown = await browser.client.get("/settings/organization")
        assert "Change plan or billing" in shown.text


async def test_an_agent_may_not_open_the_portal_or_a_checkout(billing: HelpdeskStack, stripe: StripeServer) -> None:
    async with billing.browser() as admin, billing.browser() as agent:
        organization_id = await subscribed(billing, admin, stripe)
        user = data(await admin.query("auth.getUser"))
        await joined_agent(Organization(billing, admin, organization_id, user["id"], user["email"], "", ""), agent)
        for path, fields in (
            ("/settings/organization/billing", {}),
            ("/settings/organization/subscribe", {"plan": "pro"}),
        ):
            token = re.search(r'name="_csrf_token" value="([^"]+)"', (await agent.client.get("/")).text)
            assert token
            answer = await agent.client.post(path, data={**fields, "_csrf_token": token.group(1)})
            assert answer.status_code == 403, answer.text
            assert "Only an admin of the organization may" in answer.text
        assert stripe.requests_to(PORTAL_SESSIONS) == []
        assert len(stripe.requests_to(SESSIONS)) == 1  # signup's only
