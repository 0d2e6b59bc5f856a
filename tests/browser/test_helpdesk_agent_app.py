"""The helpdesk's agent app in a browser (docs/helpdesk.md, "The agent app"): an admin signs in by a mailed link,
finds a new ticket in the inbox, replies, adds a note and resolves it, by clicking; every page passes axe-core with
no serious or critical violation and breaks no rule of its Content-Security-Policy. Without a valid CSRF token a
form changes nothing, and a member of another organization is shown none of the ticket."""

from __future__ import annotations

import re
import uuid
from email.message import EmailMessage
from email.utils import make_msgid

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy import select

from storage.helpdesk.channels import ADDRESSES
from storage.helpdesk.inbound import EVENTS
from tests.browser.conftest import screenshots, serious_violations
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import Organization, joined_agent, signed_up, until
from tests.peers.receiver import WebhookReceiver, verify_helpdesk

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
"""On the database `signalyard up` serves by default: the pages add no storage of their own."""


async def checked(page: Page, name: str) -> None:
    """The page as it is now passes axe-core and is kept as screenshots."""
    assert await serious_violations(page) == [], page.url
    await screenshots(page, name)


async def signed_in_page(chromium: Browser, stack: HelpdeskStack, org: Organization) -> tuple[Page, list[str]]:
    """A new browser context signed in as the organization's admin through the sign-in page and the mailed link;
    and the Content-Security-Policy reports of its pages (none is expected)."""
    context = await chromium.new_context(base_url=stack.base_url)
    page = await context.new_page()
    refused: list[str] = []
    page.on(
        "console",
        lambda message: (
            refused.append(f"{message.text} at {message.location}")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    await page.goto("/")
    await expect(page).to_have_url(re.compile(r"/sign-in\?next=%2F$"))
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await checked(page, "helpdesk-sign-in")
    await page.get_by_label("Email address for the link").fill(org.admin_email)
    await page.get_by_role("button", name="Email me a sign-in link").click()
    await expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
    await page.goto(await stack.mailed_link(org.admin_email))
    await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    return page, refused


async def test_an_admin_signs_in_by_link_and_replies_notes_and_resolves_a_ticket_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as org:
        earlier = {"subject": "Wrong size", "customer_email": "ada@example.com", "status": "resolved"}
        assert (await org.rest("POST", "/tickets", json=earlier)).status_code == 201
        made = await org.rest(
            "POST", "/tickets", json={"subject": "Parcel never arrived", "customer_email": "ada@example.com"}
        )
        assert made.status_code == 201, made.text
        ticket = made.json()
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await checked(page, "helpdesk-inbox")

        await page.get_by_role("link", name=re.compile(r"^Unassigned \(1\)")).click()
        await page.get_by_role("link", name="Parcel never arrived").click()
        await expect(page.get_by_role("heading", name=f"#{ticket['number']} Parcel never arrived")).to_be_visible()
        await expect(page.get_by_role("list", name="Their other tickets")).to_contain_text("Wrong size (resolved)")

        await page.get_by_label("Message").fill("It left our depot today.\nTracking: <ABC & 123>")
        await page.get_by_role("button", name="Send reply").click()
        reply = page.locator(".thread li").filter(has_text="It left our depot today.")
        await expect(reply).to_contain_text("Tracking: <ABC & 123>")  # escaped, shown as written
        await expect(reply.locator(".state")).to_have_text(re.compile("queued|sent"))
        await page.get_by_label("Message").fill("VIP customer: refund if it is not there by Friday.")
        await page.get_by_role("button", name="Add internal note").click()
        await expect(page.locator(".thread li.internal")).to_contain_text("VIP customer")
        await checked(page, "helpdesk-ticket")

        await page.get_by_label("Status").select_option("resolved")
        await page.get_by_role("button", name="Save").click()
        # saved once the ticket's activity says so: a click elsewhere before then leaves the save's answer unread
        await expect(page.get_by_role("list", name="Activity")).to_contain_text(
            "changed the status from open to resolved"
        )
        await page.get_by_role("link", name="Inbox").click()
        await expect(page.get_by_role("link", name=re.compile(r"^Resolved \(2\)"))).to_be_visible()
        assert refused == []
        await page.context.close()

    # what the clicks did, as the API tells it
    listed = await org.rest("GET", f"/tickets/{ticket['id']}/conversations")
    written = {(item["internal"], item["body"]) for item in listed.json()["data"]}
    assert written == {
        (False, "It left our depot today.\nTracking: <ABC & 123>"),
        (True, "VIP customer: refund if it is not there by Friday."),
    }
    assert (await org.rest("GET", f"/tickets/{ticket['id']}")).json()["status"] == "resolved"


async def test_a_wrong_password_is_refused_beside_the_form_and_the_right_one_signs_in(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as org:
        assert (await org.browser.call("auth.setPassword", {"password": "correct horse"})).status_code == 200
        context = await chromium.new_context(base_url=helpdesk_stack.base_url)
        page = await context.new_page()
        await page.goto("/tickets/00000000-0000-4000-8000-000000000000")
        await page.get_by_label("Email address", exact=True).fill(org.admin_email)
        await page.get_by_label("Password").fill("wrong horse")
        await page.get_by_role("button", name="Sign in", exact=True).click()
        await expect(page.get_by_role("alert")).to_have_text("Invalid email or password")
        await expect(page.get_by_label("Email address", exact=True)).to_have_attribute("aria-invalid", "true")
        assert await serious_violations(page) == []
        await page.get_by_label("Password").fill("correct horse")
        await page.get_by_role("button", name="Sign in", exact=True).click()
        # on to the page asked for before signing in: a ticket of no one's
        await expect(page.get_by_role("alert")).to_have_text(re.compile("No ticket"))
        await context.close()


async def test_a_form_without_its_csrf_token_changes_nothing_and_another_organization_sees_no_ticket(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with signed_up(helpdesk_stack) as org, signed_up(helpdesk_stack) as other:
        made = await org.rest("POST", "/tickets", json={"subject": "Invoice", "customer_email": "bo@example.com"})
        ticket_id = made.json()["id"]
        client = org.browser.client
        shown = await client.get(f"/tickets/{ticket_id}")
        assert shown.status_code == 200
        assert "Invoice" in shown.text
        assert "default-src 'self'" in shown.headers["content-security-policy"]

        forged = await client.post(f"/tickets/{ticket_id}/conversations", data={"body": "forged", "kind": "reply"})
        assert forged.status_code == 403
        assert "nothing was changed" in forged.text
        token = re.search(r'name="_csrf_token" value="([^"]+)"', shown.text)
        assert token is not None
        wrong = {"body": "forged", "kind": "reply", "_csrf_token": token.group(1)[:-4] + "AAAA"}
        assert (await client.post(f"/tickets/{ticket_id}/conversations", data=wrong)).status_code == 403
        listed = await org.rest("GET", f"/tickets/{ticket_id}/conversations")
        assert listed.json()["data"] == [], "nothing was written"

        elsewhere = await other.browser.client.get(f"/tickets/{ticket_id}")
        assert elsewhere.status_code == 404
        assert "Invoice" not in elsewhere.text
        assert (await client.get("/dashboard")).headers["location"] == "/", "the contract's redirectPath"
        inbox = await other.browser.client.get("/?view=unassigned")
        assert inbox.status_code == 200
        assert "Invoice" not in inbox.text


async def test_an_admin_invites_an_agent_makes_and_revokes_a_key_and_tests_a_webhook_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack, plain_receiver: WebhookReceiver
) -> None:
    async with signed_up(helpdesk_stack) as org:
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.get_by_role("link", name="Settings").click()
        await expect(page.get_by_role("heading", name="Settings: team")).to_be_visible()
        await page.get_by_label("Email address").fill("new.agent@example.com")
        await page.get_by_role("button", name="Send invitation").click()
        await expect(page.get_by_role("status")).to_have_text("Invitation sent to new.agent@example.com.")
        await expect(page.get_by_role("cell", name="new.agent@example.com")).to_be_visible()
        assert "/auth/invite?token=" in await helpdesk_stack.mailed_invitation("new.agent@example.com")
        await checked(page, "helpdesk-settings-team")

        await page.get_by_role("link", name="API keys").click()
        await page.get_by_label("Name").fill("Zapier")
        await page.get_by_role("button", name="Make key").click()
        key = await page.get_by_label("Key", exact=True).input_value()
        assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 200, "the key shown works"
        await checked(page, "helpdesk-settings-keys")
        await page.get_by_role("button", name="Revoke Zapier").click()
        await expect(page.get_by_role("cell", name="revoked")).to_be_visible()
        assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 401, "revoked at once"
        assert key not in await page.content(), "the key is shown once"

        path = plain_receiver.new_path(secret="page-s3cret", verify=verify_helpdesk)
        await page.get_by_role("link", name="Webhooks").click()
        await page.get_by_label("URL").fill(plain_receiver.url(path))
        await page.get_by_label("Secret (optional: deliveries are signed with it)").fill("page-s3cret")
        await page.get_by_label("ticket.created").check()
        await page.get_by_role("button", name="Add webhook").click()
        await page.get_by_role("button", name=f"Send a test delivery to {plain_receiver.url(path)}").click()
        await expect(page.get_by_role("status")).to_contain_text("the receiver answered 200")
        [delivery] = plain_receiver.received(path)
        assert delivery.verified
        assert delivery.json["event"] == "webhook.test"
        await page.goto("/settings/webhooks")  # the delivery in the subscription's recent deliveries
        recent = page.get_by_role("table", name="Recent deliveries")
        await expect(recent.get_by_role("row").filter(has_text="webhook.test")).to_contain_text("HTTP 200")
        await checked(page, "helpdesk-settings-webhooks")

        # A subscription turned off (over the API here) is turned on again from the page.
        off = await org.rest(
            "POST",
            "/webhooks",
            json={"url": plain_receiver.url(plain_receiver.new_path()), "events": ["ticket.created"], "enabled": False},
        )
        assert off.status_code == 201, off.text
        await page.goto("/settings/webhooks")
        await page.get_by_role("button", name=f"Turn on the webhook to {off.json()['url']} again").click()
        await expect(
            page.get_by_role("button", name=f"Turn on the webhook to {off.json()['url']} again")
        ).to_have_count(0)
        listed = (await org.rest("GET", "/webhooks")).json()["data"]
        assert [hook["status"] for hook in listed if hook["id"] == off.json()["id"]] == ["active"]
        assert refused == []
        await page.context.close()


async def test_an_agent_is_told_that_only_an_admin_manages_settings(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org, helpdesk_stack.browser() as browser:
        await joined_agent(org, browser)
        for path in (
            "/settings/organization",
            "/settings/team",
            "/settings/keys",
            "/settings/webhooks",
            "/settings/channels",
        ):
            shown = await browser.client.get(path)
            assert shown.status_code == 403, path
            assert "Only an admin of the organization may" in shown.text
        page = await browser.client.get("/settings/keys")
        token = re.search(r'name="_csrf_token" value="([^"]+)"', page.text)
        assert token is not None
        made = await browser.client.post("/settings/keys", data={"name": "mine", "_csrf_token": token.group(1)})
        assert made.status_code == 403
        assert "hd_" not in made.text
        listed = (await org.browser.query("apiKeys.list")).json()
        assert "mine" not in str(listed), "no key was made"


async def test_a_new_person_signs_in_by_link_and_makes_their_workspace_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    email = f"founder.{uuid.uuid4().hex[:10]}@example.com"
    context = await chromium.new_context(base_url=helpdesk_stack.base_url)
    page = await context.new_page()
    await page.goto("/sign-in")
    await page.get_by_label("Email address for the link").fill(email)
    await page.get_by_role("button", name="Email me a sign-in link").click()
    await expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()  # the link is mailed by then
    await page.goto(await helpdesk_stack.mailed_link(email))
    await expect(page.get_by_role("heading", name="Make your workspace")).to_be_visible()
    await checked(page, "helpdesk-signup")
    await page.get_by_label("Your name").fill("Fay Founder")
    await page.get_by_label("Organization").fill("Fay's Bikes")
    await page.get_by_label("Pro").check()
    await page.get_by_role("button", name="Make workspace").click()
    await expect(page.get_by_role("alert")).to_have_text(
        "The pro plan needs a payment provider, and none is configured"
    )
    await page.get_by_label("Free").check()
    await page.get_by_role("button", name="Make workspace").click()
    await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    await page.goto("/signup/complete")  # made once: signup is behind them
    await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_role("link", name="Organization").click()
    await expect(page.get_by_role("heading", name="Fay's Bikes")).to_be_visible()
    await expect(page.get_by_role("definition").filter(has_text="none (a free plan)")).to_be_visible()
    await checked(page, "helpdesk-settings-organization")
    await page.get_by_role("link", name="Team").click()
    await expect(page.get_by_role("cell", name="Fay Founder (you)")).to_be_visible()
    await expect(page.get_by_label("Role of Fay Founder", exact=True)).to_have_value("admin")
    await context.close()


async def test_the_walkthrough_from_signup_to_a_resolved_mailed_in_ticket_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    """docs/helpdesk.md, "The agent app": a new person makes their workspace, a customer's mail arrives through the
    forwarder, and the admin assigns it to themself, replies, notes and resolves it."""
    email = f"owner.{uuid.uuid4().hex[:10]}@example.com"
    context = await chromium.new_context(base_url=helpdesk_stack.base_url)
    page = await context.new_page()
    await page.goto("/")
    await page.get_by_label("Email address for the link").fill(email)
    await page.get_by_role("button", name="Email me a sign-in link").click()
    await expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()  # the link is mailed by then
    await page.goto(await helpdesk_stack.mailed_link(email))
    await page.get_by_label("Your name").fill("Olu Owner")
    await page.get_by_label("Organization").fill("Olu's Printers")
    await page.get_by_role("button", name="Make workspace").click()
    await expect(page.get_by_role("link", name=re.compile(r"^Unassigned \(0\)"))).to_be_visible()

    # The admin adds the support address as an email channel, and gives its forwarder the secret shown once.
    support = f"help-{uuid.uuid4().hex[:8]}@example.com"
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_role("link", name="Channels").click()
    await page.get_by_text("Email (inbound mail)", exact=True).click()
    email_form = page.locator("details").filter(has_text="Email (inbound mail)")
    await email_form.get_by_label("Name").fill("Support")
    await email_form.get_by_label("What routes to it").fill(support)
    await email_form.get_by_role("button", name="Add Email (inbound mail) channel").click()
    await expect(page.get_by_role("heading", name="Support is ready")).to_be_visible()
    ready = page.get_by_role("status").filter(has_text="Support is ready")
    await expect(ready).to_contain_text(f"{helpdesk_stack.base_url}/api/webhooks/inbound-email")
    secret = await page.get_by_label("forwarder_secret", exact=True).input_value()
    await checked(page, "helpdesk-settings-channels")
    await page.get_by_role("link", name="Inbox").click()
    # the inbox shown before the mail is sent: a reload while the click's navigation is still under way reloads the
    # settings page, which would then be reloaded for ever
    await expect(page.get_by_role("link", name=re.compile(r"^Unassigned \(0\)"))).to_be_visible()
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "Grace Hopper <grace@example.com>", support, "Printer on fire"
    mail["Message-ID"] = make_msgid(domain="example.com")
    mail.set_content("It is on fire. Again.")
    headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": secret}
    forwarded = await helpdesk_stack.client.post(
        "/api/webhooks/inbound-email", content=mail.as_bytes(), headers=headers
    )
    assert forwarded.status_code == 200, forwarded.text

    async def arrived() -> bool:
        await page.reload()
        return await page.get_by_role("link", name=re.compile(r"^Unassigned \(1\)")).count() == 1

    try:
        await until(arrived, "the mailed-in ticket in the inbox", timeout_s=30, every_s=0.3)
    except AssertionError as late:  # say where the mail is: stored but not published (pending), or what it became
        raise AssertionError(f"{late}; the mail's inbound event: {await mailed_in(helpdesk_stack, support)}") from None
    await page.get_by_role("link", name=re.compile(r"^Unassigned \(1\)")).click()
    await page.get_by_role("link", name="Printer on fire").click()
    await expect(page.locator(".thread li").filter(has_text="Customer")).to_contain_text("It is on fire. Again.")
    await page.get_by_label("Assignee").select_option(label="Olu Owner (you)")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_label("Assignee")).to_have_value(re.compile(".+"))
    await page.get_by_label("Message").fill("We are sending a technician.")
    await page.get_by_role("button", name="Send reply").click()
    reply = page.locator(".thread li").filter(has_text="We are sending a technician.")
    await expect(reply).to_contain_text("to grace@example.com")
    await page.get_by_label("Message").fill("Third fire this month.")
    await page.get_by_role("button", name="Add internal note").click()
    await expect(page.locator(".thread li.internal")).to_contain_text("Third fire this month.")
    await page.get_by_label("Status").select_option("resolved")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("list", name="Activity")).to_contain_text("changed the status from open to resolved")
    await page.get_by_role("link", name="Inbox").click()
    await expect(page.get_by_role("link", name=re.compile(r"^Mine \(0\)"))).to_be_visible()
    await expect(page.get_by_role("link", name=re.compile(r"^Resolved \(1\)"))).to_be_visible()
    await context.close()


async def test_a_member_sets_a_password_signs_in_with_it_and_resets_it_by_mail_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as org:
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.get_by_role("link", name="Profile").click()
        await page.get_by_label("Your name (customers see it on your replies)").fill("Ada Admin")
        await page.get_by_role("button", name="Save profile").click()
        await expect(page.get_by_role("status")).to_have_text("Your profile is saved.")
        await expect(page.get_by_label("Your name (customers see it on your replies)")).to_have_value("Ada Admin")
        await checked(page, "helpdesk-profile")
        assert (await org.browser.query("auth.getUser")).json()["result"]["data"]["json"]["name"] == "Ada Admin"
        await page.get_by_role("link", name="Change your password").click()
        await expect(page.get_by_role("heading", name="Set a password")).to_be_visible()
        await page.get_by_label("New password").fill("first long password")
        await page.get_by_role("button", name="Save password").click()
        await expect(page.get_by_role("status")).to_have_text("Your password is saved.")
        await expect(page.get_by_role("heading", name="Change your password")).to_be_visible()
        await checked(page, "helpdesk-password")
        await page.get_by_label("Current password").fill("not it at all")
        await page.get_by_label("New password").fill("second long password")
        await page.get_by_role("button", name="Save password").click()
        await expect(page.get_by_role("alert")).to_have_text("The current password is wrong")

        await page.get_by_role("button", name="Sign out").click()
        await page.get_by_label("Email address for the reset link").fill(org.admin_email)
        await page.get_by_role("button", name="Email me a reset link").click()
        await expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
        await page.goto(await helpdesk_stack.mailed_link(org.admin_email))
        await expect(page.get_by_role("status")).to_have_text("Choose a new password.")
        await page.get_by_label("New password").fill("third long password")
        await page.get_by_role("button", name="Save password").click()
        await expect(page.get_by_role("status")).to_have_text("Your password is saved.")

        await page.get_by_role("button", name="Sign out").click()
        await page.get_by_label("Email address", exact=True).fill(org.admin_email)
        await page.get_by_label("Password", exact=True).fill("third long password")
        await page.get_by_role("button", name="Sign in", exact=True).click()
        await expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
        assert refused == []
        await page.context.close()


async def mailed_in(stack: HelpdeskStack, address: str) -> list[dict[str, object]]:
    """The inbound events that came to `address`: their state, outcome and times, as the table holds them."""
    columns = (EVENTS.c.state, EVENTS.c.outcome, EVENTS.c.created_at, EVENTS.c.published_at, EVENTS.c.processed_at)
    channel = select(ADDRESSES.c.channel_id).where(ADDRESSES.c.address == address).scalar_subquery()
    query = select(*columns).where(EVENTS.c.channel_id == channel)
    rows = await stack.db.read(lambda connection: connection.execute(query).all())
    return [dict(row._mapping) for row in rows]
