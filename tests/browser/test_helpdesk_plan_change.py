"""Changing the organization's plan by clicking (docs/helpdesk.md, "The agent app" and "Payments"): the organization
page of a subscribed organization, Change plan or billing, the link on to the payment provider's customer portal (the
Stripe peer, `tests/peers/stripe.py`, on another port), another plan picked there, and back on the organization page
(the portal's return URL), which shows the new plan once the subscription's `customer.subscription.updated` is
processed. The pages break no rule of their Content-Security-Policy on the way: the form is answered by a page with
a link, not by a redirect to another site, which `form-action 'self'` would block."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, expect

from tests.browser.test_helpdesk_agent_app import checked, signed_in_page
from tests.contract.helpdesk.test_plan_change import billing, stripe, subscribed
from tests.helpdesk_stack import HelpdeskStack, data
from tests.helpers import Organization, until
from tests.peers.stripe import StripeServer

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
__all__ = ["billing", "stripe"]  # the contract test's fixtures: a gateway whose payment provider is the Stripe peer


async def test_an_admin_changes_the_plan_in_the_billing_portal_and_the_page_shows_it(
    chromium: Browser, billing: HelpdeskStack, stripe: StripeServer
) -> None:
    async with billing.browser() as browser:
        organization_id = await subscribed(billing, browser, stripe, "pro")
        user = data(await browser.query("auth.getUser"))
    org = Organization(billing, browser, organization_id, user["id"], user["email"], "", "")
    page, refused = await signed_in_page(chromium, billing, org)
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_role("link", name="Organization").click()
    plan = page.locator("dl.facts dt:text-is('Plan') + dd")
    await expect(plan).to_have_text("pro")
    await page.get_by_role("button", name="Change plan or billing").click()
    onward = page.get_by_role("link", name="Continue to billing")
    await expect(onward).to_be_visible()
    await checked(page, "helpdesk-settings-organization-billing")
    policy = (await page.request.get("/settings/organization")).headers["content-security-policy"]
    assert "form-action 'self'" in policy  # in force: the way on to the portal is this link
    assert refused == []

    await onward.click()
    await expect(page).to_have_url(re.compile(rf"^{re.escape(stripe.base_url)}/p/session/bps_"))
    await expect(page.get_by_text("Current plan: Helpdesk Pro")).to_be_visible()
    await page.get_by_role("button", name="Switch to Helpdesk Business").click()

    await expect(page).to_have_url(f"{billing.base_url}/settings/organization")
    # The portal sends the browser back at once; the plan shows once the helpdesk has processed Stripe's event (the
    # page has no live updates): the page is reloaded until it shows it.

    async def shows_business() -> bool:
        await page.reload()
        return await plan.inner_text() == "business"

    await until(shows_business, "the organization page showing the new plan", every_s=0.2)
    await expect(plan).to_have_text("business")
    await expect(page.get_by_role("button", name="Change plan or billing")).to_be_visible()
    [updated] = [one for one in stripe.deliveries if one.event["type"] == "customer.subscription.updated"]
    assert updated.status == 200
    await checked(page, "helpdesk-settings-organization-plan-changed")
    assert refused == []
    await page.context.close()
