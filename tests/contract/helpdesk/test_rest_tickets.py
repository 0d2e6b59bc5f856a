"""Sections 2, 5.1, 6.1 and 6.2 over the REST API's tickets (`/api/v1/tickets`): create by customer address or id,
numbering per organization without duplicates or gaps, get, update with the activity and webhook events each change
writes (and none for a change of nothing), list filters, cursor paging stable under concurrent creates, replies and
internal notes, and bad bodies refused whole with a message naming the field."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from storage.helpdesk import customers, events, tickets
from tests.helpdesk_stack import HelpdeskStack, data, new_email
from tests.helpers import Organization, reply_sent, signed_up

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TICKET_FIELDS = {
    "id", "number", "subject", "status", "priority", "channel", "customer_id", "customer_email", "assignee_id", "tags",
    "merged_into_id", "created_at", "updated_at",
}  # fmt: skip
CONVERSATION_FIELDS = {
    "id", "ticket_id", "author_type", "author_id", "body", "internal", "attachments", "created_at", "edited_at",
    "delivery",
}  # fmt: skip


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


async def create(org: Organization, **body: Any) -> dict[str, Any]:
    body.setdefault("subject", "My order has not arrived")
    if "customer_id" not in body:
        body.setdefault("customer_email", new_email("customer"))
    response = await org.rest("POST", "/tickets", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def update(org: Organization, ticket_id: str, **body: Any) -> dict[str, Any]:
    response = await org.rest("PATCH", f"/tickets/{ticket_id}", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def rest_events(org: Organization, ticket_id: str) -> list[dict[str, Any]]:
    """The ticket's activity events (its own and its conversations'), newest first, through the REST API."""
    response = await org.rest("GET", f"/tickets/{ticket_id}/events", params={"limit": 100})
    assert response.status_code == 200, response.text
    assert response.json()["has_more"] is False
    return list(response.json()["data"])


async def procedure_events(org: Organization, ticket_id: str) -> list[dict[str, Any]]:
    """The same through the procedure `events.listForTicket`."""
    answer = data(await org.browser.query("events.listForTicket", {"ticketId": ticket_id, "limit": 100}))
    assert answer["hasMore"] is False
    return list(answer["events"])


def essentials(event: dict[str, Any]) -> tuple[Any, ...]:
    return (
        event["id"],
        event["aggregate_type"],
        event["aggregate_id"],
        event["event_type"],
        event["event_data"],
        event["actor_id"],
    )


async def ticket_events(org: Organization, ticket_id: str) -> list[dict[str, Any]]:
    """The ticket's events, read both ways, which must agree."""
    through_rest = await rest_events(org, ticket_id)
    through_procedure = await procedure_events(org, ticket_id)
    assert [essentials(event) for event in through_rest] == [essentials(event) for event in through_procedure]
    return through_rest


def webhook_events_of(connection: Connection, organization_id: str) -> list[tuple[str, dict[str, Any]]]:
    rows = connection.execute(
        select(WEBHOOK_EVENTS.c.type, WEBHOOK_EVENTS.c.body)
        .where(WEBHOOK_EVENTS.c.service == "helpdesk", WEBHOOK_EVENTS.c.owner_id == organization_id)
        .order_by(WEBHOOK_EVENTS.c.created_at, WEBHOOK_EVENTS.c.id)
    )
    return [(row.type, json.loads(row.body)) for row in rows]


async def webhook_events(org: Organization) -> list[tuple[str, dict[str, Any]]]:
    """The organization's outgoing webhook events (section 6.1) as recorded: (event name, delivered body)."""
    return await org.stack.db.read(webhook_events_of, org.id)


async def changed(org: Organization, ticket_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], Any, Any]:
    """PATCH the ticket; answer it as it now is, the activity events the change wrote (type, data) and the webhook
    events it recorded (name -> count)."""
    events_before = {event["id"] for event in await ticket_events(org, ticket_id)}
    hooks_before = Counter(name for name, _ in await webhook_events(org))
    ticket = await update(org, ticket_id, **body)
    written = [event for event in await ticket_events(org, ticket_id) if event["id"] not in events_before]
    for event in written:
        assert (event["aggregate_type"], event["aggregate_id"], event["actor_id"]) == ("ticket", ticket_id, None)
    activity = sorted((event["event_type"], event["event_data"]) for event in written)
    hooks = Counter(name for name, _ in await webhook_events(org)) - hooks_before
    return ticket, activity, hooks


def counts_of(connection: Connection, organization_id: str) -> dict[str, int]:
    def count(table: Any) -> int:
        return int(
            connection.execute(select(func.count()).where(table.c.organization_id == organization_id)).scalar_one()
        )

    hooks = WEBHOOK_EVENTS.c
    return {
        "tickets": count(tickets.TICKETS),
        "customers": count(customers.CUSTOMERS),
        "conversations": count(tickets.CONVERSATIONS),
        "events": count(events.EVENTS),
        "webhook_events": int(
            connection.execute(
                select(func.count()).where(hooks.service == "helpdesk", hooks.owner_id == organization_id)
            ).scalar_one()
        ),
    }


def numbers_of(connection: Connection, organization_id: str) -> list[int]:
    t = tickets.TICKETS.c
    return sorted(connection.execute(select(t.number).where(t.organization_id == organization_id)).scalars())


async def counts(org: Organization) -> dict[str, int]:
    """How many rows of each kind the organization has."""
    return await org.stack.db.read(counts_of, org.id)


async def listed(org: Organization, **params: Any) -> list[str]:
    response = await org.rest("GET", "/tickets", params={"limit": 100, **params})
    assert response.status_code == 200, response.text
    return [ticket["id"] for ticket in response.json()["data"]]


def assert_error(response: httpx.Response, status: int, code: str, *named: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    for name in named:
        assert name in body["error"]["message"], body


# Create


async def test_a_ticket_created_by_customer_email_makes_the_customer(org: Organization) -> None:
    ticket = await create(org, subject="Where is my parcel?", customer_email="Grace.Hopper@Example.COM")
    assert set(ticket) == TICKET_FIELDS
    assert UUID.match(ticket["id"])
    assert ticket["number"] == 1
    assert (ticket["subject"], ticket["status"], ticket["priority"], ticket["channel"]) == (
        "Where is my parcel?",
        "open",
        "normal",
        "api",
    )
    assert ticket["customer_email"] == "grace.hopper@example.com"
    assert (ticket["assignee_id"], ticket["tags"]) == (None, [])
    assert ticket["created_at"] == ticket["updated_at"]
    assert ticket["created_at"].endswith("Z")
    datetime.fromisoformat(ticket["created_at"])
    customer = await org.rest("GET", f"/customers/{ticket['customer_id']}")
    assert customer.status_code == 200, customer.text
    assert (customer.json()["email"], customer.json()["name"]) == ("grace.hopper@example.com", "Grace.Hopper")
    assert sorted(name for name, _ in await webhook_events(org)) == ["customer.created", "ticket.created"]


async def test_a_new_customer_is_named_by_customer_name(org: Organization) -> None:
    ticket = await create(org, customer_email=new_email("ada"), customer_name="Ada Lovelace")
    customer = (await org.rest("GET", f"/customers/{ticket['customer_id']}")).json()
    assert customer["name"] == "Ada Lovelace"


async def test_a_ticket_by_the_address_of_a_known_customer_is_that_customers(org: Organization) -> None:
    first = await create(org, customer_email="lin@example.com")
    second = await create(org, customer_email="LIN@example.com")
    assert second["customer_id"] == first["customer_id"]
    assert (await counts(org))["customers"] == 1


async def test_a_ticket_created_by_customer_id_is_that_customers(org: Organization) -> None:
    made = await org.rest("POST", "/customers", json={"email": "Mae@example.com", "name": "Mae Jemison"})
    assert made.status_code == 201, made.text
    ticket = await create(org, customer_id=made.json()["id"], priority="high", channel="email")
    assert (ticket["customer_id"], ticket["customer_email"]) == (made.json()["id"], "mae@example.com")
    assert (ticket["priority"], ticket["channel"]) == ("high", "email")
    assert (await counts(org))["customers"] == 1


async def test_a_ticket_answers_what_it_was_created_with(org: Organization) -> None:
    ticket = await create(
        org, status="pending", priority="urgent", channel="sms", assignee_id=org.admin_id, tags=["vip", "refund"]
    )
    assert (ticket["status"], ticket["priority"], ticket["channel"]) == ("pending", "urgent", "sms")
    assert (ticket["assignee_id"], ticket["tags"]) == (org.admin_id, ["vip", "refund"])
    fetched = await org.rest("GET", f"/tickets/{ticket['id']}")
    assert fetched.status_code == 200, fetched.text
    assert fetched.json() == ticket


async def test_a_create_writes_created_then_assigned_and_tagged(org: Organization) -> None:
    ticket = await create(org, subject="Refund", priority="high", assignee_id=org.admin_id, tags=["vip", "vip", "x"])
    assert ticket["tags"] == ["vip", "x"]
    written = await ticket_events(org, ticket["id"])
    assert sorted((event["event_type"], event["event_data"]) for event in written) == [
        ("assigned", {"assignee_id": org.admin_id, "assignee_name": "Ada Admin"}),
        ("created", {"subject": "Refund", "priority": "high", "channel": "api"}),
        ("tagged", {"tags": ["vip", "x"]}),
    ]
    hooks = {name: body["data"] for name, body in await webhook_events(org)}
    assert sorted(hooks) == ["customer.created", "ticket.assigned", "ticket.created"]
    assert hooks["ticket.created"] == {
        "ticketId": ticket["id"],
        "ticketNumber": 1,
        "subject": "Refund",
        "status": "open",
        "priority": "high",
        "customerId": ticket["customer_id"],
        "customerEmail": ticket["customer_email"],
    }


async def test_a_first_message_is_the_customers_first_reply(org: Organization) -> None:
    ticket = await create(org, message="It was due on Monday.")
    listing = await org.rest("GET", f"/tickets/{ticket['id']}/conversations")
    assert listing.status_code == 200, listing.text
    (reply,) = listing.json()["data"]
    assert (reply["author_type"], reply["author_id"], reply["body"], reply["internal"]) == (
        "customer",
        ticket["customer_id"],
        "It was due on Monday.",
        False,
    )


@pytest.mark.parametrize(
    "customer",
    [
        pytest.param({}, id="neither"),
        pytest.param({"customer_id": str(uuid.uuid4()), "customer_email": "both@example.com"}, id="both"),
    ],
)
async def test_a_ticket_names_its_customer_by_exactly_one_of_customer_id_and_customer_email(
    org: Organization, customer: dict[str, Any]
) -> None:
    response = await org.rest("POST", "/tickets", json={"subject": "Hello", **customer})
    assert_error(response, 400, "invalid_request", "customer_id", "customer_email")
    assert (await counts(org))["tickets"] == 0


async def test_customer_name_with_customer_id_is_400(org: Organization) -> None:
    made = (await create(org))["customer_id"]
    response = await org.rest(
        "POST", "/tickets", json={"subject": "Hello", "customer_id": made, "customer_name": "Someone Else"}
    )
    assert_error(response, 400, "invalid_request", "customer_name")
    assert (await counts(org))["tickets"] == 1


async def test_an_unknown_customer_id_is_404_and_creates_nothing(
    org: Organization, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as other:
        theirs = (await create(other))["customer_id"]
    before = await counts(org)
    for customer_id in (str(uuid.uuid4()), theirs):
        response = await org.rest("POST", "/tickets", json={"subject": "Hello", "customer_id": customer_id})
        assert_error(response, 404, "not_found", "customer_id")
    assert await counts(org) == before


async def test_an_unknown_assignee_id_is_404_and_creates_nothing(
    org: Organization, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as other:
        their_admin = other.admin_id
    before = await counts(org)
    for assignee_id in (str(uuid.uuid4()), their_admin):
        response = await org.rest(
            "POST",
            "/tickets",
            json={"subject": "Hello", "customer_email": "new@example.com", "assignee_id": assignee_id},
        )
        assert_error(response, 404, "not_found", "assignee_id")
    assert await counts(org) == before
    assert (await create(org))["number"] == 1  # a refused create gives its number back


# Numbering


async def test_ticket_numbers_start_at_1_in_each_organization(org: Organization, helpdesk_stack: HelpdeskStack) -> None:
    assert [(await create(org))["number"] for _ in range(3)] == [1, 2, 3]
    async with signed_up(helpdesk_stack) as other:
        assert [(await create(other))["number"] for _ in range(2)] == [1, 2]
    assert (await create(org))["number"] == 4


async def test_ticket_numbers_have_no_duplicates_or_gaps_under_concurrent_creates(org: Organization) -> None:
    customer_id = (await create(org))["customer_id"]
    made = await asyncio.gather(*(create(org, customer_id=customer_id, subject=f"Ticket {i}") for i in range(20)))
    assert sorted(ticket["number"] for ticket in made) == list(range(2, 22))
    listing = await listed(org)
    assert len(listing) == len(set(listing)) == 21
    assert await org.stack.db.read(numbers_of, org.id) == list(range(1, 22))


async def test_concurrent_creates_for_one_new_address_make_one_customer(org: Organization) -> None:
    address = new_email("crowd")
    made = await asyncio.gather(*(create(org, customer_email=address) for _ in range(10)))
    assert len({ticket["customer_id"] for ticket in made}) == 1
    assert sorted(ticket["number"] for ticket in made) == list(range(1, 11))
    assert (await counts(org))["customers"] == 1
    assert [name for name, _ in await webhook_events(org)].count("customer.created") == 1


# Get


async def test_get_answers_the_ticket(org: Organization) -> None:
    ticket = await create(org, subject="Broken zipper", tags=["returns"])
    response = await org.rest("GET", f"/tickets/{ticket['id']}")
    assert response.status_code == 200, response.text
    assert response.json() == ticket


@pytest.mark.parametrize("ticket_id", ["3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c", "not-a-uuid", "1"])
async def test_an_unknown_ticket_is_404(org: Organization, ticket_id: str) -> None:
    before = await counts(org)
    for method, path in [
        ("GET", f"/tickets/{ticket_id}"),
        ("PATCH", f"/tickets/{ticket_id}"),
        ("GET", f"/tickets/{ticket_id}/conversations"),
        ("POST", f"/tickets/{ticket_id}/conversations"),
        ("GET", f"/tickets/{ticket_id}/events"),
    ]:
        body = {"status": "closed"} if method == "PATCH" else {"body": "Hi"} if method == "POST" else None
        assert_error(await org.rest(method, path, json=body), 404, "not_found", "ticket")
    assert await counts(org) == before


# Update and its events


async def test_a_status_change_writes_status_changed(org: Organization) -> None:
    ticket = await create(org)
    updated, activity, hooks = await changed(org, ticket["id"], {"status": "pending"})
    assert updated["status"] == "pending"
    assert updated["updated_at"] > ticket["updated_at"]
    assert activity == [("status_changed", {"old_status": "open", "new_status": "pending"})]
    assert hooks == Counter({"ticket.status_changed": 1, "ticket.updated": 1})
    (name, body), *_ = [hook for hook in await webhook_events(org) if hook[0] == "ticket.status_changed"]
    assert (body["event"], body["data"]["status"], body["data"]["ticketId"]) == (name, "pending", ticket["id"])
    assert (await org.rest("GET", f"/tickets/{ticket['id']}")).json() == updated


async def test_a_priority_change_writes_priority_changed(org: Organization) -> None:
    ticket = await create(org, priority="low")
    updated, activity, hooks = await changed(org, ticket["id"], {"priority": "urgent"})
    assert updated["priority"] == "urgent"
    assert activity == [("priority_changed", {"old_priority": "low", "new_priority": "urgent"})]
    assert hooks == Counter({"ticket.priority_changed": 1, "ticket.updated": 1})


async def test_an_assignment_writes_assigned_with_the_assignees_name(org: Organization) -> None:
    ticket = await create(org)
    updated, activity, hooks = await changed(org, ticket["id"], {"assignee_id": org.admin_id})
    assert updated["assignee_id"] == org.admin_id
    assert activity == [("assigned", {"assignee_id": org.admin_id, "assignee_name": "Ada Admin"})]
    assert hooks == Counter({"ticket.assigned": 1, "ticket.updated": 1})


async def test_removing_the_assignee_writes_unassigned_with_the_previous_assignee(org: Organization) -> None:
    ticket = await create(org, assignee_id=org.admin_id)
    updated, activity, hooks = await changed(org, ticket["id"], {"assignee_id": None})
    assert updated["assignee_id"] is None
    assert activity == [("unassigned", {"assignee_id": org.admin_id})]
    assert hooks == Counter({"ticket.updated": 1})


async def test_added_tags_write_tagged_and_removed_tags_write_updated(org: Organization) -> None:
    ticket = await create(org, tags=["billing"])
    updated, activity, hooks = await changed(org, ticket["id"], {"tags": ["billing", "vip"]})
    assert updated["tags"] == ["billing", "vip"]
    assert activity == [("tagged", {"tags": ["vip"]})]
    assert hooks == Counter({"ticket.updated": 1})
    updated, activity, hooks = await changed(org, ticket["id"], {"tags": ["vip"]})
    assert updated["tags"] == ["vip"]
    assert activity == [("updated", {"tags": ["vip"]})]
    assert hooks == Counter({"ticket.updated": 1})
    updated, activity, _ = await changed(org, ticket["id"], {"tags": ["refund"]})
    assert updated["tags"] == ["refund"]
    assert activity == [("tagged", {"tags": ["refund"]}), ("updated", {"tags": ["refund"]})]


async def test_a_subject_change_writes_updated(org: Organization) -> None:
    ticket = await create(org, subject="Old")
    updated, activity, hooks = await changed(org, ticket["id"], {"subject": "New"})
    assert updated["subject"] == "New"
    assert activity == [("updated", {"subject": "New"})]
    assert hooks == Counter({"ticket.updated": 1})


async def test_an_update_of_several_fields_writes_each_fields_event_and_one_ticket_updated(org: Organization) -> None:
    ticket = await create(org)
    body = {"status": "resolved", "priority": "high", "assignee_id": org.admin_id, "tags": ["done"]}
    updated, activity, hooks = await changed(org, ticket["id"], body)
    assert {name: updated[name] for name in body} == body
    assert activity == [
        ("assigned", {"assignee_id": org.admin_id, "assignee_name": "Ada Admin"}),
        ("priority_changed", {"old_priority": "normal", "new_priority": "high"}),
        ("status_changed", {"old_status": "open", "new_status": "resolved"}),
        ("tagged", {"tags": ["done"]}),
    ]
    assert hooks == Counter(
        {"ticket.status_changed": 1, "ticket.priority_changed": 1, "ticket.assigned": 1, "ticket.updated": 1}
    )


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="empty"),
        pytest.param({"status": "open", "priority": "normal"}, id="same-values"),
        pytest.param({"tags": ["b", "a"]}, id="same-tags-reordered"),
        pytest.param({"subject": "Same", "assignee_id": "ADMIN"}, id="same-subject-and-assignee"),
    ],
)
async def test_an_update_that_changes_nothing_writes_nothing(org: Organization, body: dict[str, Any]) -> None:
    ticket = await create(org, subject="Same", tags=["a", "b"], assignee_id=org.admin_id)
    body = {name: org.admin_id if value == "ADMIN" else value for name, value in body.items()}
    before = await counts(org)
    updated, activity, hooks = await changed(org, ticket["id"], body)
    assert updated == ticket
    assert (activity, hooks) == ([], Counter())
    assert await counts(org) == before


async def test_an_unassigned_ticket_unassigned_again_writes_nothing(org: Organization) -> None:
    ticket = await create(org)
    before = await counts(org)
    updated, activity, hooks = await changed(org, ticket["id"], {"assignee_id": None})
    assert (updated, activity, hooks) == (ticket, [], Counter())
    assert await counts(org) == before


async def test_an_update_to_an_unknown_assignee_is_404_and_changes_nothing(
    org: Organization, helpdesk_stack: HelpdeskStack
) -> None:
    async with signed_up(helpdesk_stack) as other:
        their_admin = other.admin_id
    ticket = await create(org)
    before = await counts(org)
    for assignee_id in (str(uuid.uuid4()), their_admin):
        response = await org.rest(
            "PATCH", f"/tickets/{ticket['id']}", json={"assignee_id": assignee_id, "status": "closed"}
        )
        assert_error(response, 404, "not_found", "assignee_id")
    assert (await org.rest("GET", f"/tickets/{ticket['id']}")).json() == ticket
    assert await counts(org) == before


# Listing


@pytest.fixture
async def catalogue(org: Organization) -> dict[str, Any]:
    """Four tickets of two customers, told apart by each filter."""
    first = await create(org, customer_email="one@example.com")
    other_customer = await org.rest("POST", "/customers", json={"email": "two@example.com", "name": "Two"})
    one, two = first["customer_id"], other_customer.json()["id"]
    made = {
        "t1": await create(org, customer_id=one, priority="low", assignee_id=org.admin_id, tags=["billing", "50%_off"]),
        "t2": await create(org, customer_id=two, status="pending", priority="high", tags=["shipping"]),
        "t3": await create(org, customer_id=one, status="closed", priority="high", tags=["billing", "vip"]),
        "t4": await create(org, customer_id=two, priority="urgent", assignee_id=org.admin_id),
    }
    await update(org, first["id"], status="closed", priority="urgent")
    return {"org": org, "first": first["id"], "one": one, "two": two, **{name: t["id"] for name, t in made.items()}}


FILTERS = [
    pytest.param({"status": "open"}, ["t4", "t1"], id="status"),
    pytest.param({"status": "closed"}, ["t3", "first"], id="status-closed"),
    pytest.param({"priority": "high"}, ["t3", "t2"], id="priority"),
    pytest.param({"assignee_id": "ADMIN"}, ["t4", "t1"], id="assignee_id"),
    pytest.param({"customer_id": "one"}, ["t3", "t1", "first"], id="customer_id"),
    pytest.param({"tag": "billing"}, ["t3", "t1"], id="tag"),
    pytest.param({"tag": "vip"}, ["t3"], id="tag-one"),
    pytest.param({"tag": "bill"}, [], id="tag-exact"),
    pytest.param({"tag": "50%_off"}, ["t1"], id="tag-like-characters"),
    pytest.param({"status": "closed", "priority": "high", "customer_id": "one", "tag": "vip"}, ["t3"], id="all"),
    pytest.param({"priority": "low", "status": "pending"}, [], id="none-match"),
]


@pytest.mark.parametrize(("params", "expected"), FILTERS)
async def test_list_filters_answer_the_matching_tickets_newest_first(
    catalogue: dict[str, Any], params: dict[str, str], expected: list[str]
) -> None:
    org: Organization = catalogue["org"]
    names = {"ADMIN": org.admin_id, "one": catalogue["one"], "two": catalogue["two"]}
    query = {name: names.get(value, value) for name, value in params.items()}
    assert await listed(org, **query) == [catalogue[name] for name in expected]


async def test_the_listing_is_newest_first(catalogue: dict[str, Any]) -> None:
    org: Organization = catalogue["org"]
    response = await org.rest("GET", "/tickets")
    assert response.status_code == 200, response.text
    page = response.json()
    assert set(page) == {"data", "has_more", "next_cursor"}
    assert [ticket["id"] for ticket in page["data"]] == [catalogue[name] for name in ("t4", "t3", "t2", "t1", "first")]
    assert all(set(ticket) == TICKET_FIELDS for ticket in page["data"])
    assert (page["has_more"], page["next_cursor"]) == (False, None)


@pytest.mark.parametrize(
    "params",
    [
        {"status": "shelved"},
        {"priority": "extreme"},
        {"assignee_id": "someone"},
        {"customer_id": "42"},
        {"limit": "0"},
        {"limit": "101"},
        {"limit": "many"},
        {"tag": ""},
    ],
    ids=lambda params: "-".join(f"{k}={v}" for k, v in params.items()),
)
async def test_a_bad_listing_parameter_is_400_naming_it(org: Organization, params: dict[str, str]) -> None:
    response = await org.rest("GET", "/tickets", params=params)
    assert_error(response, 400, "invalid_request", *(f"`{name}`" for name in params))


async def test_cursor_paging_walks_every_ticket_once(org: Organization) -> None:
    customer_id = (await create(org))["customer_id"]
    for _ in range(6):
        await create(org, customer_id=customer_id)
    everything = await listed(org)
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        response = await org.rest("GET", "/tickets", params={"limit": 3, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        pages.append([ticket["id"] for ticket in page["data"]])
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        assert page["next_cursor"] == pages[-1][-1]
        cursor = page["next_cursor"]
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [ticket for page in pages for ticket in page] == everything


async def test_a_page_that_ends_the_listing_exactly_has_no_more(org: Organization) -> None:
    for _ in range(4):
        await create(org)
    first = (await org.rest("GET", "/tickets", params={"limit": 2})).json()
    assert first["has_more"] is True
    second = (await org.rest("GET", "/tickets", params={"limit": 2, "cursor": first["next_cursor"]})).json()
    assert (len(second["data"]), second["has_more"], second["next_cursor"]) == (2, False, None)


async def test_a_cursor_that_names_no_ticket_of_the_listing_is_404_and_a_malformed_one_400(
    org: Organization, helpdesk_stack: HelpdeskStack
) -> None:
    open_ticket = await create(org)
    closed_ticket = await create(org, status="closed")
    async with signed_up(helpdesk_stack) as other:
        theirs = (await create(other))["id"]
    for params in [
        {"cursor": str(uuid.uuid4())},
        {"cursor": theirs},
        {"cursor": closed_ticket["id"], "status": "open"},
        {"cursor": open_ticket["id"], "tag": "vip"},
    ]:
        assert_error(await org.rest("GET", "/tickets", params=params), 404, "not_found", "cursor")
    assert_error(await org.rest("GET", "/tickets", params={"cursor": "not-a-ticket"}), 400, "invalid_request", "cursor")
    assert (await org.rest("GET", "/tickets", params={"cursor": closed_ticket["id"]})).json()["data"][0]["id"] == (
        open_ticket["id"]
    )


async def test_paging_is_stable_under_concurrent_creates(org: Organization) -> None:
    customer_id = (await create(org))["customer_id"]
    for _ in range(11):
        await create(org, customer_id=customer_id)
    before = await listed(org)
    seen: list[str] = []
    created: set[str] = set()
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page_response, *made = await asyncio.gather(
            org.rest("GET", "/tickets", params=params),
            *(create(org, customer_id=customer_id) for _ in range(3)),
        )
        created |= {ticket["id"] for ticket in made}
        assert page_response.status_code == 200, page_response.text
        page = page_response.json()
        seen += [ticket["id"] for ticket in page["data"]]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert len(seen) == len(set(seen))  # none repeated
    assert [ticket for ticket in seen if ticket in before] == before  # none skipped, in order
    assert set(seen) - set(before) <= created
    assert len(await listed(org)) == len(before) + len(created)


# Conversations


async def test_a_reply_and_an_internal_note_are_added(org: Organization) -> None:
    ticket = await create(org)
    reply = await org.rest("POST", f"/tickets/{ticket['id']}/conversations", json={"body": "We are on it."})
    assert reply.status_code == 201, reply.text
    assert set(reply.json()) == CONVERSATION_FIELDS
    assert UUID.match(reply.json()["id"])
    assert {name: reply.json()[name] for name in ("ticket_id", "author_type", "author_id", "body", "internal")} == {
        "ticket_id": ticket["id"],
        "author_type": "agent",
        "author_id": None,
        "body": "We are on it.",
        "internal": False,
    }
    note = await org.rest(
        "POST", f"/tickets/{ticket['id']}/conversations", json={"body": "Customer is a VIP", "internal": True}
    )
    assert note.status_code == 201, note.text
    assert (note.json()["author_type"], note.json()["internal"]) == ("agent", True)
    await reply_sent(org, ticket["id"], reply.json()["id"])  # its events stay as they are from here on
    written = [
        event
        for event in await ticket_events(org, ticket["id"])
        if event["aggregate_type"] == "conversation"
        and event["event_type"] != "delivery_changed"  # the reply's sending
    ]
    assert sorted((event["aggregate_id"], event["event_type"], event["event_data"]) for event in written) == sorted(
        [
            (reply.json()["id"], "created", {"content_preview": "We are on it.", "internal": False}),
            (note.json()["id"], "created", {"content_preview": "Customer is a VIP", "internal": True}),
        ]
    )
    assert [name for name, _ in await webhook_events(org)].count("conversation.created") == 2


async def test_a_customers_message_is_authored_by_the_ticket_customer(org: Organization) -> None:
    ticket = await create(org)
    response = await org.rest(
        "POST", f"/tickets/{ticket['id']}/conversations", json={"body": "Any news?", "author_type": "customer"}
    )
    assert response.status_code == 201, response.text
    assert (response.json()["author_type"], response.json()["author_id"], response.json()["internal"]) == (
        "customer",
        ticket["customer_id"],
        False,
    )


async def test_author_type_customer_cannot_be_internal(org: Organization) -> None:
    ticket = await create(org)
    before = await counts(org)
    response = await org.rest(
        "POST",
        f"/tickets/{ticket['id']}/conversations",
        json={"body": "Secret", "author_type": "customer", "internal": True},
    )
    assert_error(response, 400, "invalid_request", "internal", "customer")
    assert await counts(org) == before


async def test_conversations_are_listed_newest_first(org: Organization) -> None:
    ticket = await create(org, message="First")
    for text in ("Second", "Third", "Fourth"):
        added = await org.rest("POST", f"/tickets/{ticket['id']}/conversations", json={"body": text})
        assert added.status_code == 201, added.text
    response = await org.rest("GET", f"/tickets/{ticket['id']}/conversations")
    assert response.status_code == 200, response.text
    assert [item["body"] for item in response.json()["data"]] == ["Fourth", "Third", "Second", "First"]
    assert all(set(item) == CONVERSATION_FIELDS for item in response.json()["data"])
    first_page = (await org.rest("GET", f"/tickets/{ticket['id']}/conversations", params={"limit": 3})).json()
    assert (first_page["has_more"], first_page["next_cursor"]) == (True, first_page["data"][-1]["id"])
    rest = await org.rest(
        "GET", f"/tickets/{ticket['id']}/conversations", params={"limit": 3, "cursor": first_page["next_cursor"]}
    )
    assert [item["body"] for item in rest.json()["data"]] == ["First"]


async def test_another_tickets_conversations_are_not_listed(org: Organization) -> None:
    one, two = await create(org, message="Mine"), await create(org, message="Theirs")
    response = await org.rest("GET", f"/tickets/{one['id']}/conversations")
    assert [item["body"] for item in response.json()["data"]] == ["Mine"]
    other = (await org.rest("GET", f"/tickets/{two['id']}/conversations")).json()["data"][0]["id"]
    stray = await org.rest("GET", f"/tickets/{one['id']}/conversations", params={"cursor": other})
    assert_error(stray, 404, "not_found", "cursor")


# Bad bodies


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"subject": "Hi", "customer_email": "a@example.com", "color": "red"}, "color", id="unknown-field"),
        pytest.param({"subject": 42, "customer_email": "a@example.com"}, "subject", id="wrong-type"),
        pytest.param({"subject": "x" * 256, "customer_email": "a@example.com"}, "subject", id="subject-over-255"),
        pytest.param({"subject": "", "customer_email": "a@example.com"}, "subject", id="subject-empty"),
        pytest.param({"subject": "a\u0000b", "customer_email": "a@example.com"}, "subject", id="subject-nul"),
        pytest.param({"subject": "two\nlines", "customer_email": "a@example.com"}, "subject", id="subject-newline"),
        pytest.param({"customer_email": "a@example.com"}, "subject", id="subject-missing"),
        pytest.param({"subject": "Hi", "customer_email": "not an address"}, "customer_email", id="bad-address"),
        pytest.param({"subject": "Hi", "customer_id": "42"}, "customer_id", id="bad-customer-id"),
        pytest.param({"subject": "Hi", "customer_email": None}, "customer_email", id="null-address"),
        pytest.param(
            {"subject": "Hi", "customer_email": "a@example.com", "priority": "asap"}, "priority", id="bad-priority"
        ),
        pytest.param({"subject": "Hi", "customer_email": "a@example.com", "status": "done"}, "status", id="bad-status"),
        pytest.param({"subject": "Hi", "customer_email": "a@example.com", "tags": "vip"}, "tags", id="tags-not-a-list"),
        pytest.param(
            {"subject": "Hi", "customer_email": "a@example.com", "tags": ["a b"]}, "tags", id="tag-with-space"
        ),
        pytest.param(
            {"subject": "Hi", "customer_email": "a@example.com", "message": ""}, "message", id="empty-message"
        ),
        pytest.param(
            {"subject": "Hi", "customer_email": "a@example.com", "customer_name": "n" * 256},
            "customer_name",
            id="customer-name-over-255",
        ),
    ],
)
async def test_a_bad_create_body_is_400_naming_the_field_and_creates_nothing(
    org: Organization, body: dict[str, Any], field: str
) -> None:
    before = await counts(org)
    response = await org.rest("POST", "/tickets", json=body)
    assert_error(response, 400, "invalid_request", field)
    assert await counts(org) == before


async def test_a_body_that_is_not_json_is_400(org: Organization) -> None:
    response = await org.rest("POST", "/tickets", content=b'{"subject": "Hi",')
    assert_error(response, 400, "invalid_request", "JSON")
    assert (await counts(org))["tickets"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"status": "closed", "colour": "red"}, "colour", id="unknown-field"),
        pytest.param({"status": "closed", "priority": 3}, "priority", id="wrong-type"),
        pytest.param({"status": "closed", "subject": "x" * 256}, "subject", id="subject-over-255"),
        pytest.param({"status": "closed", "subject": None}, "subject", id="subject-null"),
        pytest.param({"status": "closed", "tags": ["ok", 5]}, "tags", id="tag-wrong-type"),
        pytest.param({"status": "closed", "assignee_id": "me"}, "assignee_id", id="bad-assignee-id"),
        pytest.param({"status": "archived"}, "status", id="bad-status"),
    ],
)
async def test_a_bad_update_body_is_400_naming_the_field_and_changes_nothing(
    org: Organization, body: dict[str, Any], field: str
) -> None:
    ticket = await create(org)
    before = await counts(org)
    response = await org.rest("PATCH", f"/tickets/{ticket['id']}", json=body)
    assert_error(response, 400, "invalid_request", field)
    assert (await org.rest("GET", f"/tickets/{ticket['id']}")).json() == ticket
    assert await counts(org) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"body": "Hi", "cc": "x@example.com"}, "cc", id="unknown-field"),
        pytest.param({"body": 7}, "body", id="wrong-type"),
        pytest.param({"body": ""}, "body", id="empty"),
        pytest.param({}, "body", id="missing"),
        pytest.param({"body": "Hi", "internal": "yes"}, "internal", id="internal-not-boolean"),
        pytest.param({"body": "Hi", "author_type": "bot"}, "author_type", id="bad-author-type"),
    ],
)
async def test_a_bad_conversation_body_is_400_naming_the_field_and_adds_nothing(
    org: Organization, body: dict[str, Any], field: str
) -> None:
    ticket = await create(org)
    before = await counts(org)
    response = await org.rest("POST", f"/tickets/{ticket['id']}/conversations", json=body)
    assert_error(response, 400, "invalid_request", field)
    assert await counts(org) == before
