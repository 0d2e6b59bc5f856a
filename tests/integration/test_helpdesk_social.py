"""Social sign-in as a browser goes through it: `auth.signInWithSocial`, the provider (a real OpenID Connect server on
a local socket, `tests/peers/oidc.py`), then `/auth/callback`, on a real database (SQLite and PostgreSQL). The flow,
and each thing that must stop it: state, the flow cookie, PKCE, spent codes, the id_token's signature, audience,
issuer, expiry and nonce, unverified addresses, a provider that says no or cannot be read, and the per-client limit."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from gateway.common.limits import RateLimits
from gateway.helpdesk.accounts import signin
from gateway.helpdesk.accounts.credentials import AccessTokens, PasswordCost, Passwords
from gateway.helpdesk.accounts.sessions import ACCESS_COOKIE, REFRESH_COOKIE, Sessions
from gateway.helpdesk.accounts.signin import limits_unavailable, sign_in_limited
from gateway.helpdesk.accounts.social import SocialProvider
from net.guard import tls_context
from operations.helpdesk.mail import kept_mail
from storage.common.db import Database
from storage.helpdesk import accounts
from tests.helpdesk_stack import helpdesk_app
from tests.peers.oidc import OidcProvider

PUBLIC_URL = "http://helpdesk.test"
CALLBACK = f"{PUBLIC_URL}/auth/callback"
CLIENT_ID, CLIENT_SECRET = "signalyard-helpdesk", "a client secret: with / and +"
FLOW_COOKIE = "hd-oauth"


@dataclass
class Browser:
    client: httpx.AsyncClient
    provider: OidcProvider
    key: bytes
    """The session signing key, which also signs the flow cookie."""

    async def call(self, procedure: str, given: Any) -> httpx.Response:
        return await self.client.post(f"/api/trpc/{procedure}", json={"json": given})

    async def start(self, redirect_to: str | None = None) -> str:
        """`auth.signInWithSocial`: the provider's URL (the flow cookie is now in this browser)."""
        answer = await self.call("auth.signInWithSocial", {"redirectTo": redirect_to} if redirect_to else {})
        return str(data(answer)["url"])

    async def at_provider(self, url: str) -> str:
        """Where the provider sends the browser back: the callback's path and query on this site."""
        async with httpx.AsyncClient(verify=tls_context()) as direct:  # the provider is another site: a real socket
            answer = await direct.get(url)
        assert answer.status_code == 302, answer.text
        location = answer.headers["location"]
        assert location.startswith(CALLBACK + "?"), location
        return location.removeprefix(PUBLIC_URL)

    async def sign_in(self, redirect_to: str | None = None) -> httpx.Response:
        return await self.client.get(await self.at_provider(await self.start(redirect_to)))

    async def elsewhere(self, cookies: dict[str, str], path: str) -> httpx.Response:
        """A GET from another browser holding `cookies`."""
        async with httpx.AsyncClient(transport=self.client._transport, base_url=PUBLIC_URL, cookies=cookies) as other:
            return await other.get(path)


def data(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["data"]["json"]


def error_code(answer: httpx.Response) -> str:
    return str(answer.json()["error"]["json"]["data"]["code"])


def refused(answer: httpx.Response) -> tuple[str, str]:
    """The callback's refusal: 400 with the link routes' body, and the flow cookie removed."""
    assert answer.status_code == 400, answer.text
    assert answer.headers["cache-control"] == "no-store"
    assert not any(
        c.startswith((f"{ACCESS_COOKIE}=", f"{REFRESH_COOKIE}=")) for c in answer.headers.get_list("set-cookie")
    )
    body = answer.json()["error"]
    return body["code"], body["message"]


def flow_cookie(answer: httpx.Response) -> str:
    (cookie,) = [c for c in answer.headers.get_list("set-cookie") if c.startswith(f"{FLOW_COOKIE}=")]
    return cookie


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CLIENT_ID, CLIENT_SECRET, redirect_uri=CALLBACK) as server:
        yield server


def helpdesk(db: Database, key: bytes, social: SocialProvider | None) -> httpx.AsyncClient:
    """A browser on the helpdesk app, built as tests/integration/test_helpdesk_sign_in.py builds it."""
    deps = signin.Accounts(
        db=db,
        sessions=Sessions(db, AccessTokens(key), secure=False),
        passwords=Passwords(PasswordCost(memory_kib=64, passes=1, lanes=1)),
        limits=RateLimits(None, limited=sign_in_limited, unavailable=limits_unavailable),
        mailer=kept_mail(db),
        public_url=PUBLIC_URL,
        social=social,
    )
    transport = httpx.ASGITransport(app=cast(Any, helpdesk_app(deps)))
    return httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL)


@pytest.fixture
async def browser(db: Database, provider: OidcProvider) -> AsyncIterator[Browser]:
    provider.reset()
    key = secrets.token_bytes(32)
    async with httpx.AsyncClient(timeout=10, verify=tls_context()) as to_provider:
        social = SocialProvider(provider.issuer, CLIENT_ID, CLIENT_SECRET, PUBLIC_URL, key, http=to_provider)
        async with helpdesk(db, key, social) as client:
            yield Browser(client, provider, key)


async def test_the_whole_flow_signs_in_with_both_cookies_and_goes_to_redirect_to(
    browser: Browser, db: Database
) -> None:
    address = f"Social.{uuid.uuid4().hex[:8]}@Example.com"
    browser.provider.approve(address, name="Ada Agent")
    started = await browser.call("auth.signInWithSocial", {"redirectTo": "/tickets?view=mine"})
    url = data(started)["url"]
    assert url.startswith(f"{browser.provider.issuer}/authorize?")
    asked = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    assert {name: asked[name] for name in ("response_type", "client_id", "redirect_uri", "scope")} == {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": CALLBACK,
        "scope": "openid email profile",
    }
    assert asked["code_challenge_method"] == "S256"
    assert len(asked["code_challenge"]) == 43
    assert len(asked["state"]) >= 43
    assert len(asked["nonce"]) >= 43
    cookie = flow_cookie(started)
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "SameSite=Lax" in cookie
    assert "Max-Age=600" in cookie
    assert "Path=/auth/callback" in cookie
    assert "Secure" not in cookie  # the public URL is http

    callback = await browser.at_provider(url)
    assert parse_qs(urlsplit(callback).query)["state"] == [asked["state"]]
    opened = await browser.client.get(callback)
    assert opened.status_code == 303, opened.text
    assert opened.headers["location"] == "/tickets?view=mine"
    assert opened.headers["cache-control"] == "no-store"
    assert opened.headers["referrer-policy"] == "no-referrer"
    cookies = opened.headers.get_list("set-cookie")
    for name in (ACCESS_COOKIE, REFRESH_COOKIE):
        (set_cookie,) = [c for c in cookies if c.startswith(f"{name}=")]
        assert "HttpOnly" in set_cookie
    assert "Max-Age=0" in flow_cookie(opened)  # the flow is over
    assert FLOW_COOKIE not in browser.client.cookies

    user = data(await browser.client.get("/api/trpc/auth.getUser"))
    assert user["email"] == address.lower()
    stored = await db.read(accounts.user_by_email, address)
    assert stored is not None
    assert stored.email_verified

    (exchange,) = browser.provider.token_requests
    assert exchange.outcome == "issued"
    assert exchange.authorization is not None
    assert exchange.authorization.startswith("Basic ")  # client_secret_basic
    assert exchange.form["redirect_uri"] == CALLBACK
    assert "client_secret" not in exchange.form

    # a second sign-in finds the same account, and the discovery document was read once
    browser.client.cookies.clear()
    again = await browser.sign_in()
    assert (again.status_code, again.headers["location"]) == (303, "/")
    assert data(await browser.client.get("/api/trpc/auth.getUser"))["id"] == user["id"]
    assert browser.provider.count("/.well-known/openid-configuration") == 1
    assert browser.provider.count("/jwks") == 1


@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example/", "/%2F%2Fevil.example", "tickets"])
async def test_a_redirect_that_is_not_a_path_here_goes_to_the_root(browser: Browser, target: str) -> None:
    opened = await browser.sign_in(target)
    assert (opened.status_code, opened.headers["location"]) == (303, "/")


async def test_a_state_other_than_the_flows_is_refused_and_the_code_is_not_spent(browser: Browser) -> None:
    callback = await browser.at_provider(await browser.start())
    code = parse_qs(urlsplit(callback).query)["code"][0]
    code_, message = refused(await browser.client.get(f"/auth/callback?code={code}&state=forged-state"))
    assert code_ == "invalid_state"
    assert "start again" in message
    assert browser.provider.token_requests == []
    assert (await browser.client.get("/api/trpc/auth.getUser")).status_code == 401


async def test_a_callback_without_the_flow_cookie_is_refused(browser: Browser) -> None:
    callback = await browser.at_provider(await browser.start())
    code, message = refused(await browser.elsewhere({}, callback))  # another browser: no hd-oauth
    assert code == "invalid_state"
    assert "no sign-in in progress" in message
    assert browser.provider.token_requests == []


async def test_a_forged_or_expired_flow_cookie_is_refused(browser: Browser) -> None:
    callback = await browser.at_provider(await browser.start())
    held = browser.client.cookies[FLOW_COOKIE]
    claims = jwt.decode(held, options={"verify_signature": False})
    forged = jwt.encode(claims, secrets.token_bytes(32), algorithm="HS256")
    expired = jwt.encode(claims | {"exp": int(time.time()) - 1}, browser.key, algorithm="HS256")
    for cookie in (forged, expired, held[:-4] + "AAAA", "garbage"):
        assert refused(await browser.elsewhere({FLOW_COOKIE: cookie}, callback))[0] == "invalid_state"
    assert browser.provider.token_requests == []
    assert (await browser.elsewhere({FLOW_COOKIE: held}, callback)).status_code == 303  # the genuine one works


async def test_a_code_injected_from_another_flow_fails_pkce_at_the_provider(browser: Browser) -> None:
    """An attacker's code, issued for the attacker's own flow (its PKCE challenge), pasted into the victim's callback
    with the victim's state: the victim's verifier does not match, so the provider refuses it."""
    attackers = await browser.at_provider(await browser.start())
    stolen_code = parse_qs(urlsplit(attackers).query)["code"][0]
    browser.client.cookies.clear()
    victims = await browser.at_provider(await browser.start())
    state = parse_qs(urlsplit(victims).query)["state"][0]
    code, message = refused(await browser.client.get(f"/auth/callback?code={stolen_code}&state={state}"))
    assert code == "provider_refused"
    assert "invalid_grant" in message
    assert [r.outcome for r in browser.provider.token_requests] == ["pkce"]
    assert (await browser.client.get("/api/trpc/auth.getUser")).status_code == 401


async def test_a_code_used_twice_is_refused(browser: Browser) -> None:
    url = await browser.start()
    held = browser.client.cookies[FLOW_COOKIE]
    callback = await browser.at_provider(url)
    assert (await browser.client.get(callback)).status_code == 303
    replayed = await browser.elsewhere({FLOW_COOKIE: held}, callback)  # the whole callback, cookie and all
    code, message = refused(replayed)
    assert code == "provider_refused"
    assert "invalid_grant" in message
    assert [r.outcome for r in browser.provider.token_requests] == ["issued", "unknown_code"]


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"nonce": "another-flows-nonce"}, "nonce"),
        ({"aud": "another-client"}, "audience"),
        ({"aud": None}, "aud"),
        ({"iss": "https://impostor.example"}, "issuer"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"azp": "another-client", "aud": [CLIENT_ID, "another-client"]}, "azp"),
    ],
)
async def test_an_id_token_with_a_wrong_claim_is_refused(browser: Browser, claims: dict[str, Any], reason: str) -> None:
    browser.provider.tamper(**claims)
    code, message = refused(await browser.sign_in())
    assert code == "invalid_id_token"
    assert reason in message.lower()
    assert (await browser.client.get("/api/trpc/auth.getUser")).status_code == 401


@pytest.mark.parametrize("signer", ["unknown-key", "hs256-client-secret", "none"])
async def test_an_id_token_not_signed_by_the_providers_published_key_is_refused(browser: Browser, signer: Any) -> None:
    browser.provider.sign_with = signer
    code, _ = refused(await browser.sign_in())
    assert code == "invalid_id_token"
    assert (await browser.client.get("/api/trpc/auth.getUser")).status_code == 401


async def test_an_unverified_or_missing_email_does_not_sign_in(browser: Browser, db: Database) -> None:
    address = f"unverified.{uuid.uuid4().hex[:8]}@example.com"
    browser.provider.approve(address, email_verified=False)
    code, message = refused(await browser.sign_in())
    assert code == "email_not_verified"
    assert "not verified" in message
    assert await db.read(accounts.user_by_email, address) is None  # no account made

    browser.provider.approve(address)
    browser.provider.tamper(email=None)
    assert refused(await browser.sign_in())[0] == "no_email"


async def test_a_provider_that_says_no_is_a_clear_refusal(browser: Browser) -> None:
    browser.provider.deny("access_denied")
    url = await browser.start()
    async with httpx.AsyncClient(verify=tls_context()) as direct:
        back = (await direct.get(url)).headers["location"]
    assert "error=access_denied" in back
    answer = await browser.client.get(back.removeprefix(PUBLIC_URL))
    code, message = refused(answer)
    assert code == "provider_refused"
    assert "did not sign you in (access_denied)" in message
    assert "Max-Age=0" in flow_cookie(answer)
    assert browser.provider.token_requests == []


async def test_social_sign_in_is_limited_to_five_a_minute_per_client(browser: Browser) -> None:
    for _ in range(5):
        assert (await browser.start()).startswith(browser.provider.issuer)
    limited = await browser.call("auth.signInWithSocial", {})
    assert limited.status_code == 429
    body = limited.json()["error"]["json"]
    assert (body["code"], body["data"]["code"], body["data"]["httpStatus"]) == (-32600, "TOO_MANY_REQUESTS", 429)
    assert "retry-after" in limited.headers
    assert FLOW_COOKIE not in limited.headers.get("set-cookie", "")


async def test_a_provider_whose_discovery_fails_is_a_clear_server_error(browser: Browser) -> None:
    browser.provider.discovery_issuer = "https://impostor.example"
    mismatched = await browser.call("auth.signInWithSocial", {})
    assert (mismatched.status_code, error_code(mismatched)) == (500, "INTERNAL_SERVER_ERROR")
    assert "provider's configuration could not be read" in mismatched.json()["error"]["json"]["message"]
    assert FLOW_COOKIE not in mismatched.headers.get("set-cookie", "")

    browser.provider.discovery_issuer = None
    browser.provider.discovery_status = 503
    assert error_code(await browser.call("auth.signInWithSocial", {})) == "INTERNAL_SERVER_ERROR"

    browser.provider.discovery_status = 200  # a failure is not cached: it is read again
    assert await browser.start()


async def test_without_a_provider_the_callback_is_refused(db: Database) -> None:
    async with helpdesk(db, secrets.token_bytes(32), None) as client:
        answer = await client.get("/auth/callback?code=x&state=y")
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "not_configured"


async def test_the_sign_in_page_offers_the_provider_and_its_link_signs_in_where_the_page_was_going(
    browser: Browser,
) -> None:
    """The agent app's sign-in page (docs/helpdesk.md, "The agent app"): a link to the same flow as
    auth.signInWithSocial, which ends where the page was asked to go."""
    address = f"Page.{uuid.uuid4().hex[:8]}@Example.com"
    browser.provider.approve(address, name="Page Person")
    page = await browser.client.get("/sign-in?next=/customers")
    assert page.status_code == 200
    assert 'href="/sign-in/social?next=/customers"' in page.text
    started = await browser.client.get("/sign-in/social?next=/customers")
    assert started.status_code == 303
    assert started.headers["location"].startswith(f"{browser.provider.issuer}/authorize?")
    assert "HttpOnly" in flow_cookie(started)
    opened = await browser.client.get(await browser.at_provider(started.headers["location"]))
    assert (opened.status_code, opened.headers["location"]) == (303, "/customers")
    assert data(await browser.client.get("/api/trpc/auth.getUser"))["email"] == address.lower()


async def test_without_a_provider_the_sign_in_page_offers_none(db: Database) -> None:
    async with helpdesk(db, secrets.token_bytes(32), None) as client:
        page = await client.get("/sign-in")
        assert "/sign-in/social" not in page.text
        refused = await client.get("/sign-in/social")
        assert refused.status_code == 412
        assert "Social sign-in is not configured here" in refused.text
