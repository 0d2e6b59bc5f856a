"""Sections 2.3, 5.1 and 6.2 over the REST API's activity log (`/api/v1/events`): the events of a ticket, of a
conversation (`created` with content_preview and internal), of a user (the signup's `created` with email and role)
and of the organization; one event by id; newest first; cursor paging, stable under concurrent changes; another
organization's entity or event is 404; a bad aggregate type, id or limit is 400 naming the parameter."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from storage.helpdesk.tickets import PREVIEW_CHARACTERS
from tests.helpdesk_stack import HelpdeskStack, data, new_email
from tests.helpers import Organization, sent_reply, signed_up

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
EVENT_FIELDS = {"id", "aggregate_type", "aggregate_id", "event_type", "event_data", "actor_id", "created_at"}
STATUSES = ["pending", "resolved", "closed", "open"]


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


def answered(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return dict(response.json())


async def create_ticket(org: Organization, **body: Any) -> dict[str, Any]:
    body = {"subject": "Printer on fire", "customer_email": new_email("customer"), **body}
    return answered(await org.rest("POST", "/tickets", json=body), 201)


async def set_status(org: Organization, ticket_id: str, status: str) -> None:
    answered(await org.rest("PATCH", f"/tickets/{ticket_id}", json={"status": status}))


async def page(org: Organization, aggregate_type: str, aggregate_id: str, **params: Any) -> dict[str, Any]:
    query = {"aggregate_type": aggregate_type, "aggregate_id": aggregate_id, **params}
    return answered(await org.rest("GET", "/events", params=query))


async def events_of(org: Organization, aggregate_type: str, aggregate_id: str) -> list[dict[str, Any]]:
    """Every event of the entity, newest first (one page of up to 100)."""
    found = await page(org, aggregate_type, aggregate_id, limit=100)
    assert (found["has_more"], found["next_cursor"]) == (False, None)
    return list(found["data"])


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(event["event_type"], event["event_data"]) for event in events]


def assert_error(response: httpx.Response, status: int, code: str, *named: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    for name in named:
        assert name in body["error"]["message"], body


async def test_a_tickets_events_are_its_own_newest_first(org: Organization) -> None:
    ticket = await create_ticket(org, subject="Printer on fire", priority="low", channel="email")
    await set_status(org, ticket["id"], "pending")
    answered(await org.rest("PATCH", f"/tickets/{ticket['id']}", json={"priority": "urgent"}))
    answered(await org.rest("POST", f"/tickets/{ticket['id']}/conversations", json={"body": "Extinguisher?"}), 201)
    found = await events_of(org, "ticket", ticket["id"])
    assert kinds(found) == [
        ("priority_changed", {"old_priority": "low", "new_priority": "urgent"}),
        ("status_changed", {"old_status": "open", "new_status": "pending"}),
        ("created", {"subject": "Printer on fire", "priority": "low", "channel": "email"}),
    ]
    for event in found:
        assert set(event) == EVENT_FIELDS  # a key acts for no user: no actor
        assert UUID.match(event["id"])
        assert (event["aggregate_type"], event["aggregate_id"], event["actor_id"]) == ("ticket", ticket["id"], None)
        assert event["created_at"].endswith("Z")
    assert [event["created_at"] for event in found] == sorted((event["created_at"] for event in found), reverse=True)


async def test_the_rest_api_and_the_procedures_list_the_same_events(org: Organization) -> None:
    ticket = await create_ticket(org)
    await set_status(org, ticket["id"], "closed")
    through_rest = await events_of(org, "ticket", ticket["id"])
    listed = data(
        await org.browser.query("events.list", {"aggregateType": "ticket", "aggregateId": ticket["id"], "limit": 100})
    )
    fields = sorted(EVENT_FIELDS - {"created_at"})
    assert [[event[name] for name in fields] for event in listed["events"]] == [
        [event[name] for name in fields] for event in through_rest
    ]


@pytest.mark.parametrize("internal", [False, True], ids=["reply", "internal-note"])
async def test_a_conversations_created_event_has_its_content_preview_and_internal(
    org: Organization, internal: bool
) -> None:
    ticket = await create_ticket(org)
    body = "The toner caught fire when I printed the quarterly report. " * 5
    conversation = answered(
        await org.rest("POST", f"/tickets/{ticket['id']}/conversations", json={"body": body, "internal": internal}),
        201,
    )
    (event,) = [  # but for a reply's delivery_changed, written whenever the reply sender sends it
        event for event in await events_of(org, "conversation", conversation["id"]) if event["event_type"] == "created"
    ]
    assert (event["aggregate_type"], event["aggregate_id"], event["event_type"]) == (
        "conversation",
        conversation["id"],
        "created",
    )
    assert event["event_data"] == {"content_preview": body[:PREVIEW_CHARACTERS], "internal": internal}
    assert body.startswith(event["event_data"]["content_preview"])
    assert len(event["event_data"]["content_preview"]) < len(body)


async def test_a_short_reply_is_previewed_whole(org: Organization) -> None:
    ticket = await create_ticket(org, message="Help!")
    conversation = answered(await org.rest("GET", f"/tickets/{ticket['id']}/conversations"))["data"][0]
    assert kinds(await events_of(org, "conversation", conversation["id"])) == [
        ("created", {"content_preview": "Help!", "internal": False})
    ]


async def test_the_signup_users_created_event_has_email_and_role(org: Organization) -> None:
    (event,) = await events_of(org, "user", org.admin_id)
    assert (event["aggregate_type"], event["aggregate_id"], event["event_type"]) == ("user", org.admin_id, "created")
    assert event["event_data"] == {"email": org.admin_email, "role": "admin"}
    assert event["actor_id"] == org.admin_id
    assert event["actor"] == {"name": "Ada Admin", "email": org.admin_email}


async def test_the_organizations_events_are_its_own(org: Organization) -> None:
    found = await page(org, "organization", org.id)
    assert set(found) == {"data", "has_more", "next_cursor"}
    assert all((event["aggregate_type"], event["aggregate_id"]) == ("organization", org.id) for event in found["data"])


async def test_an_event_is_got_by_its_id(org: Organization) -> None:
    ticket = await create_ticket(org)
    await set_status(org, ticket["id"], "resolved")
    for event in await events_of(org, "ticket", ticket["id"]) + await events_of(org, "user", org.admin_id):
        assert answered(await org.rest("GET", f"/events/{event['id']}")) == event


@pytest.mark.parametrize("event_id", ["3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c", "not-an-event"])
async def test_an_unknown_event_is_404(org: Organization, event_id: str) -> None:
    assert_error(await org.rest("GET", f"/events/{event_id}"), 404, "not_found", "event")


async def test_events_page_by_cursor_newest_first(org: Organization) -> None:
    ticket = await create_ticket(org)
    for status in STATUSES + STATUSES[:2]:
        await set_status(org, ticket["id"], status)
    everything = await events_of(org, "ticket", ticket["id"])
    assert len(everything) == 7
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        found = await page(org, "ticket", ticket["id"], limit=3, **({"cursor": cursor} if cursor else {}))
        pages.append(found["data"])
        if not found["has_more"]:
            assert found["next_cursor"] is None
            break
        assert found["next_cursor"] == found["data"][-1]["id"]
        cursor = found["next_cursor"]
    assert [len(events) for events in pages] == [3, 3, 1]
    assert [event for events in pages for event in events] == everything
    assert kinds(everything)[0] == ("status_changed", {"old_status": "pending", "new_status": "resolved"})
    assert kinds(everything)[-1][0] == "created"


async def test_a_tickets_combined_events_page_by_cursor(org: Organization) -> None:
    ticket = await create_ticket(org)
    for text in ("One", "Two", "Three"):
        await sent_reply(org, ticket["id"], text)  # its delivery_changed written: the events stay as they are
    path = f"/tickets/{ticket['id']}/events"
    everything = answered(await org.rest("GET", path))["data"]
    assert len(everything) == 7  # the ticket's created; each reply's created and delivery_changed
    first = answered(await org.rest("GET", path, params={"limit": 4}))
    assert (first["has_more"], first["next_cursor"]) == (True, first["data"][-1]["id"])
    second = answered(await org.rest("GET", path, params={"limit": 4, "cursor": first["next_cursor"]}))
    assert (second["has_more"], second["next_cursor"]) == (False, None)
    assert first["data"] + second["data"] == everything
    created = [event for event in everything if event["event_type"] == "created"]
    assert [event["event_data"].get("content_preview") for event in created] == ["Three", "Two", "One", None]
    assert [event["event_type"] for event in everything].count("delivery_changed") == 3


async def test_paging_is_stable_under_concurrent_changes(org: Organization) -> None:
    ticket = await create_ticket(org)
    for status in STATUSES * 2:
        await set_status(org, ticket["id"], status)
    before = [event["id"] for event in await events_of(org, "ticket", ticket["id"])]
    seen: list[str] = []
    cursor: str | None = None
    for round_number in range(20):
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        status = STATUSES[round_number % len(STATUSES)]
        found, _ = await asyncio.gather(
            page(org, "ticket", ticket["id"], **params), set_status(org, ticket["id"], status)
        )
        seen += [event["id"] for event in found["data"]]
        if not found["has_more"]:
            break
        cursor = found["next_cursor"]
    assert len(seen) == len(set(seen))  # none repeated
    assert [event for event in seen if event in before] == before  # none skipped, in order
    everything = [event["id"] for event in await events_of(org, "ticket", ticket["id"])]
    assert set(seen) <= set(everything)


async def test_a_cursor_that_names_no_event_of_the_listing_is_404_and_a_malformed_one_400(org: Organization) -> None:
    ticket = await create_ticket(org)
    other_ticket = await create_ticket(org)
    (theirs,) = await events_of(org, "ticket", other_ticket["id"])
    listing = {"aggregate_type": "ticket", "aggregate_id": ticket["id"]}
    for cursor in (str(uuid.uuid4()), theirs["id"]):
        response = await org.rest("GET", "/events", params={**listing, "cursor": cursor})
        assert_error(response, 404, "not_found", "cursor")
        combined = await org.rest("GET", f"/tickets/{ticket['id']}/events", params={"cursor": cursor})
        assert_error(combined, 404, "not_found", "cursor")
    malformed = await org.rest("GET", "/events", params={**listing, "cursor": "not-an-event"})
    assert_error(malformed, 400, "invalid_request", "cursor")


@pytest.mark.parametrize("aggregate_type", ["ticket", "conversation", "user", "organization"])
async def test_another_organizations_entity_is_404(
    org: Organization, helpdesk_stack: HelpdeskStack, aggregate_type: str
) -> None:
    async with signed_up(helpdesk_stack) as other:
        ticket = await create_ticket(other, message="Theirs")
        conversation = answered(await other.rest("GET", f"/tickets/{ticket['id']}/conversations"))["data"][0]
        theirs = {
            "ticket": ticket["id"],
            "conversation": conversation["id"],
            "user": other.admin_id,
            "organization": other.id,
        }[aggregate_type]
        their_events = await events_of(other, aggregate_type, theirs)
    response = await org.rest("GET", "/events", params={"aggregate_type": aggregate_type, "aggregate_id": theirs})
    assert_error(response, 404, "not_found", aggregate_type)
    for event in their_events:
        assert_error(await org.rest("GET", f"/events/{event['id']}"), 404, "not_found")


@pytest.mark.parametrize("aggregate_type", ["ticket", "conversation", "user", "organization"])
async def test_the_events_of_an_entity_nobody_has_are_404(org: Organization, aggregate_type: str) -> None:
    """As another organization's: the answer never tells whether an id exists elsewhere."""
    response = await org.rest(
        "GET", "/events", params={"aggregate_type": aggregate_type, "aggregate_id": str(uuid.uuid4())}
    )
    assert_error(response, 404, "not_found", aggregate_type)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        pytest.param({"aggregate_type": "customer"}, "aggregate_type", id="unknown-type"),
        pytest.param({"aggregate_type": "tickets"}, "aggregate_type", id="plural-type"),
        pytest.param({"aggregate_type": "Ticket"}, "aggregate_type", id="capitalised-type"),
        pytest.param({"aggregate_type": None}, "aggregate_type", id="type-missing"),
        pytest.param({"aggregate_id": "42"}, "aggregate_id", id="id-not-a-uuid"),
        pytest.param({"aggregate_id": None}, "aggregate_id", id="id-missing"),
        pytest.param({"limit": "0"}, "limit", id="limit-0"),
        pytest.param({"limit": "101"}, "limit", id="limit-101"),
    ],
)
async def test_a_bad_listing_parameter_is_400_naming_it(
    org: Organization, params: dict[str, str | None], named: str
) -> None:
    query = {"aggregate_type": "user", "aggregate_id": org.admin_id, **params}
    response = await org.rest("GET", "/events", params={k: v for k, v in query.items() if v is not None})
    assert_error(response, 400, "invalid_request")
    assert re.search(f"[`']{named}[`']", response.json()["error"]["message"]), response.text  # not the URL echoed
