"""Sections 2, 5.1 and 6.1 over the REST API's customers (`/api/v1/customers`): create, get, list (newest first, by
address, paged) and update; one customer per address in an organization (409 on create and on update, under
concurrent creates too); addresses lower-cased; `customer.created` and `customer.updated` recorded with each change
and nothing for a change of nothing; bad bodies refused whole with a message naming the field."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from storage.helpdesk import customers
from tests.helpdesk_stack import HelpdeskStack, new_email
from tests.helpers import Organization, signed_up

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CUSTOMER_FIELDS = {"id", "email", "name", "phone", "bouncing", "created_at", "updated_at"}


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    """A signed-up organization whose key holds `customers:write` alone."""
    async with signed_up(helpdesk_stack, "customers:write") as organization:
        yield organization


async def create(org: Organization, **body: Any) -> dict[str, Any]:
    body.setdefault("email", new_email("customer"))
    body.setdefault("name", "Grace Hopper")
    response = await org.rest("POST", "/customers", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def get(org: Organization, customer_id: str) -> dict[str, Any]:
    response = await org.rest("GET", f"/customers/{customer_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def listed(org: Organization, **params: Any) -> list[dict[str, Any]]:
    response = await org.rest("GET", "/customers", params={"limit": 100, **params})
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


def customers_of(connection: Connection, organization_id: str) -> int:
    table = customers.CUSTOMERS.c
    return int(connection.execute(select(func.count()).where(table.organization_id == organization_id)).scalar_one())


def webhook_events_of(connection: Connection, organization_id: str) -> list[tuple[str, dict[str, Any]]]:
    hooks = WEBHOOK_EVENTS.c
    rows = connection.execute(
        select(hooks.type, hooks.body)
        .where(hooks.service == "helpdesk", hooks.owner_id == organization_id)
        .order_by(hooks.created_at, hooks.id)
    )
    return [(row.type, json.loads(row.body)["data"]) for row in rows]


async def stored(org: Organization) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """How many customers the organization has, and its outgoing webhook events (name, data) in order."""
    return await org.stack.db.read(customers_of, org.id), await org.stack.db.read(webhook_events_of, org.id)


def assert_error(response: httpx.Response, status: int, code: str, *named: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    for name in named:
        assert name in body["error"]["message"], body


async def test_a_created_customer_answers_its_fields(org: Organization) -> None:
    customer = await create(org, email="grace@example.com", name="Grace Hopper", phone="+1 415 555 0100")
    assert set(customer) == CUSTOMER_FIELDS
    assert UUID.match(customer["id"])
    assert (customer["email"], customer["name"], customer["phone"]) == (
        "grace@example.com",
        "Grace Hopper",
        "+1 415 555 0100",
    )
    assert customer["created_at"] == customer["updated_at"]
    assert customer["created_at"].endswith("Z")
    assert (await create(org, name="No Phone"))["phone"] is None


async def test_a_create_records_customer_created(org: Organization) -> None:
    customer = await create(org, email="mae@example.com", name="Mae Jemison")
    assert (await stored(org))[1] == [
        (
            "customer.created",
            {"customerId": customer["id"], "email": "mae@example.com", "name": "Mae Jemison", "phone": None},
        )
    ]


async def test_get_answers_the_customer_as_created(org: Organization) -> None:
    customer = await create(org)
    assert await get(org, customer["id"]) == customer


@pytest.mark.parametrize("customer_id", ["3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c", "not-a-uuid"])
async def test_an_unknown_customer_is_404(org: Organization, customer_id: str) -> None:
    assert_error(await org.rest("GET", f"/customers/{customer_id}"), 404, "not_found", "customer")
    patched = await org.rest("PATCH", f"/customers/{customer_id}", json={"name": "Nobody"})
    assert_error(patched, 404, "not_found", "customer")
    assert await stored(org) == (0, [])


async def test_addresses_are_lower_cased(org: Organization) -> None:
    customer = await create(org, email="Ada.Lovelace@Example.COM")
    assert customer["email"] == "ada.lovelace@example.com"
    assert (await get(org, customer["id"]))["email"] == "ada.lovelace@example.com"
    assert [found["id"] for found in await listed(org, email="ADA.LOVELACE@example.com")] == [customer["id"]]
    updated = await org.rest("PATCH", f"/customers/{customer['id']}", json={"email": "Countess@Example.COM"})
    assert updated.status_code == 200, updated.text
    assert updated.json()["email"] == "countess@example.com"


async def test_the_listing_is_newest_first(org: Organization) -> None:
    made = [await create(org) for _ in range(3)]
    customers_listed = await listed(org)
    assert customers_listed == made[::-1]
    assert all(set(customer) == CUSTOMER_FIELDS for customer in customers_listed)


async def test_the_email_filter_answers_that_customer_only(org: Organization) -> None:
    wanted = await create(org, email="wanted@example.com")
    await create(org, email="unwanted@example.com")
    assert await listed(org, email="wanted@example.com") == [wanted]
    assert await listed(org, email="Wanted@Example.com") == [wanted]
    assert await listed(org, email="wanted") == []
    assert await listed(org, email="nobody@example.com") == []


async def test_the_listing_pages_by_cursor(org: Organization) -> None:
    made = [(await create(org))["id"] for _ in range(5)]
    first = (await org.rest("GET", "/customers", params={"limit": 2})).json()
    assert ([c["id"] for c in first["data"]], first["has_more"], first["next_cursor"]) == (made[:2:-1], True, made[3])
    second = (await org.rest("GET", "/customers", params={"limit": 2, "cursor": first["next_cursor"]})).json()
    assert ([c["id"] for c in second["data"]], second["has_more"]) == ([made[2], made[1]], True)
    third = (await org.rest("GET", "/customers", params={"limit": 2, "cursor": second["next_cursor"]})).json()
    assert ([c["id"] for c in third["data"]], third["has_more"], third["next_cursor"]) == ([made[0]], False, None)
    stray = await org.rest("GET", "/customers", params={"cursor": str(uuid.uuid4())})
    assert_error(stray, 404, "not_found", "cursor")
    assert_error(await org.rest("GET", "/customers", params={"cursor": "x"}), 400, "invalid_request", "cursor")


async def test_an_organization_sees_only_its_own_customers(org: Organization, helpdesk_stack: HelpdeskStack) -> None:
    mine = await create(org, email="shared@example.com")
    async with signed_up(helpdesk_stack, "customers:write") as other:
        theirs = await create(other, email="shared@example.com")  # an address is unique within an organization only
        assert await listed(other) == [theirs]
    assert theirs["id"] != mine["id"]
    assert await listed(org) == [mine]


async def test_an_update_changes_only_the_given_fields(org: Organization) -> None:
    customer = await create(org, email="old@example.com", name="Old Name", phone="+14155550100")
    response = await org.rest("PATCH", f"/customers/{customer['id']}", json={"name": "New Name"})
    assert response.status_code == 200, response.text
    updated = response.json()
    assert {**customer, "name": "New Name", "updated_at": updated["updated_at"]} == updated
    assert updated["updated_at"] >= customer["updated_at"]
    assert await get(org, customer["id"]) == updated
    assert (await stored(org))[1][-1] == (
        "customer.updated",
        {"customerId": customer["id"], "email": "old@example.com", "name": "New Name", "phone": "+14155550100"},
    )


async def test_phone_null_removes_the_phone_number(org: Organization) -> None:
    customer = await create(org, phone="+14155550100")
    response = await org.rest("PATCH", f"/customers/{customer['id']}", json={"phone": None})
    assert response.status_code == 200, response.text
    assert response.json()["phone"] is None
    assert (await get(org, customer["id"]))["phone"] is None


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="empty"),
        pytest.param({"name": "Same Name", "phone": None}, id="same-values"),
        pytest.param({"email": "Same@Example.com"}, id="own-address-in-another-case"),
    ],
)
async def test_an_update_that_changes_nothing_records_nothing(org: Organization, body: dict[str, Any]) -> None:
    customer = await create(org, email="same@example.com", name="Same Name")
    before = await stored(org)
    response = await org.rest("PATCH", f"/customers/{customer['id']}", json=body)
    assert response.status_code == 200, response.text
    assert response.json() == customer
    assert await stored(org) == before


@pytest.mark.parametrize("address", ["taken@example.com", "Taken@EXAMPLE.com"])
async def test_an_address_taken_is_409_on_create_and_creates_nothing(org: Organization, address: str) -> None:
    await create(org, email="taken@example.com")
    before = await stored(org)
    response = await org.rest("POST", "/customers", json={"email": address, "name": "Impostor"})
    assert_error(response, 409, "conflict", "taken@example.com")
    assert await stored(org) == before


@pytest.mark.parametrize("address", ["taken@example.com", "TAKEN@example.com"])
async def test_an_address_taken_is_409_on_update_and_changes_nothing(org: Organization, address: str) -> None:
    await create(org, email="taken@example.com")
    customer = await create(org, email="free@example.com")
    before = await stored(org)
    response = await org.rest("PATCH", f"/customers/{customer['id']}", json={"email": address, "name": "Changed"})
    assert_error(response, 409, "conflict", "taken@example.com")
    assert await get(org, customer["id"]) == customer
    assert await stored(org) == before


async def test_concurrent_creates_of_one_address_make_one_customer(org: Organization) -> None:
    answers = await asyncio.gather(
        *(org.rest("POST", "/customers", json={"email": "rush@example.com", "name": f"Rush {i}"}) for i in range(10))
    )
    assert sorted(answer.status_code for answer in answers) == [201] + [409] * 9
    count, hooks = await stored(org)
    assert (count, [name for name, _ in hooks]) == (1, ["customer.created"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"email": "a@example.com", "name": "A", "vip": True}, "vip", id="unknown-field"),
        pytest.param({"email": 5, "name": "A"}, "email", id="wrong-type"),
        pytest.param({"name": "A"}, "email", id="email-missing"),
        pytest.param({"email": "a@example.com"}, "name", id="name-missing"),
        pytest.param({"email": "not-an-address", "name": "A"}, "email", id="bad-address"),
        pytest.param({"email": "a@example.com", "name": ""}, "name", id="name-empty"),
        pytest.param({"email": "a@example.com", "name": "n" * 256}, "name", id="name-over-255"),
        pytest.param({"email": "a@example.com", "name": "A", "phone": "call me"}, "phone", id="bad-phone"),
        pytest.param({"email": "a" * 310 + "@example.com", "name": "A"}, "email", id="address-over-320"),
    ],
)
async def test_a_bad_create_body_is_400_naming_the_field_and_creates_nothing(
    org: Organization, body: dict[str, Any], field: str
) -> None:
    response = await org.rest("POST", "/customers", json=body)
    assert_error(response, 400, "invalid_request", field)
    assert await stored(org) == (0, [])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"name": "B", "company": "Acme"}, "company", id="unknown-field"),
        pytest.param({"name": 7}, "name", id="wrong-type"),
        pytest.param({"name": None}, "name", id="name-null"),
        pytest.param({"email": "nope"}, "email", id="bad-address"),
        pytest.param({"name": "n" * 256}, "name", id="name-over-255"),
    ],
)
async def test_a_bad_update_body_is_400_naming_the_field_and_changes_nothing(
    org: Organization, body: dict[str, Any], field: str
) -> None:
    customer = await create(org)
    before = await stored(org)
    response = await org.rest("PATCH", f"/customers/{customer['id']}", json=body)
    assert_error(response, 400, "invalid_request", field)
    assert await get(org, customer["id"]) == customer
    assert await stored(org) == before
