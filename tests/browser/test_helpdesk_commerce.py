"""Connecting a commerce store by the platform's app install, by clicking (docs/helpdesk.md, "Commerce"): the Channels
page, the shop's domain, the link on to the platform (the commerce peer, `tests/peers/commerce.py`, on another port),
its install page, and back on the Channels page with the store connected; the platform then holds exactly the four
subscriptions, and an order it delivers shows on the customer's page. The pages break no rule of their
Content-Security-Policy on the way: the form that names the shop is answered by a page with a link, not by a redirect
to another site, which `form-action 'self'` would block."""

from __future__ import annotations

import random
import re
import uuid

import pytest
from playwright.async_api import Browser, expect

from tests.browser.test_helpdesk_agent_app import checked, signed_in_page
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until
from tests.peers.commerce import CommercePlatform, Registration

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


async def test_an_admin_connects_a_store_by_its_app_install_and_its_orders_come_in(
    chromium: Browser, helpdesk_stack: HelpdeskStack, commerce_platform: CommercePlatform
) -> None:
    commerce_platform.reset()
    tag = uuid.uuid4().hex[:8]
    shop = f"tea-{tag}.myshopify.com"
    async with signed_up(helpdesk_stack) as org:
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.goto("/settings/channels")
        domain = page.get_by_label("Shop domain (such as tea-shop.myshopify.com)")
        await domain.fill(f"tea-{tag}.example.com")
        await page.get_by_role("button", name="Connect store").click()
        await expect(page.get_by_role("alert")).to_contain_text("Give the shop's domain as the platform names it")
        await expect(domain).to_have_attribute("aria-invalid", "true")

        await domain.fill(shop)
        await page.get_by_role("button", name="Connect store").click()
        onward = page.get_by_role("link", name=f"Continue to {shop}")
        await expect(onward).to_be_visible()
        await checked(page, "helpdesk-settings-commerce-connect")
        policy = (await page.request.get("/settings/channels")).headers["content-security-policy"]
        assert "form-action 'self'" in policy  # in force: the way on to the platform is this link
        assert refused == []

        await onward.click()
        await expect(page).to_have_url(re.compile(rf"^{re.escape(commerce_platform.base_url)}/{re.escape(shop)}/"))
        await expect(page.get_by_role("heading", name=f"Install Signalyard Helpdesk in {shop}")).to_be_visible()
        await expect(page.get_by_role("listitem")).to_have_text(["read_orders", "read_customers"])
        await page.get_by_role("button", name="Install app").click()

        await expect(page).to_have_url(re.compile(r"/settings/channels\?connected="))
        await expect(page.get_by_role("status").filter(has_text=f"{shop} is connected")).to_be_visible()
        connected = page.locator(".thread > li").filter(has_text=f"{shop} · Commerce store")
        await expect(connected).to_contain_text(f"Routed by {shop}")
        await expect(connected).to_contain_text("Secrets held: access_token, api_secret, webhook_secret")
        await checked(page, "helpdesk-settings-commerce-connected")
        address = f"{helpdesk_stack.base_url}/api/webhooks/commerce"
        assert commerce_platform.registrations(shop) == [
            Registration(1, "orders/create", address, "json"),
            Registration(2, "orders/updated", address, "json"),
            Registration(3, "customers/create", address, "json"),
            Registration(4, "customers/update", address, "json"),
        ]

        # The platform delivers an order to what was registered: the customer and the order come in.
        email, order_id = f"bo.{tag}@shopper.example", random.randint(10**11, 10**12)
        order = {
            "id": order_id,
            "name": f"#{tag}",
            "order_number": 1001,
            "email": email,
            "total_price": "59.90",
            "currency": "EUR",
            "financial_status": "paid",
            "fulfillment_status": None,
            "created_at": "2026-03-02T09:00:00-05:00",
            "updated_at": "2026-03-02T09:00:00-05:00",
            "line_items": [{"title": "Teapot", "quantity": 2, "price": "29.95"}],
            "customer": {"id": random.randint(10**11, 10**12), "email": email, "first_name": "Bo", "last_name": tag},
        }
        delivered = await commerce_platform.deliver(shop, "orders/create", order)
        assert (delivered.status_code, delivered.json()) == (200, {"status": "accepted"})

        async def customer_id() -> str | None:
            found = (await org.rest("GET", "/customers", params={"email": email})).json()["data"]
            return found[0]["id"] if found else None

        await until(customer_id, "the order's customer made")
        await page.get_by_role("link", name="Customers").click()
        await page.get_by_label("Find by email address").fill(email)
        await page.get_by_role("button", name="Find").click()
        await page.get_by_role("link", name=f"Bo {tag}").click()
        orders = page.get_by_role("list", name="Orders")
        await expect(orders).to_contain_text(f"Order #{tag}: 59.90 EUR · paid · not shipped", timeout=15_000)
        await expect(orders).to_contain_text("2 \u00d7 Teapot")  # 2 times Teapot
        await checked(page, "helpdesk-customer-commerce-order")
        assert refused == []
        await page.context.close()
