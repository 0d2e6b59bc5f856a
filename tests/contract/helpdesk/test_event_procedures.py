"""Sections 4.3 and 7 over the running stack: `events.listForTicket` and `events.list` page newest first with
`nextCursor` (the id of the last event returned) and `hasMore`; `limit` is 1 to 100 (50 by default); a cursor of
another listing, a bad aggregate type or id is BAD_REQUEST; another organization's ticket is FORBIDDEN; an unknown
event is NOT_FOUND. And the two envelopes of one app, chosen by path."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpdesk_stack import Browser, HelpdeskStack, data, trpc_error


async def ticket_with_events(stack: HelpdeskStack, browser: Browser, changes: int) -> str:
    """A ticket with `changes` + 1 activity events (created, then status changes)."""
    key = await browser.api_key("tickets:write")
    created = await stack.rest(key, "POST", "/tickets", json={"subject": "Paging", "customer_email": "p@example.com"})
    ticket_id = str(created.json()["id"])
    for index in range(changes):
        status = ("pending", "open")[index % 2]
        assert (await stack.rest(key, "PATCH", f"/tickets/{ticket_id}", json={"status": status})).status_code == 200
    return ticket_id


async def test_list_for_ticket_pages_newest_first_by_next_cursor(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        ticket_id = await ticket_with_events(helpdesk_stack, browser, 6)
        whole = data(await browser.query("events.listForTicket", {"ticketId": ticket_id}))
        assert (len(whole["events"]), whole["hasMore"]) == (7, False), "limit is 50 by default"
        pages: list[list[dict[str, Any]]] = []
        cursor: str | None = None
        while True:
            given = {"ticketId": ticket_id, "limit": 3} | ({"cursor": cursor} if cursor else {})
            page = data(await browser.query("events.listForTicket", given))
            pages.append(page["events"])
            assert page["nextCursor"] == page["events"][-1]["id"]
            if not page["hasMore"]:
                break
            cursor = page["nextCursor"]
    assert [len(page) for page in pages] == [3, 3, 1]
    walked = [event for page in pages for event in page]
    assert walked == whole["events"]
    stamps = [event["created_at"] for event in walked]
    assert stamps == sorted(stamps, reverse=True)
    assert walked[-1]["event_type"] == "created"


@pytest.mark.parametrize("limit", [0, 101])
async def test_a_limit_outside_1_to_100_is_bad_request(helpdesk_stack: HelpdeskStack, limit: int) -> None:
    async with helpdesk_stack.browser() as browser:
        organization = (await browser.sign_up())["organization"]["id"]
        answer = await browser.query(
            "events.list", {"aggregateType": "organization", "aggregateId": organization, "limit": limit}
        )
    assert trpc_error(answer) == (400, "BAD_REQUEST")
    assert "limit" in answer.json()["error"]["json"]["message"]


async def test_a_cursor_of_another_listing_is_bad_request(helpdesk_stack: HelpdeskStack) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        first = await ticket_with_events(helpdesk_stack, browser, 1)
        second = await ticket_with_events(helpdesk_stack, browser, 1)
        theirs = data(await browser.query("events.listForTicket", {"ticketId": first}))["events"][0]["id"]
        answer = await browser.query("events.listForTicket", {"ticketId": second, "cursor": theirs})
    assert trpc_error(answer) == (400, "BAD_REQUEST")


@pytest.mark.parametrize(
    "given",
    [
        {"aggregateType": "customer", "aggregateId": "3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c"},
        {"aggregateType": "ticket", "aggregateId": "not-a-uuid"},
        {"aggregateType": "ticket"},
    ],
)
async def test_a_bad_aggregate_type_or_id_is_bad_request(helpdesk_stack: HelpdeskStack, given: dict[str, Any]) -> None:
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        assert trpc_error(await browser.query("events.list", given)) == (400, "BAD_REQUEST")


async def test_another_organizations_ticket_is_forbidden_and_an_unknown_event_not_found(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with helpdesk_stack.browser() as theirs, helpdesk_stack.browser() as mine:
        await theirs.sign_up("Theirs")
        ticket_id = await ticket_with_events(helpdesk_stack, theirs, 0)
        [event] = data(await theirs.query("events.listForTicket", {"ticketId": ticket_id}))["events"]
        await mine.sign_up("Mine")
        assert trpc_error(await mine.query("events.listForTicket", {"ticketId": ticket_id})) == (403, "FORBIDDEN")
        assert trpc_error(await mine.query("events.get", {"id": event["id"]})) == (403, "FORBIDDEN")
        assert trpc_error(await mine.query("events.get", {"id": str(uuid.uuid4())})) == (404, "NOT_FOUND")


async def test_procedures_and_the_rest_api_answer_in_their_own_envelopes(helpdesk_stack: HelpdeskStack) -> None:
    """One app, two envelopes chosen by path: tRPC's under /api/trpc, `{"error": {"code", "message"}}` elsewhere."""
    client = helpdesk_stack.client
    unknown_procedure = await client.get("/api/trpc/tickets.nothing")
    assert trpc_error(unknown_procedure) == (404, "NOT_FOUND")
    assert unknown_procedure.json()["error"]["json"]["code"] == -32004
    wrong_method = await client.put("/api/trpc/auth.getUser", json={})
    assert trpc_error(wrong_method) == (405, "METHOD_NOT_SUPPORTED")
    huge = b"{" + b" " * (1024 * 1024 + 1) + b"}"  # over the gateway's 1 MiB
    too_large = await client.post(
        "/api/trpc/auth.signInWithEmail", content=huge, headers={"Content-Type": "application/json"}
    )
    assert trpc_error(too_large) == (413, "PAYLOAD_TOO_LARGE")

    unknown_route = await client.get("/api/v1/nothing")
    assert (unknown_route.status_code, unknown_route.json()) == (
        404,
        {"error": {"code": "not_found", "message": "No such route"}},
    )
    async with helpdesk_stack.browser() as browser:
        await browser.sign_up()
        key = await browser.api_key("tickets:write")
    rest_too_large = await helpdesk_stack.rest(key, "POST", "/tickets", content=huge)
    assert (rest_too_large.status_code, rest_too_large.json()["error"]["code"]) == (413, "payload_too_large")
