"""Photo's dashboard in a browser (docs/photo.md, "The dashboard"): a new customer signs up by a mailed link and gets
a sandbox key, signs in with that key, makes and revokes a key, adds a webhook endpoint, verifies a photo, reviews
it, and the endpoint receives `verification.reviewed`, all by clicking; every page passes axe-core and breaks no rule
of its Content-Security-Policy. A session made from a key ends with that key, and no page shows another account's
verification. And a self-inspection's recipient takes their photo with the camera (Chromium's fake device filming a
portrait), checks it and sends it, and the account's endpoint receives `inspection.submitted`."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from storage.common import mail
from tests.browser.conftest import PORTRAIT, screenshots, serious_violations
from tests.integration.test_photo_outbox import gateway_alone, pending
from tests.peers.receiver import WebhookReceiver
from tests.photo_stack import PhotoStack
from topics.photo import VerificationRequested, partition_key

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
"""On the database `signalyard up` serves by default: the pages add no storage of their own."""


async def checked(page: Page, name: str) -> None:
    """The page as it is now passes axe-core and is kept as screenshots."""
    assert await serious_violations(page) == [], page.url
    await screenshots(page, name)


async def browser(chromium: Browser, stack: PhotoStack) -> tuple[BrowserContext, Page, list[str]]:
    """A new browser context at the photo gateway, and the Content-Security-Policy reports of its pages."""
    context = await chromium.new_context(base_url=stack.base_url)
    page = await context.new_page()
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    return context, page, refused


async def mailed_link(stack: PhotoStack, email: str) -> str:
    (kept, *_) = await stack.db.read(mail.kept_mails, "photo", email)
    found = re.search(r"https?://\S+/dashboard/link\?token=\S+", kept.body)
    assert found, kept.body
    return found.group(0)


async def sign_in_with_key(page: Page, key: str) -> None:
    await page.goto("/dashboard/sign-in")
    await page.get_by_label("A full key").fill(key)
    await page.get_by_role("button", name="Sign in with the key").click()
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()


async def test_a_customer_signs_up_by_mail_and_works_with_keys_webhooks_verifications_and_reviews(
    chromium: Browser, photo_stack: PhotoStack, receiver: WebhookReceiver
) -> None:
    email = f"ada.{uuid.uuid4().hex[:8]}@example.com"
    context, page, refused = await browser(chromium, photo_stack)

    # Sign up: the mailed link makes the account and shows its sandbox key once.
    await page.goto("/dashboard")
    await expect(page).to_have_url(re.compile(r"/dashboard/sign-in\?next=%2Fdashboard$"))
    await checked(page, "photo-sign-in")
    await page.get_by_label("Email address").fill(email)
    await page.get_by_role("button", name="Email me a sign-in link").click()
    await expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
    await page.goto(await mailed_link(photo_stack, email))
    await expect(page.get_by_role("heading", name="Your account is ready")).to_be_visible()
    sandbox_key = await page.get_by_label("Sandbox key").input_value()
    assert sandbox_key.startswith("pc_test_")
    await checked(page, "photo-welcome")
    await page.get_by_role("link", name="Go to the dashboard").click()
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    await expect(page.get_by_text("Your account is sandbox-only")).to_be_visible()
    await checked(page, "photo-overview")
    assert (await photo_stack.call(sandbox_key, "GET", "/api/v1/api-keys")).status_code == 200

    # Sign out, and in again with the key.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in or sign up")).to_be_visible()
    await sign_in_with_key(page, sandbox_key)
    await expect(page.get_by_text("signed in with a key")).to_be_visible()

    # A key made and revoked.
    await page.get_by_role("link", name="API keys").click()
    await page.get_by_label("Name").fill("Checkout service")
    await page.get_by_role("button", name="Make key").click()
    made = await page.get_by_label("Key", exact=True).input_value()
    assert made.startswith("pc_test_")
    assert (await photo_stack.call(made, "GET", "/api/v1/api-keys")).status_code == 200
    await checked(page, "photo-keys")
    await page.get_by_role("button", name="Revoke Checkout service").click()
    row = page.get_by_role("row").filter(has_text="Checkout service")
    await expect(row.get_by_role("cell", name="revoked")).to_be_visible()
    assert (await photo_stack.call(made, "GET", "/api/v1/api-keys")).status_code == 401

    # A webhook endpoint, its secret shown once.
    path = receiver.new_path()
    await page.get_by_role("link", name="Webhooks").click()
    await page.get_by_label("HTTPS URL").fill(receiver.url(path))
    await page.get_by_label("verification.reviewed").check()
    await page.get_by_role("button", name="Add endpoint").click()
    secret = await page.get_by_label("Signing secret").input_value()
    assert secret.startswith("whsec_")
    receiver.expect_secret(path, secret)
    await checked(page, "photo-webhooks")

    # A photo verified, then reviewed the other way.
    await photo_stack.wait_for_processors()
    await page.get_by_role("link", name="Verify a photo").click()
    await checked(page, "photo-verify")
    await page.get_by_label("Photo (JPEG, PNG or WebP").set_input_files(Path(PORTRAIT))
    await page.get_by_label("Policy").select_option("profile_photo")
    await page.get_by_role("button", name="Verify").click()
    await expect(page.get_by_role("heading", name="Checks")).to_be_visible()
    verification_id = page.url.rsplit("/", 1)[1]
    judged = (await photo_stack.call(sandbox_key, "GET", f"/api/v1/verifications/{verification_id}")).json()
    await expect(page.get_by_role("img", name=f"The photo submitted for {verification_id}")).to_be_visible()
    await checked(page, "photo-verification")

    await page.get_by_role("link", name="Review queue").click()
    await expect(page.get_by_text("1 verification waiting")).to_be_visible()
    await checked(page, "photo-review-queue")
    await page.get_by_role("link", name=verification_id).click()
    other = "Not compliant" if judged["is_compliant"] else "Compliant"
    await page.get_by_label(other, exact=True).check()
    await page.get_by_label("Note (optional)").fill("Checked by hand")
    await page.get_by_role("button", name="Record the review").click()
    await expect(page.get_by_text("0 verifications waiting")).to_be_visible()

    [delivery] = await receiver.wait_for(path, 1)
    assert delivery.verified
    assert delivery.json["type"] == "verification.reviewed"
    assert delivery.json["data"]["id"] == verification_id
    assert delivery.json["data"]["is_compliant"] is not judged["is_compliant"]
    assert delivery.json["data"]["review"]["note"] == "Checked by hand"

    # The history filters, and the endpoint's delivery in view.
    await page.get_by_role("link", name="Verifications").click()
    await page.get_by_label("Reviewed").select_option("yes")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.get_by_role("link", name=verification_id)).to_be_visible()
    await checked(page, "photo-verifications")
    await page.get_by_role("link", name="Webhooks").click()
    await expect(page.get_by_role("cell", name=re.compile("^verification.reviewed"))).to_be_visible()
    assert refused == []
    await context.close()


async def test_a_session_made_from_a_key_ends_when_the_key_is_revoked(
    chromium: Browser, photo_stack: PhotoStack
) -> None:
    customer = await photo_stack.new_customer()
    context, page, _ = await browser(chromium, photo_stack)
    await sign_in_with_key(page, customer.test_key)
    key_id = (await photo_stack.call(customer.test_key, "GET", "/api/v1/api-keys")).json()["data"]
    [sandbox] = [key for key in key_id if key["name"] == "sandbox"]
    assert (await photo_stack.call(customer.live_key, "DELETE", f"/api/v1/api-keys/{sandbox['id']}")).status_code == 200
    await page.get_by_role("link", name="API keys").click()
    await expect(page).to_have_url(re.compile(r"/dashboard/sign-in\?next=%2Fdashboard%2Fkeys$"))

    # A verify-only key, or one that is not a key, signs nothing in.
    for key, said in (("pc_test_" + "0" * 40, "unknown, revoked or expired"), (customer.live_key + "x", "unknown")):
        await page.get_by_label("A full key").fill(key)
        await page.get_by_role("button", name="Sign in with the key").click()
        await expect(page.get_by_role("alert")).to_contain_text(said)
    await context.close()


async def test_a_page_never_shows_another_accounts_verification_and_a_form_needs_its_token(
    chromium: Browser, photo_stack: PhotoStack
) -> None:
    await photo_stack.wait_for_processors()
    owner, stranger = await photo_stack.new_customer(), await photo_stack.new_customer()
    image = PORTRAIT.read_bytes()
    verified = (await photo_stack.verify(owner.test_key, image, policy="profile_photo")).json()
    context, page, _ = await browser(chromium, photo_stack)
    await sign_in_with_key(page, stranger.test_key)
    response = await page.goto(f"/dashboard/verifications/{verified['id']}")
    assert response is not None
    assert response.status == 404
    await expect(page.get_by_role("alert")).to_have_text("No verification with that id on this account")
    await expect(page.get_by_role("img")).to_have_count(0)

    # A review posted without the page's CSRF token changes nothing.
    posted = await context.request.post(
        f"/dashboard/verifications/{verified['id']}/review", form={"verdict": "compliant"}
    )
    assert posted.status == 403
    fetched = (await photo_stack.call(owner.test_key, "GET", f"/api/v1/verifications/{verified['id']}")).json()
    assert fetched["review"] is None
    await context.close()


async def test_a_recipient_takes_checks_and_sends_their_photo_with_the_camera(
    chromium: Browser, camera_chromium: Browser, photo_stack: PhotoStack, receiver: WebhookReceiver
) -> None:
    await photo_stack.wait_for_processors()
    customer = await photo_stack.new_customer()
    path = await photo_stack.subscribe(customer.test_key, receiver, ["inspection.submitted"])

    # The account asks for a photo from the dashboard, and copies the link it is shown once.
    owner, dashboard, _ = await browser(chromium, photo_stack)
    await sign_in_with_key(dashboard, customer.test_key)
    await dashboard.get_by_role("link", name="Self-inspections").click()
    await dashboard.get_by_label("Policy").select_option("profile_photo")
    await dashboard.get_by_label("Your reference (optional)").fill("guest-12")
    await dashboard.get_by_role("button", name="Make the link").click()
    link = await dashboard.get_by_label("Link", exact=True).input_value()
    await checked(dashboard, "photo-inspections")
    [inspection] = (await photo_stack.call(customer.test_key, "GET", "/api/v1/inspections")).json()["data"]
    assert link.startswith(f"{photo_stack.base_url}/inspect/pc_inspect_")
    inspection["url"] = link

    context = await camera_chromium.new_context(base_url=photo_stack.base_url, permissions=["camera"])
    page = await context.new_page()
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    await page.goto(inspection["url"])
    await expect(page.get_by_role("heading", name="Your photo")).to_be_visible()
    await expect(page.get_by_role("button", name="Take photo")).to_be_visible()  # the camera answered
    video = page.get_by_label("What your camera sees")
    for _ in range(200):  # its first frame (a function waited for in the page would be eval, which the policy forbids)
        if await video.evaluate("video => video.videoWidth") > 0:
            break
        await asyncio.sleep(0.05)
    await checked(page, "photo-inspection")
    await page.get_by_role("button", name="Take photo").click()
    await expect(page.get_by_role("img", name="The photo you took")).to_be_visible()
    await page.get_by_role("button", name="Check my photo").click()
    feedback = page.locator("#feedback")
    await expect(feedback).to_contain_text(re.compile("This photo (passes every check|would not pass yet)"))
    await checked(page, "photo-inspection-feedback")
    await page.get_by_role("button", name="Send my photo").click()
    await expect(page.get_by_role("heading", name="Thank you: your photo is sent")).to_be_visible()
    await checked(page, "photo-inspection-sent")

    [delivery] = await receiver.wait_for(path, 1)
    assert delivery.verified
    assert delivery.json["type"] == "inspection.submitted"
    data = delivery.json["data"]
    assert (data["id"], data["status"], data["reference"]) == (inspection["id"], "submitted", "guest-12")
    assert data["verification"]["status"] == "completed"
    assert data["verification"]["policy"] == "profile_photo"

    await page.goto(inspection["url"])  # the link is used
    await expect(page.get_by_role("alert")).to_have_text(
        "This inspection was submitted already: nothing more can be sent with this link"
    )
    assert refused == []
    await context.close()
    await dashboard.reload()
    row = dashboard.get_by_role("row").filter(has_text="guest-12")
    await expect(row.get_by_role("cell", name="submitted")).to_be_visible()
    await owner.close()


async def test_the_key_sign_in_works_with_the_keyboard_alone(chromium: Browser, photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer()
    context, page, _ = await browser(chromium, photo_stack)
    await page.goto("/dashboard/sign-in")
    for _ in range(20):  # from the top of the page, by Tab, to the key's field
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.id") == "key":
            break
    assert await page.evaluate("document.activeElement.id") == "key"
    await page.keyboard.type(customer.test_key)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    for _ in range(20):  # and on to Sign out
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.textContent") == "Sign out":
            break
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Sign in or sign up")).to_be_visible()
    await context.close()


async def test_a_verification_still_being_judged_shows_its_verdict_when_it_comes(
    chromium: Browser, photo_stack: PhotoStack, broker_bootstrap: str
) -> None:
    """A verification left pending by a gateway whose work order never reached the processors (as a slow one is),
    open on its page; once its work order is published and judged, the page shows the verdict by itself."""
    await photo_stack.wait_for_processors()
    customer = await photo_stack.new_customer()
    async with gateway_alone(photo_stack, broker_bootstrap) as gateway:
        verification_id = await pending(gateway, customer.test_key, f"slow-{uuid.uuid4()}")
    context, page, refused = await browser(chromium, photo_stack)
    await sign_in_with_key(page, customer.test_key)
    await page.goto(f"/dashboard/verifications/{verification_id}")
    await expect(page.get_by_role("heading", name="Pending")).to_be_visible()
    await expect(page.get_by_text("Being judged")).to_be_visible()

    order = VerificationRequested(
        verification_id=verification_id,
        customer_id=customer.id,
        environment="test",
        policy="icao",
        image_key=f"photo/{customer.id}/{verification_id}",
    )
    await photo_stack.platform.publish(order, photo_stack.topics.requested, partition_key(verification_id))
    await expect(page.get_by_role("heading", name="Not compliant")).to_be_visible(timeout=15_000)
    await expect(page.get_by_role("heading", name="Checks")).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="The verdict is in.")).to_be_visible()
    assert refused == []
    await context.close()
