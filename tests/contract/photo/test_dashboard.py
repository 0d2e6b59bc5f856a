"""The dashboard's rules as a browser meets them, over HTTP (the clicking is tests/browser/test_photo_dashboard.py): a
mailed link makes a sandbox-only account once and works once; links are limited per address; a key's session keeps
its key's environment; a photo that cannot be verified is refused beside the form and nothing is stored."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from storage.common import keys, mail
from storage.photo import customers
from storage.photo.models import Customer, Verification
from tests.photo_stack import PhotoStack

CSRF = re.compile(r'name="_csrf_token" value="([^"]+)"')


class Browser:
    """An HTTP client that keeps cookies and posts forms with the page's CSRF token, as a browser does."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.token = ""

    async def get(self, path: str) -> httpx.Response:
        response = await self.client.get(path)
        if found := CSRF.search(response.text):
            self.token = found.group(1)
        return response

    async def post(self, path: str, data: dict[str, Any] | None = None, **kwargs: Any) -> httpx.Response:
        if not self.token:
            await self.get("/dashboard/sign-in")
        response = await self.client.post(path, data={**(data or {}), "_csrf_token": self.token}, **kwargs)
        if found := CSRF.search(response.text):
            self.token = found.group(1)
        return response


@pytest.fixture
async def browser(photo_stack: PhotoStack) -> AsyncIterator[Browser]:
    async with httpx.AsyncClient(base_url=photo_stack.base_url, follow_redirects=True) as client:
        yield Browser(client)


def address() -> str:
    return f"lin.{uuid.uuid4().hex[:10]}@example.com"


async def link_for(stack: PhotoStack, email: str) -> str:
    (kept, *_) = await stack.db.read(mail.kept_mails, "photo", email)
    found = re.search(r"https?://[^/\s]+(/dashboard/link\?token=\S+)", kept.body)
    assert found
    return found.group(1)


async def accounts_of(stack: PhotoStack, email: str) -> list[Any]:
    def read(connection: Any) -> list[Any]:
        return list(connection.execute(select(Customer.__table__).where(Customer.__table__.c.email == email)))

    return await stack.db.read(read)


async def test_the_first_link_makes_a_sandbox_only_account_with_one_key_and_a_link_works_once(
    photo_stack: PhotoStack, browser: Browser
) -> None:
    email = address()
    assert (await browser.post("/dashboard/sign-in/link", {"email": email.upper()})).status_code == 200
    link = await link_for(photo_stack, email)
    welcome = await browser.get(link)
    assert welcome.status_code == 200
    assert "Your account is ready" in welcome.text
    [account] = await accounts_of(photo_stack, email)
    assert (account.subscription_active, account.plan) == (False, "starter")
    [key] = await photo_stack.db.read(keys.owner_keys, customers.SERVICE, account.id)
    assert (key.environment, key.scopes) == ("test", ["full"])
    sandbox_key = re.search(r'value="(pc_test_[0-9a-f]{40})"', welcome.text)
    assert sandbox_key
    assert (await photo_stack.call(sandbox_key.group(1), "GET", "/api/v1/api-keys")).status_code == 200

    again = await browser.get(link)  # used
    assert again.status_code == 400
    assert "This link is unknown, used or expired" in again.text
    assert (await browser.get("/dashboard/link?token=pc_link_made-up")).status_code == 400

    # The next link signs the same account in and goes where it was asked to: no second account, no second key.
    await browser.post("/dashboard/sign-in/link", {"email": email, "next": "/dashboard/keys"})
    signed_in = await browser.client.get(await link_for(photo_stack, email), follow_redirects=False)
    assert (signed_in.status_code, signed_in.headers["location"]) == (303, "/dashboard/keys")
    assert len(await accounts_of(photo_stack, email)) == 1
    assert len(await photo_stack.db.read(keys.owner_keys, customers.SERVICE, account.id)) == 1


async def test_links_are_limited_to_five_a_minute_per_address_and_only_go_to_the_dashboard(
    photo_stack: PhotoStack, browser: Browser
) -> None:
    email = address()
    for _ in range(5):
        sent = await browser.post("/dashboard/sign-in/link", {"email": email, "next": "https://evil.example/"})
        assert sent.status_code == 200
    refused = await browser.post("/dashboard/sign-in/link", {"email": email})
    assert refused.status_code == 429
    assert "Too many attempts: retry in" in refused.text
    assert len(await photo_stack.db.read(mail.kept_mails, "photo", email)) == 5
    opened = await browser.client.get(await link_for(photo_stack, email), follow_redirects=False)
    assert opened.headers.get("location") in (None, "/dashboard")  # a welcome page, or the dashboard: never away

    bad = await browser.post("/dashboard/sign-in/link", {"email": "not an address"})
    assert bad.status_code == 400
    assert "Give your email address" in bad.text


async def test_a_link_session_switches_environment_and_a_key_session_keeps_its_keys(
    photo_stack: PhotoStack, browser: Browser
) -> None:
    email = address()
    await browser.post("/dashboard/sign-in/link", {"email": email})
    await browser.get(await link_for(photo_stack, email))
    assert "viewing <strong>sandbox</strong>" in (await browser.get("/dashboard")).text
    switched = await browser.post("/dashboard/environment", {"environment": "live"})
    assert switched.status_code == 200
    assert "viewing <strong>live</strong>" in switched.text
    keys_page = await browser.get("/dashboard/keys")
    assert "No keys in this environment yet" in keys_page.text  # the sandbox key is not listed among live ones

    customer = await photo_stack.new_customer()
    async with httpx.AsyncClient(base_url=photo_stack.base_url, follow_redirects=True) as client:
        keyed = Browser(client)
        assert (await keyed.post("/dashboard/sign-in/key", {"key": customer.live_key})).status_code == 200
        refused = await keyed.post("/dashboard/environment", {"environment": "test"})
        assert refused.status_code == 403
        assert "A session made from a key shows that key&#39;s environment" in refused.text
        assert "viewing <strong>live</strong>" in refused.text


async def test_a_photo_the_service_cannot_take_is_refused_beside_the_form_and_nothing_is_stored(
    photo_stack: PhotoStack, browser: Browser
) -> None:
    customer = await photo_stack.new_customer()
    await browser.post("/dashboard/sign-in/key", {"key": customer.test_key})

    async def stored() -> int:
        def count(connection: Any) -> int:
            table = Verification.__table__
            statement = select(func.count()).select_from(table).where(table.c.customer_id == customer.id)
            return connection.execute(statement).scalar_one()

        return await photo_stack.db.read(count)

    page = await browser.get("/dashboard/verify")
    assert page.status_code == 200
    not_an_image = {"image": ("notes.txt", b"hello", "text/plain")}
    refused = await browser.post("/dashboard/verify", {"policy": "icao"}, files=not_an_image)
    assert refused.status_code == 400
    assert "Image type not supported: send a JPEG, PNG or WebP image" in refused.text
    no_policy = await browser.post("/dashboard/verify", {"policy": "passport"}, files=not_an_image)
    assert no_policy.status_code == 400
    assert await stored() == 0
