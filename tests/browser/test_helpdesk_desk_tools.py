"""The agent app's tools beyond the walkthrough (docs/helpdesk.md, "The agent app"), in a browser: a reply with a
file attached, a ticket's tags, its activity timeline, merging a duplicate, a new customer message shown on the open
ticket without a reload (server-sent events), the customers and their page, search, and the inbox by keyboard."""

from __future__ import annotations

import asyncio
import re
import uuid
from email.message import EmailMessage
from email.utils import make_msgid

import pytest
from playwright.async_api import APIResponse, Browser, FilePayload, Route, expect

from tests.browser.test_helpdesk_agent_app import checked, signed_in_page
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import joined_agent, signed_up

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


async def test_an_agent_tags_merges_and_sees_a_new_message_arrive_on_the_open_ticket(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as org:
        first = (
            await org.rest("POST", "/tickets", json={"subject": "Refund", "customer_email": "cy@example.com"})
        ).json()
        duplicate = await org.rest(
            "POST", "/tickets", json={"subject": "Refund again", "customer_email": "cy@example.com"}
        )
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.goto(f"/tickets/{first['id']}")
        await expect(page.get_by_role("heading", name=f"#{first['number']} Refund")).to_be_visible()

        await page.get_by_label("Message").fill("Here is the return label.")
        label: FilePayload = {"name": "label.txt", "mimeType": "text/plain", "buffer": b"RETURN LABEL 42"}
        await page.get_by_label("Attach files (up to 10, 10 MB each)").set_input_files([label])
        await page.get_by_role("button", name="Send reply").click()
        attached = page.get_by_role("list", name="Attachments").get_by_role("link", name="label.txt")
        await expect(attached).to_be_visible()
        fetched = await page.request.get(await attached.get_attribute("href") or "")
        assert (fetched.status, await fetched.body()) == (200, b"RETURN LABEL 42")

        await page.get_by_label("Tags (separated by commas)").fill("billing, vip")
        await page.get_by_role("button", name="Save").click()
        await expect(page.get_by_label("Tags (separated by commas)")).to_have_value("billing, vip")
        activity = page.get_by_role("list", name="Activity")
        await expect(activity).to_contain_text("tagged it billing, vip")

        # A message from the customer arrives while the page is open: it shows without a reload, the draft kept.
        await page.get_by_label("Message").fill("A draft in progress")
        added = await org.rest(
            "POST",
            f"/tickets/{first['id']}/conversations",
            json={"body": "Any news on my refund?", "author_type": "customer"},
        )
        assert added.status_code == 201, added.text
        await expect(page.locator("#thread")).to_contain_text("Any news on my refund?", timeout=15_000)
        await expect(page.get_by_label("Message")).to_have_value("A draft in progress")
        await expect(page.get_by_role("status").filter(has_text="New activity")).to_be_visible()
        await checked(page, "helpdesk-ticket-tools")

        # The duplicate merged into the first: the browser lands on the ticket kept.
        await page.goto(f"/tickets/{duplicate.json()['id']}")
        await page.get_by_label("Merge this ticket into").select_option(first["id"])
        await page.get_by_role("button", name="Merge").click()
        await expect(page).to_have_url(re.compile(f"/tickets/{first['id']}$"))
        merged = (await org.rest("GET", f"/tickets/{duplicate.json()['id']}")).json()
        assert (merged["status"], merged["merged_into_id"]) == ("closed", first["id"])
        assert (await org.rest("GET", f"/tickets/{first['id']}")).json()["tags"] == ["billing", "vip"]
        assert refused == []
        await page.context.close()


async def test_a_live_update_answered_after_the_agents_own_reply_does_not_hide_it(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    """The page's live fetch (after a customer's message) is answered late, once the agent's reply has been sent and
    shown: its copy of the thread is older than the page's, and the reply stays in view."""
    async with signed_up(helpdesk_stack) as org:
        ticket = (
            await org.rest("POST", "/tickets", json={"subject": "Late", "customer_email": "lu@example.com"})
        ).json()
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.goto(f"/tickets/{ticket['id']}")
        held: asyncio.Queue[tuple[Route, APIResponse]] = asyncio.Queue()

        async def hold_live_fetch(route: Route) -> None:
            if route.request.resource_type != "fetch":
                await route.continue_()
                return
            await held.put((route, await route.fetch()))  # the page as it was then, answered later

        await page.route(re.compile(f"/tickets/{ticket['id']}$"), hold_live_fetch)
        added = await org.rest(
            "POST", f"/tickets/{ticket['id']}/conversations", json={"body": "Hello?", "author_type": "customer"}
        )
        assert added.status_code == 201, added.text
        route, stale = await asyncio.wait_for(held.get(), timeout=15)
        await page.get_by_label("Message").fill("Here now.")
        await page.get_by_role("button", name="Send reply").click()
        thread = page.locator("#thread")
        await expect(thread).to_contain_text("Here now.")
        async with page.expect_event("requestfinished", lambda request: request is route.request):
            await route.fulfill(response=stale)
        # the page's handler has read the answer once the tasks queued before this one have run
        await page.evaluate("() => new Promise((done) => setTimeout(done, 0))")
        assert await page.locator("#live-status").text_content() == ""
        await expect(thread).to_contain_text("Here now.")
        await expect(thread).to_contain_text("Hello?")
        assert "Here now." not in await stale.text(), "the held copy is from before the reply"
        assert refused == []
        await page.context.close()


async def test_customers_search_and_the_inbox_by_keyboard(chromium: Browser, helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org:
        for subject, email in (("Broken zipper", "dee@example.com"), ("Late delivery", "eve@example.com")):
            made = await org.rest("POST", "/tickets", json={"subject": subject, "customer_email": email})
            assert made.status_code == 201
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)

        await page.get_by_role("link", name="Customers").click()
        await expect(page.get_by_role("link", name="dee")).to_be_visible()
        await page.get_by_label("Find by email address").fill("eve@example.com")
        await page.get_by_role("button", name="Find").click()
        await expect(page.get_by_role("cell", name="dee@example.com")).to_have_count(0)
        await checked(page, "helpdesk-customers")
        await page.get_by_role("link", name="eve").click()
        await expect(page.get_by_role("link", name="Late delivery")).to_be_visible()
        await checked(page, "helpdesk-customer")

        await page.keyboard.press("/")  # the shortcut to the search box
        await page.keyboard.type("zipper")
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("heading", name="Search")).to_be_visible()
        await page.get_by_role("link", name="Broken zipper").click()
        await expect(page.get_by_role("heading", name=re.compile("Broken zipper"))).to_be_visible()

        await page.get_by_role("link", name="Inbox").click()
        await page.get_by_role("link", name=re.compile(r"^Unassigned \(2\)")).click()
        await page.locator("body").click(position={"x": 5, "y": 300})  # nothing focused: the keys are the page's
        await page.keyboard.press("j")
        await expect(page.get_by_role("link", name="Late delivery")).to_be_focused()
        await page.keyboard.press("j")
        await expect(page.get_by_role("link", name="Broken zipper")).to_be_focused()
        await page.keyboard.press("k")
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("heading", name=re.compile("Late delivery"))).to_be_visible()
        assert refused == []
        await page.context.close()


async def test_an_admin_changes_a_role_and_deactivates_and_reactivates_a_member_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as org, helpdesk_stack.browser() as agent_browser:
        agent = await joined_agent(org, agent_browser)
        made = await org.rest(
            "POST",
            "/tickets",
            json={"subject": "Agent's ticket", "customer_email": "fay@example.com", "assignee_id": agent["id"]},
        )
        assert made.status_code == 201, made.text
        ticket_id = made.json()["id"]
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.goto("/settings/team")
        name = agent["name"]

        await page.get_by_label(f"Role of {name}", exact=True).select_option("admin")
        await page.get_by_role("button", name=f"Change the role of {name}").click()
        await expect(page.get_by_label(f"Role of {name}", exact=True)).to_have_value("admin")
        await checked(page, "helpdesk-settings-team-roles")

        await page.get_by_label(f"Give {name}'s open tickets to").select_option(label="Their tickets to nobody")
        await page.get_by_role("button", name=f"Deactivate {name}").click()
        await expect(page.get_by_role("button", name=f"Reactivate {name}")).to_be_visible()
        assert (await agent_browser.query("auth.getUser")).status_code == 401  # signed out at once
        assert (await org.rest("GET", f"/tickets/{ticket_id}")).json()["assignee_id"] is None
        await page.get_by_role("button", name=f"Reactivate {name}").click()
        await expect(page.get_by_role("button", name=f"Deactivate {name}")).to_be_visible()
        assert refused == []
        await page.context.close()


async def test_an_admin_adds_a_channel_then_makes_its_forwarder_secret_anew_by_clicking(
    chromium: Browser, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as org:
        page, refused = await signed_in_page(chromium, helpdesk_stack, org)
        await page.goto("/settings/channels")
        support = f"desk-{uuid.uuid4().hex[:8]}@example.com"
        await page.get_by_text("Email (inbound mail)", exact=True).click()
        adding = page.locator("details").filter(has_text="Email (inbound mail)")
        await adding.get_by_label("Name").fill("Desk")
        await adding.get_by_label("What routes to it").fill(support)
        await adding.get_by_role("button", name="Add Email (inbound mail) channel").click()
        old = await page.get_by_label("forwarder_secret", exact=True).input_value()

        desk = page.locator(".thread > li").filter(has_text="Desk · Email (inbound mail)")
        await desk.get_by_text("Change Desk", exact=True).click()
        await desk.get_by_label("Acknowledgement (empty: none)").fill("We have your message.")
        await desk.get_by_label("forwarder secret").check()
        await desk.get_by_role("button", name="Save Desk").click()
        await expect(page.get_by_role("status").filter(has_text="Desk is changed")).to_be_visible()
        new = await page.get_by_label("forwarder_secret", exact=True).input_value()
        assert new != old
        await checked(page, "helpdesk-settings-channel-changed")
        assert refused == []
        await page.context.close()

    async def forward(secret: str) -> int:
        mail = EmailMessage()
        mail["From"], mail["To"], mail["Subject"] = "Hal <hal@example.com>", support, "Hello"
        mail["Message-ID"] = make_msgid(domain="example.com")
        mail.set_content("Hi.")
        headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": secret}
        answer = await helpdesk_stack.client.post(
            "/api/webhooks/inbound-email", content=mail.as_bytes(), headers=headers
        )
        return answer.status_code

    assert await forward(old) == 401  # the old secret stopped working
    assert await forward(new) == 200
