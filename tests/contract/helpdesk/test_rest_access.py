"""Sections 5.1 and 2.6 over the REST API (`/api/v1`): bearer `hd_live_` keys (none, unknown or revoked: 401, a
revocation holding on the very next request), the scope each route needs (403 `forbidden` without it; a write scope
implies its read, `<resource>:*` and `*` grant more), one organization per key (another's objects are 404, never 403),
per-key rate limits (429 `rate_limited` with Retry-After, the refused request doing nothing), unknown routes and
methods, and the error body `{"error": {"code", "message"}}` of every status."""

from __future__ import annotations

import math
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from storage.helpdesk import customers, keys, tickets
from tests.helpdesk_stack import HelpdeskStack, data, new_email
from tests.helpers import Organization as SignedUp
from tests.helpers import signed_up


@dataclass
class Organization(SignedUp):
    """A signed-up organization with a ticket (and its reply), a customer, a disabled webhook subscription and a key
    with every scope."""

    ticket: dict[str, Any]
    conversation: dict[str, Any]
    customer: dict[str, Any]
    event: dict[str, Any]
    webhook: dict[str, Any]

    async def rest_with(self, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return await self.stack.rest(key, method, path, **kwargs)

    def path(self, template: str) -> str:
        return template.format(
            ticket=self.ticket["id"],
            customer=self.customer["id"],
            event=self.event["id"],
            org=self.id,
            admin=self.admin_id,
            conversation=self.conversation["id"],
            webhook=self.webhook["id"],
        )


def answered(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return dict(response.json())


@asynccontextmanager
async def furnished(stack: HelpdeskStack) -> AsyncIterator[Organization]:
    """A new organization with one of each object, made through its `*` key."""
    async with signed_up(stack) as organization:
        rest = organization.rest
        made = {"subject": "Lost parcel", "customer_email": new_email("customer")}
        ticket = answered(await rest("POST", "/tickets", json=made), 201)
        conversation = answered(
            await rest("POST", f"/tickets/{ticket['id']}/conversations", json={"body": "On it"}), 201
        )
        ticket = answered(await rest("GET", f"/tickets/{ticket['id']}"), 200)  # as the reply left it
        contact = {"email": new_email("contact"), "name": "Mae Jemison"}
        customer = answered(await rest("POST", "/customers", json=contact), 201)
        (event,) = answered(await rest("GET", f"/tickets/{ticket['id']}/events"), 200)["data"][-1:]
        subscription = {"url": "http://127.0.0.1:9/hook", "events": ["ticket.created"], "enabled": False}
        webhook = answered(await rest("POST", "/webhooks", json=subscription), 201)
        yield Organization(
            **vars(organization),
            ticket=ticket,
            conversation=conversation,
            customer=customer,
            event=event,
            webhook=webhook,
        )


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with furnished(helpdesk_stack) as organization:
        yield organization


def rows_of(connection: Connection, organization_id: str) -> tuple[int, int, int]:
    def count(table: Any) -> int:
        return int(
            connection.execute(select(func.count()).where(table.c.organization_id == organization_id)).scalar_one()
        )

    return count(tickets.TICKETS), count(tickets.CONVERSATIONS), count(customers.CUSTOMERS)


async def rows(org: Organization) -> tuple[int, int, int]:
    """The organization's tickets, conversations and customers."""
    return await org.stack.db.read(rows_of, org.id)


def assert_error(response: httpx.Response, status: int, code: str, *named: str) -> None:
    """The REST error envelope, exactly: `{"error": {"code", "message"}}`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    for name in named:
        assert name in body["error"]["message"], body


ROUTES: list[tuple[str, str, str, Any]] = [
    ("GET", "/tickets", "tickets:read", None),
    ("POST", "/tickets", "tickets:write", {"subject": "Hello", "customer_email": "scoped@example.com"}),
    ("GET", "/tickets/{ticket}", "tickets:read", None),
    ("PATCH", "/tickets/{ticket}", "tickets:write", {"priority": "high"}),
    ("GET", "/tickets/{ticket}/conversations", "conversations:read", None),
    ("POST", "/tickets/{ticket}/conversations", "conversations:write", {"body": "A reply"}),
    ("GET", "/tickets/{ticket}/events", "events:read", None),
    ("GET", "/customers", "customers:read", None),
    ("POST", "/customers", "customers:write", {"email": "scoped@example.com", "name": "Scoped"}),
    ("GET", "/customers/{customer}", "customers:read", None),
    ("PATCH", "/customers/{customer}", "customers:write", {"name": "Renamed"}),
    ("GET", "/events?aggregate_type=ticket&aggregate_id={ticket}", "events:read", None),
    ("GET", "/events/{event}", "events:read", None),
    ("GET", "/webhooks", "webhooks:read", None),
    ("POST", "/webhooks", "webhooks:write", {"url": "http://127.0.0.1:9/hook", "events": ["ticket.created"]}),
]
ROUTE_IDS = [f"{method} {path.split('?')[0]}" for method, path, _, _ in ROUTES]


async def call(org: Organization, key: str | None, method: str, template: str, body: Any) -> httpx.Response:
    response = await org.rest_with(key, method, org.path(template), json=body)
    if method == "POST" and template == "/webhooks" and response.status_code == 201:
        # a subscription to a closed port would send the organization's events nowhere, retried for a day
        answered(await org.rest("DELETE", f"/webhooks/{response.json()['id']}"), 200)
    return response


# Keys


@pytest.mark.parametrize(("method", "template", "scope", "body"), ROUTES, ids=ROUTE_IDS)
async def test_no_key_is_401(org: Organization, method: str, template: str, scope: str, body: Any) -> None:
    before = await rows(org)
    response = await call(org, None, method, template, body)
    assert_error(response, 401, "unauthorized", "Authorization: Bearer")
    assert await rows(org) == before


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(f"Bearer hd_live_{secrets.token_hex(20)}", id="unknown-key"),
        pytest.param(f"Bearer hd_test_{secrets.token_hex(20)}", id="not-a-live-key"),
        pytest.param(f"Bearer sy_live_{secrets.token_hex(20)}", id="another-services-key"),
        pytest.param("Bearer hd_live_", id="no-secret"),
        pytest.param("Bearer garbage", id="garbage"),
    ],
)
async def test_an_unknown_key_is_401(helpdesk_stack: HelpdeskStack, authorization: str) -> None:
    response = await helpdesk_stack.client.get("/api/v1/tickets", headers={"Authorization": authorization})
    assert_error(response, 401, "unauthorized")


async def test_a_key_sent_other_than_as_bearer_is_401(org: Organization, helpdesk_stack: HelpdeskStack) -> None:
    for headers in ({"Authorization": f"Basic {org.key}"}, {"Authorization": org.key}, {"X-API-Key": org.key}):
        assert_error(await helpdesk_stack.client.get("/api/v1/tickets", headers=headers), 401, "unauthorized")
    lower_case_scheme = await helpdesk_stack.client.get(
        "/api/v1/tickets", headers={"authorization": f"bearer {org.key}"}
    )
    assert lower_case_scheme.status_code == 200, lower_case_scheme.text


async def test_a_revoked_key_is_401_on_the_very_next_request(org: Organization) -> None:
    created = data(await org.browser.call("apiKeys.create", {"name": "soon revoked", "scopes": ["tickets:write"]}))
    assert (await org.rest_with(created["key"], "GET", "/tickets")).status_code == 200
    revoked = data(await org.browser.call("apiKeys.revoke", {"id": created["id"]}))
    assert revoked["success"] is True
    before = await rows(org)
    assert_error(await org.rest_with(created["key"], "GET", "/tickets"), 401, "unauthorized", "revoked")
    refused = await org.rest_with(
        created["key"], "POST", "/tickets", json={"subject": "Too late", "customer_email": new_email()}
    )
    assert_error(refused, 401, "unauthorized")
    assert await rows(org) == before
    assert (await org.rest("GET", "/tickets")).status_code == 200  # the organization's other keys still work


# Scopes


@pytest.mark.parametrize(("method", "template", "scope", "body"), ROUTES, ids=ROUTE_IDS)
async def test_a_key_lacking_the_routes_scope_is_403_forbidden(
    org: Organization, method: str, template: str, scope: str, body: Any
) -> None:
    resource, _, action = scope.partition(":")
    others = [f"{other}:*" for other in keys.RESOURCES if other != resource]
    lacking = await org.browser.api_key(*others, *([f"{resource}:read"] if action == "write" else []))
    before = await rows(org)
    response = await call(org, lacking, method, template, body)
    assert_error(response, 403, "forbidden", scope)
    assert await rows(org) == before


@pytest.mark.parametrize(("method", "template", "scope", "body"), ROUTES, ids=ROUTE_IDS)
async def test_the_routes_own_scope_is_enough(
    org: Organization, method: str, template: str, scope: str, body: Any
) -> None:
    response = await call(org, await org.browser.api_key(scope), method, template, body)
    assert response.status_code == (201 if method == "POST" else 200), response.text


@pytest.mark.parametrize(
    ("write", "template"),
    [
        ("tickets:write", "/tickets/{ticket}"),
        ("customers:write", "/customers/{customer}"),
        ("conversations:write", "/tickets/{ticket}/conversations"),
        ("webhooks:write", "/webhooks"),
    ],
)
async def test_a_write_scope_implies_its_read(org: Organization, write: str, template: str) -> None:
    response = await org.rest_with(await org.browser.api_key(write), "GET", org.path(template))
    assert response.status_code == 200, response.text


async def test_a_read_scope_does_not_grant_its_write(org: Organization) -> None:
    reader = await org.browser.api_key("tickets:read")
    assert (await org.rest_with(reader, "GET", org.path("/tickets/{ticket}"))).status_code == 200
    patched = await org.rest_with(reader, "PATCH", org.path("/tickets/{ticket}"), json={"status": "closed"})
    assert_error(patched, 403, "forbidden", "tickets:write")
    assert (await org.rest("GET", org.path("/tickets/{ticket}"))).json() == org.ticket


async def test_resource_star_grants_that_resources_read_and_write_only(org: Organization) -> None:
    key = await org.browser.api_key("tickets:*")
    assert (await org.rest_with(key, "GET", "/tickets")).status_code == 200
    created = await org.rest_with(key, "POST", "/tickets", json={"subject": "Star", "customer_email": new_email()})
    assert created.status_code == 201, created.text
    patched = await org.rest_with(key, "PATCH", f"/tickets/{created.json()['id']}", json={"status": "closed"})
    assert (patched.status_code, patched.json()["status"]) == (200, "closed")
    assert_error(await org.rest_with(key, "GET", "/customers"), 403, "forbidden", "customers:read")
    assert_error(
        await org.rest_with(key, "GET", org.path("/tickets/{ticket}/conversations")), 403, "forbidden", "conversations"
    )


@pytest.mark.parametrize(("method", "template", "scope", "body"), ROUTES, ids=ROUTE_IDS)
async def test_star_grants_every_route(org: Organization, method: str, template: str, scope: str, body: Any) -> None:
    response = await call(org, org.key, method, template, body)
    assert response.status_code == (201 if method == "POST" else 200), response.text


# One organization per key


THEIRS = [
    ("GET", "/tickets/{ticket}", None),
    ("PATCH", "/tickets/{ticket}", {"status": "closed", "priority": "urgent"}),
    ("GET", "/tickets/{ticket}/conversations", None),
    ("POST", "/tickets/{ticket}/conversations", {"body": "Not yours"}),
    ("GET", "/tickets/{ticket}/events", None),
    ("GET", "/customers/{customer}", None),
    ("PATCH", "/customers/{customer}", {"name": "Not yours"}),
    ("GET", "/events/{event}", None),
    ("GET", "/events?aggregate_type=ticket&aggregate_id={ticket}", None),
    ("GET", "/events?aggregate_type=conversation&aggregate_id={conversation}", None),
    ("GET", "/events?aggregate_type=user&aggregate_id={admin}", None),
    ("GET", "/events?aggregate_type=organization&aggregate_id={org}", None),
    ("PATCH", "/webhooks/{webhook}", {"enabled": True}),
    ("DELETE", "/webhooks/{webhook}", None),
    ("POST", "/webhooks/{webhook}/test", None),
]


@pytest.mark.parametrize(("method", "template", "body"), THEIRS, ids=[f"{m} {p}" for m, p, _ in THEIRS])
async def test_another_organizations_object_is_404_never_403(
    org: Organization, helpdesk_stack: HelpdeskStack, method: str, template: str, body: Any
) -> None:
    before = await rows(org)
    async with furnished(helpdesk_stack) as other:
        response = await other.rest(method, org.path(template), json=body)
        assert_error(response, 404, "not_found")
        other_rows = await rows(other)
    assert await rows(org) == before
    assert other_rows == (1, 1, 2)
    assert (await org.rest("GET", org.path("/tickets/{ticket}"))).json() == org.ticket
    assert (await org.rest("GET", org.path("/customers/{customer}"))).json() == org.customer
    assert answered(await org.rest("GET", "/webhooks"), 200)["data"] == [org.webhook]


async def test_listings_show_only_the_keys_organization(org: Organization, helpdesk_stack: HelpdeskStack) -> None:
    async with furnished(helpdesk_stack) as other:
        their_tickets = answered(await other.rest("GET", "/tickets"), 200)["data"]
        their_customers = answered(await other.rest("GET", "/customers"), 200)["data"]
        by_their_customer = answered(
            await other.rest("GET", "/tickets", params={"customer_id": org.ticket["customer_id"]}), 200
        )["data"]
        assert [ticket["id"] for ticket in their_tickets] == [other.ticket["id"]]
        assert {customer["id"] for customer in their_customers} == {
            other.ticket["customer_id"],
            other.customer["id"],
        }
        assert by_their_customer == []
        assert answered(await other.rest("GET", "/webhooks"), 200)["data"] == [other.webhook]


# Rate limits


@pytest.mark.parametrize(
    ("rate_limits", "window_s"),
    [
        pytest.param({"minute": 3, "hour": 1000}, 60, id="minute"),
        pytest.param({"minute": 1000, "hour": 3}, 3600, id="hour"),
    ],
)
async def test_a_keys_spent_budget_is_429_with_retry_after_and_the_refused_request_creates_nothing(
    org: Organization, rate_limits: dict[str, int], window_s: int
) -> None:
    _, limited = await org.stack.db.write(
        keys.create_key, org.id, name="small budget", scopes=["*"], rate_limits=rate_limits
    )
    started = time.time()  # the budget's window began no earlier: it is a moving window from the first request
    for _ in range(3):
        made = await org.rest_with(
            limited, "POST", "/tickets", json={"subject": "Within budget", "customer_email": new_email()}
        )
        assert made.status_code == 201, made.text
    before = await rows(org)
    refused = await org.rest_with(
        limited, "POST", "/tickets", json={"subject": "Over budget", "customer_email": new_email()}
    )
    assert_error(refused, 429, "rate_limited", "Rate limit")
    elapsed = time.time() - started
    # until the first request of the full window leaves it: the window's length, less the time since then
    assert math.floor(window_s - elapsed) <= int(refused.headers["Retry-After"]) <= window_s
    assert await rows(org) == before
    assert_error(await org.rest_with(limited, "GET", "/tickets"), 429, "rate_limited")
    assert (await org.rest("GET", "/tickets")).status_code == 200  # another key of the organization: its own budget


async def test_a_request_refused_for_its_scope_costs_no_budget(org: Organization) -> None:
    _, limited = await org.stack.db.write(
        keys.create_key, org.id, name="small budget", scopes=["customers:read"], rate_limits={"minute": 2, "hour": 100}
    )
    for _ in range(3):
        assert_error(await org.rest_with(limited, "GET", "/tickets"), 403, "forbidden")
    assert (await org.rest_with(limited, "GET", "/customers")).status_code == 200
    assert (await org.rest_with(limited, "GET", "/customers")).status_code == 200
    assert_error(await org.rest_with(limited, "GET", "/customers"), 429, "rate_limited")


# Routes and methods


@pytest.mark.parametrize("path", ["/nothing-here", "/tickets/x/attachments", "/sequences/2"])
async def test_an_unknown_route_is_404_in_the_rest_envelope(org: Organization, path: str) -> None:
    assert_error(await org.rest("GET", path), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "template", "allowed"),
    [
        ("PUT", "/tickets/{ticket}", {"GET", "PATCH", "DELETE"}),
        ("PUT", "/tickets", {"GET", "POST"}),
        ("PUT", "/customers/{customer}", {"GET", "PATCH", "DELETE"}),
        ("POST", "/events", {"GET"}),
        ("PATCH", "/tickets/{ticket}/events", {"GET"}),
    ],
)
async def test_a_wrong_method_is_405_in_the_rest_envelope_with_allow(
    org: Organization, method: str, template: str, allowed: set[str]
) -> None:
    before = await rows(org)
    response = await org.rest(method, org.path(template))
    assert_error(response, 405, "method_not_allowed", method)
    assert allowed <= {name.strip() for name in response.headers["Allow"].split(",")}
    assert await rows(org) == before


# The error body of each status


async def _bad_body(org: Organization) -> httpx.Response:
    return await org.rest("POST", "/tickets", json={"subject": 1, "customer_email": new_email()})


async def _no_key(org: Organization) -> httpx.Response:
    return await org.rest_with(None, "GET", "/tickets")


async def _lacking_scope(org: Organization) -> httpx.Response:
    return await org.rest_with(await org.browser.api_key("customers:read"), "GET", "/tickets")


async def _unknown_ticket(org: Organization) -> httpx.Response:
    return await org.rest("GET", f"/tickets/{uuid.uuid4()}")


async def _wrong_method(org: Organization) -> httpx.Response:
    return await org.rest("DELETE", "/tickets")


async def _address_taken(org: Organization) -> httpx.Response:
    return await org.rest("POST", "/customers", json={"email": org.customer["email"], "name": "Twin"})


async def _too_large(org: Organization) -> httpx.Response:
    body = {"subject": "Big", "customer_email": new_email(), "message": "x" * (1024 * 1024 + 1)}
    return await org.rest("POST", "/tickets", json=body)


async def _rate_limited(org: Organization) -> httpx.Response:
    _, limited = await org.stack.db.write(
        keys.create_key, org.id, name="one request", scopes=["*"], rate_limits={"minute": 1, "hour": 100}
    )
    assert (await org.rest_with(limited, "GET", "/tickets")).status_code == 200
    return await org.rest_with(limited, "GET", "/tickets")


ERRORS: list[tuple[int, str, Callable[[Organization], Awaitable[httpx.Response]]]] = [
    (400, "invalid_request", _bad_body),
    (401, "unauthorized", _no_key),
    (403, "forbidden", _lacking_scope),
    (404, "not_found", _unknown_ticket),
    (405, "method_not_allowed", _wrong_method),
    (409, "conflict", _address_taken),
    (413, "payload_too_large", _too_large),
    (429, "rate_limited", _rate_limited),
]


@pytest.mark.parametrize(("status", "code", "provoke"), ERRORS, ids=[str(status) for status, _, _ in ERRORS])
async def test_every_error_has_the_rest_error_body(
    org: Organization, status: int, code: str, provoke: Callable[[Organization], Awaitable[httpx.Response]]
) -> None:
    before = await rows(org)
    assert_error(await provoke(org), status, code)
    assert await rows(org) == before
