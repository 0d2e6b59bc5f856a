"""Connecting a commerce store by the platform's app install (docs/helpdesk.md, "Commerce"), as a browser goes through
it against the running stack and the platform (a real server on a local socket, `tests/peers/commerce.py`): the
Channels page's form, the platform's authorize URL, its signed answer at `/settings/channels/commerce/callback`, the
token exchange and the four subscriptions; and everything that must stop it, each leaving no channel behind: a bad
hmac, a state that is unknown, another session's, expired or used, another shop, a refused code, a refused
subscription, a shop domain that is not one, an agent."""

from __future__ import annotations

import html
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.engine import Connection

from net.guard import tls_context
from signalyard.secrets import secrets_cipher
from storage.helpdesk import channels, stores
from tests.helpdesk_stack import COMMERCE_CLIENT_ID, COMMERCE_CLIENT_SECRET, Browser, HelpdeskStack, data
from tests.helpers import joined_agent, signed_up
from tests.peers.commerce import CommercePlatform, Registration, signed_query

CALLBACK = "/settings/channels/commerce/callback"
TOPICS = ["orders/create", "orders/updated", "customers/create", "customers/update"]


@pytest.fixture
async def platform(commerce_platform: CommercePlatform) -> AsyncIterator[CommercePlatform]:
    commerce_platform.reset()
    yield commerce_platform
    commerce_platform.reset()


def new_shop() -> str:
    return f"shop-{uuid.uuid4().hex[:10]}.myshopify.com"


def csrf(page: httpx.Response) -> str:
    found = re.search(r'name="_csrf_token" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def alert(page: httpx.Response) -> str:
    found = re.search(r'<p class="error" role="alert" id="commerce-error">([^<]*)</p>', page.text)
    assert found, page.text
    return html.unescape(found.group(1))


async def connect(browser: Browser, shop: str) -> httpx.Response:
    """The Channels page's "Connect store" form, sent with `shop`."""
    shown = await browser.client.get("/settings/channels")
    assert shown.status_code == 200, shown.text
    return await browser.client.post(
        "/settings/channels/commerce/connect", data={"shop": shop, "_csrf_token": csrf(shown)}
    )


async def authorize_url(browser: Browser, shop: str) -> str:
    answer = await connect(browser, shop)
    assert answer.status_code == 200, answer.text
    found = re.search(r'<a class="button" href="([^"]+)" hx-boost="false">Continue to ([^<]+)</a>', answer.text)
    assert found, answer.text
    assert found.group(2) == shop.strip().lower()
    return html.unescape(found.group(1))


async def install(url: str) -> dict[str, str]:
    """The merchant at the platform: the install page, then "Install app"; the query the platform sends back."""
    split = urlsplit(url)
    asked = {name: values[0] for name, values in parse_qs(split.query).items()}
    async with httpx.AsyncClient(verify=tls_context()) as direct:  # the platform is another site: a real socket
        page = await direct.get(url)
        assert page.status_code == 200, page.text
        assert "Install app" in page.text
        said_yes = await direct.post(
            f"{split.scheme}://{split.netloc}{split.path}",
            data={name: asked[name] for name in ("scope", "redirect_uri", "state")},
        )
    assert said_yes.status_code == 302, said_yes.text
    location = said_yes.headers["location"]
    assert location.startswith(asked["redirect_uri"] + "?"), location
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


async def back(browser: Browser, query: dict[str, str]) -> httpx.Response:
    """The browser back at the callback with the platform's answer."""
    return await browser.client.get(f"{CALLBACK}?{urlencode(query)}")


async def commerce_channels(browser: Browser) -> list[dict[str, Any]]:
    return [channel for channel in data(await browser.query("channels.list")) if channel["kind"] == "commerce"]


def refused_page(answer: httpx.Response, status: int) -> str:
    """The Channels page again, with what failed beside the connect form."""
    assert answer.status_code == status, answer.text
    assert "<h1>Settings: channels</h1>" in answer.text
    return alert(answer)


async def test_a_store_is_connected_with_its_token_and_exactly_the_four_subscriptions_and_reconnects(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop = new_shop()
    async with signed_up(helpdesk_stack) as org:
        browser = org.browser
        url = await authorize_url(browser, shop.upper() + "  ")  # case and spaces aside
        split = urlsplit(url)
        assert f"{split.scheme}://{split.netloc}{split.path}" == f"{platform.base_url}/{shop}/admin/oauth/authorize"
        asked = {name: values[0] for name, values in parse_qs(split.query).items()}
        assert {name: asked[name] for name in ("client_id", "scope", "redirect_uri")} == {
            "client_id": COMMERCE_CLIENT_ID,
            "scope": "read_orders,read_customers",
            "redirect_uri": f"{helpdesk_stack.base_url}{CALLBACK}",
        }
        assert len(asked["state"]) >= 43

        answer = await back(browser, await install(url))
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == f"/settings/channels?{urlencode({'connected': shop})}"
        shown = await browser.client.get(answer.headers["location"])
        assert f"{shop} is connected" in shown.text

        (channel,) = await commerce_channels(browser)
        assert (channel["name"], channel["addresses"]) == (shop, [shop])
        assert sorted(channel["secret_names"]) == ["access_token", "api_secret", "webhook_secret"]
        address = f"{helpdesk_stack.base_url}/api/webhooks/commerce"
        assert platform.registrations(shop) == [
            Registration(number, topic, address, "json") for number, topic in enumerate(TOPICS, 1)
        ]
        kept = await helpdesk_stack.db.read(
            channels.secrets_of, secrets_cipher(helpdesk_stack.settings.platform), channel["id"]
        )
        assert kept == {
            "webhook_secret": COMMERCE_CLIENT_SECRET,
            "api_secret": COMMERCE_CLIENT_SECRET,
            "access_token": platform.tokens(shop)[0],
        }

        # Connected again (the app installed anew): the same channel, the new token; the subscriptions it has count.
        answer = await back(browser, await install(await authorize_url(browser, shop)))
        assert answer.status_code == 303, answer.text
        (again,) = await commerce_channels(browser)
        assert again["id"] == channel["id"]
        assert len(platform.registrations(shop)) == 4
        kept = await helpdesk_stack.db.read(
            channels.secrets_of, secrets_cipher(helpdesk_stack.settings.platform), channel["id"]
        )
        assert kept is not None
        assert kept["access_token"] == platform.tokens(shop)[1] != platform.tokens(shop)[0]


async def test_an_answer_whose_hmac_does_not_match_is_refused_and_saves_nothing(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop = new_shop()
    async with signed_up(helpdesk_stack) as org:
        query = await install(await authorize_url(org.browser, shop))
        for forged in (
            {**query, "code": query["code"] + "0"},  # a parameter changed after signing
            {**query, "hmac": "0" * 64},
            {name: value for name, value in query.items() if name != "hmac"},
            signed_query("another app's secret", {name: v for name, v in query.items() if name != "hmac"}),
        ):
            said = refused_page(await back(org.browser, forged), 400)
            assert "not signed by the commerce platform" in said
        assert await commerce_channels(org.browser) == []
        assert platform.count("/admin/oauth/access_token") == 0
        assert platform.registrations(shop) == []
        # the state was never spent by the forgeries: the platform's own answer still connects
        assert (await back(org.browser, query)).status_code == 303


async def test_a_state_unknown_of_another_session_expired_or_used_is_refused_and_saves_nothing(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop = new_shop()
    async with signed_up(helpdesk_stack) as org:
        browser = org.browser
        query = await install(await authorize_url(browser, shop))

        unknown = signed_query(COMMERCE_CLIENT_SECRET, {**query, "state": secrets.token_urlsafe(32)})
        assert "belongs to no connection this browser started" in refused_page(await back(browser, unknown), 400)

        async with helpdesk_stack.browser() as other:  # the same admin, signed in in another browser
            await other.sign_in(org.admin_email)
            said = refused_page(await back(other, query), 400)
            assert "belongs to no connection this browser started" in said

        answer = await back(browser, query)
        assert answer.status_code == 303, answer.text
        assert "used already" in refused_page(await back(browser, query), 400)
        assert len(await commerce_channels(browser)) == 1
        assert platform.count("/admin/oauth/access_token") == 1

        late_shop = new_shop()
        late = await install(await authorize_url(browser, late_shop))

        def expire(connection: Connection) -> None:
            installs = stores.INSTALLS
            connection.execute(
                update(installs)
                .where(installs.c.state_hash == stores.state_hash(late["state"]))
                .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
            )

        await helpdesk_stack.db.write(expire)
        assert "took over 10 minutes" in refused_page(await back(browser, late), 400)
        assert [channel["name"] for channel in await commerce_channels(browser)] == [shop]
        assert platform.registrations(late_shop) == []


async def test_an_answer_for_another_shop_is_refused_and_saves_nothing(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop, other = new_shop(), new_shop()
    async with signed_up(helpdesk_stack) as org:
        query = await install(await authorize_url(org.browser, shop))
        swapped = signed_query(
            COMMERCE_CLIENT_SECRET, {name: v for name, v in query.items() if name != "hmac"} | {"shop": other}
        )
        said = refused_page(await back(org.browser, swapped), 400)
        assert said == f"The platform answered for {other}, not {shop}: connect the store again"
        assert await commerce_channels(org.browser) == []
        assert platform.count("/admin/oauth/access_token") == 0


async def test_a_code_the_platform_refuses_is_said_and_saves_nothing_and_its_answer_is_spent(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop = new_shop()
    async with signed_up(helpdesk_stack) as org:
        query = await install(await authorize_url(org.browser, shop))
        platform.refuse_tokens()
        said = refused_page(await back(org.browser, query), 502)
        assert said.startswith(f"{shop} refused to give the app its access token (HTTP 400: ")
        assert await commerce_channels(org.browser) == []
        assert platform.registrations(shop) == []
        platform.reset()
        assert "used already" in refused_page(await back(org.browser, query), 400)  # connect again: a new answer
        assert (await back(org.browser, await install(await authorize_url(org.browser, shop)))).status_code == 303


async def test_a_subscription_the_platform_refuses_is_said_and_saves_nothing_and_connecting_again_completes(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop = new_shop()
    async with signed_up(helpdesk_stack) as org:
        platform.fail_topic("customers/create")
        said = refused_page(await back(org.browser, await install(await authorize_url(org.browser, shop))), 502)
        assert said.startswith(f"{shop} refused the subscription to customers/create (HTTP 403: ")
        assert "nothing was saved" in said
        assert await commerce_channels(org.browser) == []
        assert [found.topic for found in platform.registrations(shop)] == TOPICS[:2]

        platform.reset()  # the platform takes it now: the two made before count, as the platform says (422 taken)
        answer = await back(org.browser, await install(await authorize_url(org.browser, shop)))
        assert answer.status_code == 303, answer.text
        assert [found.topic for found in platform.registrations(shop)] == TOPICS
        assert len(await commerce_channels(org.browser)) == 1


async def test_a_shop_another_organization_connected_is_409_and_saves_nothing(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    shop = new_shop()
    async with signed_up(helpdesk_stack) as first, signed_up(helpdesk_stack) as second:
        assert (await back(first.browser, await install(await authorize_url(first.browser, shop)))).status_code == 303
        said = refused_page(await back(second.browser, await install(await authorize_url(second.browser, shop))), 409)
        assert said == f"{shop} is connected to another organization: it must be removed there first"
        assert await commerce_channels(second.browser) == []
        assert platform.count("/admin/oauth/access_token") == 1


async def test_a_shop_domain_that_is_not_one_is_refused_beside_the_form(
    helpdesk_stack: HelpdeskStack, platform: CommercePlatform
) -> None:
    async with signed_up(helpdesk_stack) as org:
        for wrong in ("tea-shop.example.com", "https://tea-shop.myshopify.com", "tea shop.myshopify.com", "", "-x"):
            answer = await connect(org.browser, wrong)
            assert answer.status_code == 400, answer.text
            assert alert(answer).startswith("Give the shop's domain as the platform names it")
            assert 'aria-invalid="true"' in answer.text
            assert "Continue to" not in answer.text
    assert platform.requests == []


async def test_an_agent_may_not_connect_a_store(helpdesk_stack: HelpdeskStack, platform: CommercePlatform) -> None:
    async with signed_up(helpdesk_stack) as org, helpdesk_stack.browser() as agent:
        await joined_agent(org, agent)
        shown = await agent.client.get("/settings/channels")
        assert shown.status_code == 403
        token = re.search(r'name="_csrf_token" value="([^"]+)"', (await agent.client.get("/")).text)
        assert token
        answer = await agent.client.post(
            "/settings/channels/commerce/connect", data={"shop": new_shop(), "_csrf_token": token.group(1)}
        )
        assert answer.status_code == 403
        assert "Only an admin of the organization may manage channels" in answer.text
        query = signed_query(COMMERCE_CLIENT_SECRET, {"code": "x", "shop": new_shop(), "state": "y", "timestamp": "1"})
        assert (await back(agent, query)).status_code == 403
    assert platform.requests == []


def test_the_platform_signs_its_answer_as_the_helpdesk_checks_it() -> None:
    """The peer's `hmac` and the helpdesk's check agree (a sanity check of the peer itself)."""
    from operations.helpdesk.stores import signed_by_platform

    query = signed_query(
        "s3cret", {"code": "a", "shop": "b.myshopify.com", "state": "c", "timestamp": str(time.time())}
    )
    assert signed_by_platform("s3cret", query)
    assert not signed_by_platform("other", query)
