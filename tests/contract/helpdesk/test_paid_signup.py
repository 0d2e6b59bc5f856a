"""Sections 3, 4.2, 5.1, 6.2 and 7: `auth.completeSignup` with a paid plan against a local server speaking Stripe's
wire format: the workspace made `incomplete` with one Stripe customer and a Checkout Session whose URL the answer
carries, resumed with the same customer, recoverable after a provider failure, PRECONDITION_FAILED with nothing
written when no provider is configured; the free plan requires no payment."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.helpdesk import accounts
from storage.helpdesk.events import EVENTS
from storage.helpdesk.workspaces import ORGANIZATIONS
from tests.helpdesk_stack import Browser, HelpdeskGatewayOnly, HelpdeskStack, data
from tests.peers.stripe import CUSTOMERS, SESSIONS, StripeServer

INTERNAL_SERVER_ERROR = (500, "INTERNAL_SERVER_ERROR", -32603)
PRECONDITION_FAILED = (412, "PRECONDITION_FAILED", -32012)
UNAUTHORIZED = (401, "UNAUTHORIZED", -32001)


def refusal(answer: httpx.Response) -> tuple[int, str, int]:
    """A lone call's error as the caller sees it: (HTTP status, `data.code`, `code`); `data.httpStatus` agrees."""
    error = answer.json()["error"]["json"]
    assert error["data"]["httpStatus"] == answer.status_code, error
    assert error["message"]
    return answer.status_code, error["data"]["code"], error["code"]


def signup(plan: str, organization: str) -> dict[str, Any]:
    return {"name": "Pat Payer", "organizationName": organization, "planTier": plan}


def unique(name: str) -> str:
    return f"{name} {uuid.uuid4().hex[:8]}"


@pytest.fixture
def stripe() -> Iterator[StripeServer]:
    with StripeServer("sk_test_helpdesk_contract") as server:
        yield server


@pytest.fixture
async def paid(helpdesk_gateway_only: HelpdeskGatewayOnly, stripe: StripeServer) -> AsyncIterator[HelpdeskStack]:
    """A helpdesk gateway whose payment provider is the local Stripe server."""
    async with helpdesk_gateway_only(
        helpdesk_stripe_secret_key=stripe.secret_key, helpdesk_stripe_api_base=stripe.base_url
    ) as alone:
        yield alone


def organizations_named(connection: Connection, name: str) -> list[Any]:
    return list(connection.execute(select(ORGANIZATIONS).where(ORGANIZATIONS.c.name == name)))


def user_events(connection: Connection, user_id: str) -> list[Any]:
    statement = select(EVENTS).where(EVENTS.c.aggregate_type == "user", EVENTS.c.aggregate_id == user_id)
    return list(connection.execute(statement))


async def signed_in(browser: Browser) -> str:
    """Signs the browser in (not signed up); its user's id."""
    await browser.sign_in()
    user = data(await browser.query("auth.getUser"))
    assert user["organization_id"] is None
    return str(user["id"])


@pytest.mark.parametrize("plan", ["pro", "business"])
async def test_a_paid_plan_makes_an_incomplete_workspace_and_answers_the_checkout_url_of_its_session(
    paid: HelpdeskStack, stripe: StripeServer, plan: str
) -> None:
    organization = unique("Paying Co")
    async with paid.browser() as browser:
        user_id = await signed_in(browser)
        made = data(await browser.call("auth.completeSignup", signup(plan, organization)))
        assert made["requiresPayment"] is True
        [(customer_id, customer)] = stripe.customers.items()
        [session] = stripe.sessions.values()
        assert made["checkoutUrl"] == session["url"]
        assert made["user"] == {
            "id": user_id,
            "email": browser.email,
            "name": "Pat Payer",
            "organization_id": made["organization"]["id"],
            "role": "admin",
        }
        assert made["organization"]["name"] == organization
        organization_id = made["organization"]["id"]
        assert (customer["email"], customer["metadata"]) == (browser.email, {"organization_id": organization_id})
        assert (session["customer"], session["mode"], session["client_reference_id"]) == (
            customer_id,
            "subscription",
            organization_id,
        )
        assert session["metadata"] == {"organization_id": organization_id, "plan": plan}
        cancelled = urlsplit(session["cancel_url"])
        assert cancelled.path == "/signup/complete"  # back to signup with the selected plan (section 3)
        assert parse_qs(cancelled.query)["plan"] == [plan]
        assert all(request.authorized for request in stripe.requests)
        [row] = await paid.db.read(organizations_named, organization)
        assert (row.id, row.plan, row.billing_status, row.billing_customer_id) == (
            organization_id,
            plan,
            "incomplete",
            customer_id,
        )
        [event] = await paid.db.read(user_events, user_id)
        assert (event.event_type, event.event_data, event.actor_id) == (
            "created",
            {"email": browser.email, "role": "admin"},
            user_id,
        )


async def test_a_second_call_resumes_with_the_same_stripe_customer_and_a_new_session(
    paid: HelpdeskStack, stripe: StripeServer
) -> None:
    organization = unique("Resumed Co")
    async with paid.browser() as browser:
        await signed_in(browser)
        first = data(await browser.call("auth.completeSignup", signup("pro", organization)))
        again = data(await browser.call("auth.completeSignup", signup("pro", organization)))
    assert again["requiresPayment"] is True
    assert (again["user"], again["organization"]) == (first["user"], first["organization"])
    [customer_id] = stripe.customers
    first_session, second_session = stripe.sessions.values()
    assert (first["checkoutUrl"], again["checkoutUrl"]) == (first_session["url"], second_session["url"])
    assert first["checkoutUrl"] != again["checkoutUrl"]
    assert first_session["customer"] == second_session["customer"] == customer_id
    assert len(stripe.requests_to(CUSTOMERS)) == 1  # the stored customer is reused, not asked for again
    [row] = await paid.db.read(organizations_named, organization)
    assert (row.billing_status, row.billing_customer_id) == ("incomplete", customer_id)


async def test_concurrent_paid_signups_make_one_workspace_with_one_stripe_customer(
    paid: HelpdeskStack, stripe: StripeServer
) -> None:
    organization = unique("Racing Co")
    async with paid.browser() as browser:
        await signed_in(browser)
        answers = await asyncio.gather(
            *(browser.call("auth.completeSignup", signup("pro", organization)) for _ in range(5))
        )
    made = [data(answer) for answer in answers]
    assert len({answer["organization"]["id"] for answer in made}) == 1
    assert all(answer["requiresPayment"] for answer in made)
    [row] = await paid.db.read(organizations_named, organization)
    [customer_id] = stripe.customers
    assert row.billing_customer_id == customer_id
    assert {session["customer"] for session in stripe.sessions.values()} == {customer_id}
    assert {answer["checkoutUrl"] for answer in made} <= {session["url"] for session in stripe.sessions.values()}


@pytest.mark.parametrize("failing", [CUSTOMERS, SESSIONS])
async def test_a_provider_failure_is_internal_server_error_and_the_retry_completes_the_same_workspace(
    paid: HelpdeskStack, stripe: StripeServer, failing: str
) -> None:
    organization = unique("Retried Co")
    stripe.fail_next(failing, status=500)
    async with paid.browser() as browser:
        user_id = await signed_in(browser)
        failed = await browser.call("auth.completeSignup", signup("business", organization))
        assert refusal(failed) == INTERNAL_SERVER_ERROR
        assert "sk_test_helpdesk_contract" not in failed.text
        [kept] = await paid.db.read(organizations_named, organization)  # recoverable: made, payment not set up
        assert (kept.plan, kept.billing_status) == ("business", "incomplete")
        user = data(await browser.query("auth.getUser"))
        assert (user["organization_id"], user["role"]) == (kept.id, "admin")
        retried = data(await browser.call("auth.completeSignup", signup("business", organization)))
    assert retried["requiresPayment"] is True
    assert (retried["organization"]["id"], retried["organization"]["slug"]) == (kept.id, kept.slug)
    [row] = await paid.db.read(organizations_named, organization)  # no second organization
    [customer_id] = stripe.customers
    [session] = stripe.sessions.values()
    assert retried["checkoutUrl"] == session["url"]
    assert session["customer"] == customer_id
    assert (row.id, row.billing_status, row.billing_customer_id) == (kept.id, "incomplete", customer_id)
    assert len(await paid.db.read(user_events, user_id)) == 1  # signup's one `created` event


async def test_a_paid_plan_without_a_payment_provider_is_precondition_failed_and_writes_nothing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    organization = unique("Unpaid Co")
    async with helpdesk_stack.browser() as browser:
        user_id = await signed_in(browser)
        for plan in ("pro", "business"):
            refused = await browser.call("auth.completeSignup", signup(plan, organization))
            assert refusal(refused) == PRECONDITION_FAILED, plan
        user = await helpdesk_stack.db.read(accounts.user_by_id, user_id)
        assert user is not None
        assert (user.organization_id, user.role) == (None, None)
        assert await helpdesk_stack.db.read(organizations_named, organization) == []
        assert await helpdesk_stack.db.read(user_events, user_id) == []
        free = data(await browser.call("auth.completeSignup", signup("free", organization)))  # nothing stood in the way
    assert (free["requiresPayment"], free["organization"]["name"]) == (False, organization)
    assert [row.plan for row in await helpdesk_stack.db.read(organizations_named, organization)] == ["free"]


async def test_the_free_plan_requires_no_payment_and_asks_nothing_of_the_provider(
    paid: HelpdeskStack, stripe: StripeServer
) -> None:
    organization = unique("Free Co")
    async with paid.browser() as browser:
        await signed_in(browser)
        made = data(await browser.call("auth.completeSignup", {"name": "Fay Free", "organizationName": organization}))
    assert made["requiresPayment"] is False
    assert "checkoutUrl" not in made
    assert made["user"]["role"] == "admin"
    [row] = await paid.db.read(organizations_named, organization)
    assert (row.id, row.plan, row.billing_status, row.billing_customer_id) == (
        made["organization"]["id"],
        "free",
        "none",
        None,
    )
    assert stripe.requests == []


async def test_an_api_key_never_authorizes_complete_signup_and_reaches_no_provider(
    paid: HelpdeskStack, stripe: StripeServer
) -> None:
    """Even a valid key of a real organization, sent beside a signed-in user's cookies."""
    async with paid.browser() as owner:
        await owner.sign_up(unique("Key Owner"))
        key = await owner.api_key("*")
    organization = unique("Keyed Co")
    async with paid.browser() as browser:
        user_id = await signed_in(browser)
        answer = await browser.client.post(
            "/api/trpc/auth.completeSignup",
            json={"json": signup("pro", organization)},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert refusal(answer) == UNAUTHORIZED
        async with httpx.AsyncClient(base_url=paid.base_url, timeout=60) as bare:  # the key alone
            alone = await bare.post(
                "/api/trpc/auth.completeSignup",
                json={"json": signup("pro", organization)},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert refusal(alone) == UNAUTHORIZED
    assert stripe.requests == []
    assert await paid.db.read(organizations_named, organization) == []
    user = await paid.db.read(accounts.user_by_id, user_id)
    assert user is not None
    assert user.organization_id is None
