"""Helpdesk sign-in and signup as a browser goes through them, over the tRPC wire on a real database (SQLite and
PostgreSQL): a mailed link, passwords, the two cookies, transparent refresh, sign-out and a stolen refresh token, the
sign-in limits, password resets, and completing signup into a workspace."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from urllib.parse import quote

import httpx
import pytest

from gateway.common.limits import RateLimits
from gateway.helpdesk.accounts import signin
from gateway.helpdesk.accounts.credentials import AccessTokens, PasswordCost, Passwords
from gateway.helpdesk.accounts.sessions import ACCESS_COOKIE, REFRESH_COOKIE, Sessions
from gateway.helpdesk.accounts.signin import limits_unavailable, sign_in_limited
from operations.helpdesk.mail import kept_mail
from storage.common import mail as mail_store
from storage.common.db import Database
from tests.helpdesk_stack import helpdesk_app

PUBLIC_URL = "http://helpdesk.test"
LINK = re.compile(re.escape(PUBLIC_URL) + r"(/auth/(?:link|reset)\?token=hd_link_[\w-]+)")


class Clock:
    """Access tokens' time, moved by the tests."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@dataclass
class Browser:
    client: httpx.AsyncClient
    db: Database
    clock: Clock

    async def elsewhere(self, cookies: dict[str, str], path: str) -> httpx.Response:
        """A GET from another browser holding `cookies` (a copy of this one's, say)."""
        async with httpx.AsyncClient(transport=self.client._transport, base_url=PUBLIC_URL, cookies=cookies) as other:
            return await other.get(path)

    async def call(self, procedure: str, given: Any = None) -> httpx.Response:
        body = {"json": given} if given is not None else {"json": None, "meta": {"values": ["undefined"], "v": 1}}
        return await self.client.post(f"/api/trpc/{procedure}", json=body)

    async def query(self, procedure: str) -> httpx.Response:
        return await self.client.get(f"/api/trpc/{procedure}")

    async def mailed_link(self, email: str) -> str:
        (mail, *_) = await self.db.read(mail_store.kept_mails, "helpdesk", email)
        found = LINK.search(mail.body)
        assert found, mail.body
        return found.group(1)

    async def sign_in_by_link(self, email: str, redirect_to: str | None = None) -> httpx.Response:
        given = {"email": email} | ({"redirectTo": redirect_to} if redirect_to is not None else {})
        assert (await self.call("auth.signInWithEmail", given)).json() == {
            "result": {"data": {"json": {"success": True}}}
        }
        return await self.client.get(await self.mailed_link(email))


def data(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["data"]["json"]


def error_code(answer: httpx.Response) -> str:
    return str(answer.json()["error"]["json"]["data"]["code"])


def email() -> str:
    return f"agent.{uuid.uuid4().hex[:10]}@example.com"


@pytest.fixture
async def browser(db: Database) -> AsyncIterator[Browser]:
    clock = Clock()
    deps = signin.Accounts(
        db=db,
        sessions=Sessions(
            db,
            AccessTokens(secrets.token_bytes(32), clock=clock),
            secure=False,
            clock=lambda: datetime.now(UTC) + timedelta(seconds=clock.offset),
        ),
        passwords=Passwords(PasswordCost(memory_kib=64, passes=1, lanes=1)),
        limits=RateLimits(None, limited=sign_in_limited, unavailable=limits_unavailable),
        mailer=kept_mail(db),
        public_url=PUBLIC_URL,
    )
    transport = httpx.ASGITransport(app=cast(Any, helpdesk_app(deps)))
    async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
        yield Browser(client, db, clock)


async def test_a_mailed_link_signs_in_once_with_both_cookies_and_redirects(browser: Browser) -> None:
    address = email()
    opened = await browser.sign_in_by_link(address, "/tickets?view=mine")
    assert opened.status_code == 303
    assert opened.headers["location"] == "/tickets?view=mine"
    cookies = opened.headers.get_list("set-cookie")
    for name in (ACCESS_COOKIE, REFRESH_COOKIE):
        (cookie,) = [c for c in cookies if c.startswith(f"{name}=")]
        assert "HttpOnly" in cookie
        assert "SameSite=lax" in cookie or "SameSite=Lax" in cookie
        assert "Secure" not in cookie  # the public URL is http
    user = data(await browser.query("auth.getUser"))
    assert user["email"] == address
    assert (user["organization_id"], user["role"]) == (None, None)
    again = await browser.client.get(await browser.mailed_link(address))
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "invalid_link"


@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example/", "/%2F%2Fevil.example", "tickets"])
async def test_a_link_whose_redirect_is_not_a_path_here_goes_to_the_root(browser: Browser, target: str) -> None:
    opened = await browser.sign_in_by_link(email(), target)
    assert opened.status_code == 303
    assert opened.headers["location"] == "/"


async def test_without_a_session_the_procedures_that_need_one_are_unauthorized(browser: Browser) -> None:
    for answer in (
        await browser.query("auth.getUser"),
        await browser.query("auth.hasPassword"),
        await browser.call("auth.signOut"),
        await browser.call("auth.setPassword", {"password": "long enough"}),
    ):
        assert answer.status_code == 401
        assert error_code(answer) == "UNAUTHORIZED"
        assert answer.json()["error"]["json"]["code"] == -32001


async def test_a_password_is_set_once_then_signs_in_and_a_wrong_one_does_not(browser: Browser) -> None:
    address = email()
    await browser.sign_in_by_link(address)
    assert data(await browser.query("auth.hasPassword")) == {"hasPassword": False}
    too_short = await browser.call("auth.setPassword", {"password": "seven77"})
    assert (too_short.status_code, error_code(too_short)) == (400, "BAD_REQUEST")
    assert data(await browser.call("auth.setPassword", {"password": "a long passphrase"})) == {"success": True}
    twice = await browser.call("auth.setPassword", {"password": "another passphrase"})
    assert "changePassword" in twice.json()["error"]["json"]["message"]
    assert data(await browser.call("auth.signOut")) == {"success": True}

    wrong = await browser.call("auth.signInWithPassword", {"email": address, "password": "not the one"})
    unknown = await browser.call("auth.signInWithPassword", {"email": email(), "password": "a long passphrase"})
    for answer in (wrong, unknown):
        assert (answer.status_code, error_code(answer)) == (401, "UNAUTHORIZED")
        assert answer.json()["error"]["json"]["message"] == "Invalid email or password"
    signed = data(
        await browser.call("auth.signInWithPassword", {"email": address.upper(), "password": "a long passphrase"})
    )
    assert signed["success"] is True
    assert signed["user"]["email"] == address
    assert data(await browser.query("auth.getUser"))["email"] == address


async def test_changing_the_password_needs_the_current_one(browser: Browser) -> None:
    address = email()
    await browser.sign_in_by_link(address)
    await browser.call("auth.setPassword", {"password": "first passphrase"})
    wrong = await browser.call("auth.changePassword", {"currentPassword": "nope", "newPassword": "second passphrase"})
    assert (wrong.status_code, error_code(wrong)) == (401, "UNAUTHORIZED")
    assert data(
        await browser.call(
            "auth.changePassword", {"currentPassword": "first passphrase", "newPassword": "second passphrase"}
        )
    ) == {"success": True}
    await browser.call("auth.signOut")
    old = await browser.call("auth.signInWithPassword", {"email": address, "password": "first passphrase"})
    assert old.status_code == 401
    assert data(await browser.call("auth.signInWithPassword", {"email": address, "password": "second passphrase"}))


async def test_the_profile_is_updated_and_answered_as_a_user(browser: Browser) -> None:
    await browser.sign_in_by_link(email())
    user = data(
        await browser.call(
            "auth.updateProfile",
            {"name": "Ada Agent", "avatar_url": "https://example.com/ada.png", "preferences": {"theme": "dark"}},
        )
    )
    assert (user["name"], user["avatar_url"], user["preferences"]) == (
        "Ada Agent",
        "https://example.com/ada.png",
        {"theme": "dark"},
    )
    answer = await browser.client.get("/api/trpc/auth.getUser")
    assert answer.json()["result"]["data"]["meta"]["values"] == {"created_at": ["Date"], "updated_at": ["Date"]}
    bad = await browser.call("auth.updateProfile", {"avatar_url": "javascript:alert(1)"})
    assert (bad.status_code, error_code(bad)) == (400, "BAD_REQUEST")


async def test_sign_out_ends_the_session_on_the_very_next_request_even_for_a_copy_of_its_cookies(
    browser: Browser,
) -> None:
    await browser.sign_in_by_link(email())
    copied = dict(browser.client.cookies)
    signed_out = await browser.call("auth.signOut")
    assert data(signed_out) == {"success": True}
    assert all("Max-Age=0" in c for c in signed_out.headers.get_list("set-cookie"))
    replay = await browser.elsewhere(copied, "/api/trpc/auth.getUser")
    assert (replay.status_code, error_code(replay)) == (401, "UNAUTHORIZED")


async def test_an_expired_access_token_is_renewed_in_the_same_response_once_per_request(browser: Browser) -> None:
    await browser.sign_in_by_link(email())
    first_refresh = browser.client.cookies[REFRESH_COOKIE]
    browser.clock.offset = timedelta(minutes=16).total_seconds()
    # two calls needing the session in one batch: the refresh token is rotated once, not twice (that reads as theft)
    batch = await browser.client.get("/api/trpc/auth.getUser,auth.hasPassword?batch=1")
    assert batch.status_code == 200, batch.text
    renewed = batch.headers.get_list("set-cookie")
    assert any(c.startswith(f"{ACCESS_COOKIE}=") for c in renewed)
    assert browser.client.cookies[REFRESH_COOKIE] != first_refresh
    assert data(await browser.query("auth.getUser"))["email"]


async def test_a_rotated_refresh_token_presented_again_revokes_the_whole_session(browser: Browser) -> None:
    await browser.sign_in_by_link(email())
    stolen = browser.client.cookies[REFRESH_COOKIE]
    browser.clock.offset = timedelta(minutes=16).total_seconds()
    assert data(await browser.query("auth.getUser"))  # the owner's browser refreshes: `stolen` is rotated
    browser.clock.offset += 11  # past the grace given to requests sent together
    thief = await browser.elsewhere({REFRESH_COOKIE: stolen}, "/api/trpc/auth.getUser")
    assert thief.status_code == 401
    owner = await browser.query("auth.getUser")  # the owner's fresh cookies belong to the revoked family too
    assert (owner.status_code, error_code(owner)) == (401, "UNAUTHORIZED")


async def test_the_sixth_link_asked_for_one_address_within_a_minute_is_refused_with_the_wait(browser: Browser) -> None:
    address = email()
    for _ in range(5):
        assert data(await browser.call("auth.signInWithEmail", {"email": address}))
    refused = await browser.call("auth.signInWithEmail", {"email": address.upper()})
    assert refused.status_code == 429
    body = refused.json()["error"]["json"]
    assert (body["code"], body["data"]["code"], body["data"]["httpStatus"]) == (-32600, "TOO_MANY_REQUESTS", 429)
    seconds = int(re.search(r"retry in (\d+) seconds", body["message"]).group(1))  # type: ignore[union-attr]
    assert 50 <= seconds <= 60  # the minute runs from the first of the five calls, made moments ago
    assert refused.headers["retry-after"] == str(seconds)
    assert data(await browser.call("auth.signInWithEmail", {"email": email()}))  # another address is not held up
    assert len(await browser.db.read(mail_store.kept_mails, "helpdesk", address)) == 5


async def test_an_invalid_address_is_bad_request_and_mails_nothing(browser: Browser) -> None:
    for given in ({"email": "not an address"}, {"email": "a@b"}, {}, {"email": "x" * 320 + "@example.com"}):
        answer = await browser.call("auth.signInWithEmail", given)
        assert (answer.status_code, error_code(answer)) == (400, "BAD_REQUEST"), given


async def test_a_reset_link_removes_the_password_ends_other_sessions_and_lets_a_new_one_be_set(
    browser: Browser,
) -> None:
    address = email()
    await browser.sign_in_by_link(address)
    await browser.call("auth.setPassword", {"password": "old passphrase"})
    await browser.call("auth.signOut")
    async with httpx.AsyncClient(transport=browser.client._transport, base_url=PUBLIC_URL) as device:
        given = {"json": {"email": address, "password": "old passphrase"}}
        assert (await device.post("/api/trpc/auth.signInWithPassword", json=given)).status_code == 200
        elsewhere = dict(device.cookies)  # the same account, signed in on another device
    assert (await browser.elsewhere(elsewhere, "/api/trpc/auth.getUser")).status_code == 200

    assert data(await browser.call("auth.sendPasswordReset", {"email": address})) == {"success": True}
    link = await browser.mailed_link(address)
    assert link.startswith("/auth/reset?token=")
    opened = await browser.client.get(link)
    assert (opened.status_code, opened.headers["location"]) == (303, "/account/password?reset=1")
    assert data(await browser.query("auth.hasPassword")) == {"hasPassword": False}
    other_device = await browser.elsewhere(elsewhere, "/api/trpc/auth.getUser")
    assert other_device.status_code == 401
    assert (await browser.client.get(link)).status_code == 400  # once

    assert data(await browser.call("auth.setPassword", {"password": "new passphrase"}))
    await browser.call("auth.signOut")
    old = await browser.call("auth.signInWithPassword", {"email": address, "password": "old passphrase"})
    assert old.status_code == 401
    assert data(await browser.call("auth.signInWithPassword", {"email": address, "password": "new passphrase"}))


async def test_a_reset_for_an_unknown_address_answers_the_same_and_mails_nothing(browser: Browser) -> None:
    address = email()
    assert data(await browser.call("auth.sendPasswordReset", {"email": address})) == {"success": True}
    assert await browser.db.read(mail_store.kept_mails, "helpdesk", address) == []


async def test_a_link_opens_only_through_its_own_route(browser: Browser) -> None:
    address = email()
    await browser.call("auth.signInWithEmail", {"email": address})
    sign_in = await browser.mailed_link(address)
    as_reset = await browser.client.get(sign_in.replace("/auth/link", "/auth/reset"))
    assert as_reset.status_code == 400
    assert (await browser.client.get(sign_in)).status_code == 303  # still unused


async def test_each_mailing_procedure_has_its_own_limit_per_address(browser: Browser) -> None:
    address = email()
    await browser.sign_in_by_link(address)
    for _ in range(4):
        assert data(await browser.call("auth.signInWithEmail", {"email": address}))
    assert data(await browser.call("auth.sendPasswordReset", {"email": address}))  # not counted with sign-ins
    assert (await browser.call("auth.signInWithEmail", {"email": address})).status_code == 429


SIGNUP = {"name": "Ada Agent", "organizationName": "Acme Support"}


async def test_complete_signup_makes_the_workspace_with_its_first_user_as_admin(browser: Browser) -> None:
    address = email()
    await browser.sign_in_by_link(address)
    made = data(await browser.call("auth.completeSignup", SIGNUP | {"redirectPath": "/tickets"}))
    assert made["requiresPayment"] is False
    assert "checkoutUrl" not in made
    assert made["organization"]["name"] == "Acme Support"
    assert made["organization"]["slug"].startswith("acme-support")
    assert made["user"] == {
        "id": made["user"]["id"],
        "email": address,
        "name": "Ada Agent",
        "organization_id": made["organization"]["id"],
        "role": "admin",
    }
    user = data(await browser.query("auth.getUser"))
    assert (user["organization_id"], user["role"]) == (made["organization"]["id"], "admin")
    again = data(await browser.call("auth.completeSignup", {"name": "Other", "organizationName": "Other Org"}))
    assert again == made  # idempotent: the same workspace, the same answer


async def test_complete_signup_refuses_unsafe_redirects_bad_input_and_paid_plans_without_a_provider(
    browser: Browser,
) -> None:
    await browser.sign_in_by_link(email())
    for path in ("//evil.example", "https://evil.example", "/%2F%2Fevil.example", "/\\evil.example", "dashboard"):
        answer = await browser.call("auth.completeSignup", SIGNUP | {"redirectPath": path})
        assert (answer.status_code, error_code(answer)) == (400, "BAD_REQUEST"), path
    for bad in ({"name": "", "organizationName": "x"}, {"name": "x", "organizationName": "y" * 256}, {"name": "x"}):
        assert (await browser.call("auth.completeSignup", bad)).status_code == 400, bad
    paid = await browser.call("auth.completeSignup", SIGNUP | {"planTier": "pro"})
    assert (paid.status_code, error_code(paid)) == (412, "PRECONDITION_FAILED")
    assert data(await browser.query("auth.getUser"))["organization_id"] is None  # nothing was written


async def test_complete_signup_needs_a_session_and_is_never_authorized_by_an_api_key(browser: Browser) -> None:
    anonymous = await browser.call("auth.completeSignup", SIGNUP)
    assert (anonymous.status_code, error_code(anonymous)) == (401, "UNAUTHORIZED")
    await browser.sign_in_by_link(email())
    with_key = await browser.client.post(
        "/api/trpc/auth.completeSignup",
        json={"json": SIGNUP},
        headers={"Authorization": "Bearer hd_live_" + "k" * 40},
    )
    assert (with_key.status_code, error_code(with_key)) == (401, "UNAUTHORIZED")
    assert data(await browser.query("auth.getUser"))["organization_id"] is None


async def signed_up(browser: Browser, organization: str = "Acme Support") -> dict[str, Any]:
    await browser.client.post("/api/trpc/auth.signOut", json={"json": None})
    browser.client.cookies.clear()
    await browser.sign_in_by_link(email())
    return data(await browser.call("auth.completeSignup", {"name": "Ada Agent", "organizationName": organization}))  # type: ignore[no-any-return]


async def test_signup_writes_the_user_created_event_that_the_events_procedures_read(browser: Browser) -> None:
    made = await signed_up(browser)
    user_id = made["user"]["id"]
    listed = await browser.client.get(
        "/api/trpc/events.list?input=" + quote_input({"aggregateType": "user", "aggregateId": user_id, "limit": 10})
    )
    page = data(listed)
    (event,) = page["events"]
    assert (event["aggregate_type"], event["aggregate_id"], event["event_type"]) == ("user", user_id, "created")
    assert event["event_data"] == {"email": made["user"]["email"], "role": "admin"}
    assert event["actor_id"] == user_id
    assert event["actor"] == {"name": "Ada Agent", "email": made["user"]["email"]}
    assert (page["nextCursor"], page["hasMore"]) == (event["id"], False)
    assert listed.json()["result"]["data"]["meta"]["values"] == {"events.0.created_at": ["Date"]}
    got = data(await browser.client.get("/api/trpc/events.get?input=" + quote_input({"id": event["id"]})))
    assert got == event


async def test_events_of_another_organization_are_forbidden_and_unknown_ones_not_found(browser: Browser) -> None:
    theirs = await signed_up(browser, "Other Org")
    their_event = data(
        await browser.client.get(
            "/api/trpc/events.list?input=" + quote_input({"aggregateType": "user", "aggregateId": theirs["user"]["id"]})
        )
    )["events"][0]["id"]
    await signed_up(browser, "Our Org")
    for path, given in (
        ("events.list", {"aggregateType": "user", "aggregateId": theirs["user"]["id"]}),
        ("events.list", {"aggregateType": "organization", "aggregateId": theirs["organization"]["id"]}),
        ("events.get", {"id": their_event}),
    ):
        answer = await browser.client.get(f"/api/trpc/{path}?input=" + quote_input(given))
        assert (answer.status_code, error_code(answer)) == (403, "FORBIDDEN"), path
    missing = await browser.client.get("/api/trpc/events.get?input=" + quote_input({"id": str(uuid.uuid4())}))
    assert (missing.status_code, error_code(missing)) == (404, "NOT_FOUND")


async def test_events_input_is_checked(browser: Browser) -> None:
    made = await signed_up(browser)
    user_id = made["user"]["id"]
    for given in (
        {"aggregateType": "invoice", "aggregateId": user_id},
        {"aggregateType": "user", "aggregateId": "not-a-uuid"},
        {"aggregateType": "user", "aggregateId": user_id, "limit": 0},
        {"aggregateType": "user", "aggregateId": user_id, "limit": 101},
        {"aggregateType": "user", "aggregateId": user_id, "cursor": str(uuid.uuid4())},
    ):
        answer = await browser.client.get("/api/trpc/events.list?input=" + quote_input(given))
        assert (answer.status_code, error_code(answer)) == (400, "BAD_REQUEST"), given


async def test_a_user_who_has_not_signed_up_reads_no_events(browser: Browser) -> None:
    await browser.sign_in_by_link(email())
    answer = await browser.client.get(
        "/api/trpc/events.list?input=" + quote_input({"aggregateType": "user", "aggregateId": str(uuid.uuid4())})
    )
    assert (answer.status_code, error_code(answer)) == (403, "FORBIDDEN")


def quote_input(given: dict[str, Any]) -> str:
    return quote(json.dumps({"json": given}))


async def test_requests_sent_together_after_the_access_token_expired_all_pass(browser: Browser) -> None:
    """A query and a mutation (two requests, as httpBatchLink sends them) refresh with one token at once."""
    await browser.sign_in_by_link(email())
    browser.clock.offset = timedelta(minutes=16).total_seconds()
    held = dict(browser.client.cookies)
    answers = await asyncio.gather(*(browser.elsewhere(held, "/api/trpc/auth.getUser") for _ in range(3)))
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert data(await browser.query("auth.getUser"))  # and the session goes on


async def test_the_calls_after_a_sign_out_in_one_batch_are_signed_out(browser: Browser) -> None:
    await browser.sign_in_by_link(email())
    batch = await browser.client.post(
        "/api/trpc/auth.signOut,auth.updateProfile?batch=1", json={"0": {"json": None}, "1": {"json": {"name": "X"}}}
    )
    signed_out, profile = batch.json()
    assert signed_out["result"]["data"]["json"] == {"success": True}
    assert profile["error"]["json"]["data"]["code"] == "UNAUTHORIZED"


async def test_changing_the_password_ends_the_other_sessions_but_this_one(browser: Browser) -> None:
    address = email()
    await browser.sign_in_by_link(address)
    await browser.call("auth.setPassword", {"password": "first passphrase"})
    async with httpx.AsyncClient(transport=browser.client._transport, base_url=PUBLIC_URL) as device:
        signing_in = {"json": {"email": address, "password": "first passphrase"}}
        assert (await device.post("/api/trpc/auth.signInWithPassword", json=signing_in)).status_code == 200
        elsewhere = dict(device.cookies)
    change = {"currentPassword": "first passphrase", "newPassword": "second passphrase"}
    assert data(await browser.call("auth.changePassword", change)) == {"success": True}
    assert (await browser.elsewhere(elsewhere, "/api/trpc/auth.getUser")).status_code == 401
    assert data(await browser.query("auth.getUser"))["email"] == address


async def test_an_avatar_is_removed_with_null_and_absent_fields_stay(browser: Browser) -> None:
    await browser.sign_in_by_link(email())
    await browser.call("auth.updateProfile", {"name": "Ada", "avatar_url": "https://example.com/a.png"})
    user = data(await browser.call("auth.updateProfile", {"avatar_url": None}))
    assert (user["name"], user["avatar_url"]) == ("Ada", None)
    big = await browser.call("auth.updateProfile", {"preferences": {"x": "y" * 20_000}})
    assert (big.status_code, error_code(big)) == (400, "BAD_REQUEST")


async def test_social_sign_in_without_a_provider_is_precondition_failed_and_limited_per_client(
    browser: Browser,
) -> None:
    for _ in range(5):
        answer = await browser.call("auth.signInWithSocial", {"redirectTo": "/tickets"})
        assert (answer.status_code, error_code(answer)) == (412, "PRECONDITION_FAILED")
        assert "not configured" in answer.json()["error"]["json"]["message"]
    limited = await browser.call("auth.signInWithSocial", {})
    assert (limited.status_code, error_code(limited)) == (429, "TOO_MANY_REQUESTS")
