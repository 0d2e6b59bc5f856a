"""Changing a ticket's replies and notes through the running stack: an edit (`conversations.update`, `PATCH
/api/v1/conversations/{id}`) writes the conversation's `updated` event with the old and the new content, a deletion
(`conversations.delete`, `DELETE /api/v1/conversations/{id}`) its `deleted` event and hides it; only its author or an
admin may change one; a member's reply or note is theirs (`author_id`) and its events carry them as the actor
(section 2.3: `actor_id`, `actor` with `name` and `email`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.helpdesk_stack import Browser, HelpdeskStack, data, new_email, trpc_error
from tests.helpers import Organization, joined_agent, signed_up


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


async def new_ticket(org: Organization, message: str | None = None) -> str:
    body = {"subject": "Refund", "customer_email": new_email("customer")} | ({"message": message} if message else {})
    created = await org.rest("POST", "/tickets", json=body)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def reply(browser: Browser, ticket_id: str, body: str, *, internal: bool = False) -> dict[str, Any]:
    return dict(
        data(await browser.call("conversations.create", {"ticketId": ticket_id, "body": body, "internal": internal}))
    )


async def conversation_events(browser: Browser, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's activity events, newest first (`events.list`), but for a reply's `delivery_changed`: the
    reply sender writes those whenever it gets to the reply (tests/contract/helpdesk/test_replies.py reads them)."""
    given = {"aggregateType": "conversation", "aggregateId": conversation_id}
    found = data(await browser.query("events.list", given))["events"]
    return [event for event in found if event["event_type"] != "delivery_changed"]


async def listed(browser: Browser, ticket_id: str) -> dict[str, dict[str, Any]]:
    items = data(await browser.query("conversations.list", {"ticketId": ticket_id, "limit": 100}))["items"]
    return {item["id"]: item for item in items}


async def test_an_edit_by_procedure_writes_updated_with_the_old_and_new_content_and_the_actor(
    org: Organization,
) -> None:
    ticket_id = await new_ticket(org)
    written = await reply(org.browser, ticket_id, "We have shipped it.")
    edited = data(await org.browser.call("conversations.update", {"id": written["id"], "body": "We shipped it today."}))
    assert (edited["id"], edited["body"], edited["ticket_id"]) == (written["id"], "We shipped it today.", ticket_id)
    assert (await listed(org.browser, ticket_id))[written["id"]]["body"] == "We shipped it today."

    [updated, created] = await conversation_events(org.browser, written["id"])
    assert created["event_type"] == "created"
    assert (updated["event_type"], updated["event_data"]) == (
        "updated",
        {"old_content": "We have shipped it.", "new_content": "We shipped it today."},
    )
    assert (updated["aggregate_type"], updated["aggregate_id"]) == ("conversation", written["id"])
    assert updated["actor_id"] == org.admin_id
    assert updated["actor"] == {"name": "Ada Admin", "email": org.admin_email}
    ticket_events = data(await org.browser.query("events.listForTicket", {"ticketId": ticket_id}))["events"]
    assert updated["id"] in [event["id"] for event in ticket_events]


async def test_an_edit_over_rest_writes_updated_without_an_actor(org: Organization) -> None:
    ticket_id = await new_ticket(org)
    written = await reply(org.browser, ticket_id, "First words")
    edited = await org.rest("PATCH", f"/conversations/{written['id']}", json={"body": "Better words"})
    assert edited.status_code == 200, edited.text
    assert (edited.json()["id"], edited.json()["body"]) == (written["id"], "Better words")
    shown = await org.rest("GET", f"/tickets/{ticket_id}/conversations")
    assert [item["body"] for item in shown.json()["data"]] == ["Better words"]
    [updated, _] = await conversation_events(org.browser, written["id"])
    assert (updated["event_type"], updated["event_data"], updated["actor_id"]) == (
        "updated",
        {"old_content": "First words", "new_content": "Better words"},
        None,
    )
    assert "actor" not in updated
    refused = await org.rest("PATCH", f"/conversations/{written['id']}", json={"body": ""})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_request")


async def test_a_deletion_by_procedure_writes_deleted_and_hides_the_conversation(org: Organization) -> None:
    ticket_id = await new_ticket(org)
    doomed = await reply(org.browser, ticket_id, "Sent to the wrong customer", internal=True)
    kept = await reply(org.browser, ticket_id, "The right answer")
    assert data(await org.browser.call("conversations.delete", {"id": doomed["id"]})) == {
        "id": doomed["id"],
        "deleted": True,
    }
    assert list(await listed(org.browser, ticket_id)) == [kept["id"]]
    shown = await org.rest("GET", f"/tickets/{ticket_id}/conversations")
    assert [item["id"] for item in shown.json()["data"]] == [kept["id"]]
    [deleted, _] = await conversation_events(org.browser, doomed["id"])
    assert (deleted["event_type"], deleted["event_data"], deleted["actor_id"]) == ("deleted", {}, org.admin_id)
    for call in (
        org.browser.call("conversations.update", {"id": doomed["id"], "body": "Too late"}),
        org.browser.call("conversations.delete", {"id": doomed["id"]}),
    ):
        assert trpc_error(await call) == (404, "NOT_FOUND")


async def test_a_deletion_over_rest_writes_deleted_and_hides_the_conversation(org: Organization) -> None:
    ticket_id = await new_ticket(org, "My first message")
    [first] = (await listed(org.browser, ticket_id)).values()
    deleted = await org.rest("DELETE", f"/conversations/{first['id']}")
    assert (deleted.status_code, deleted.json()) == (200, {"id": first["id"], "deleted": True})
    assert (await org.rest("GET", f"/tickets/{ticket_id}/conversations")).json()["data"] == []
    assert (await org.rest("DELETE", f"/conversations/{first['id']}")).status_code == 404
    assert (await org.rest("PATCH", f"/conversations/{first['id']}", json={"body": "x"})).status_code == 404
    [latest, _] = await conversation_events(org.browser, first["id"])
    assert (latest["event_type"], latest["actor_id"]) == ("deleted", None)
    reader = await org.browser.api_key("conversations:read")
    other = await reply(org.browser, ticket_id, "Still here")
    refused = await org.stack.rest(reader, "DELETE", f"/conversations/{other['id']}")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")


async def test_only_its_author_or_an_admin_may_change_a_reply(org: Organization) -> None:
    ticket_id = await new_ticket(org, "The customer's own words")
    async with org.stack.browser() as author_browser, org.stack.browser() as other_browser:
        author = await joined_agent(org, author_browser)
        await joined_agent(org, other_browser)
        written = await reply(author_browser, ticket_id, "Mine")
        admins = await reply(org.browser, ticket_id, "The admin's note", internal=True)
        [customers] = [c for c in (await listed(org.browser, ticket_id)).values() if c["author_type"] == "customer"]

        for conversation in (written, admins, customers):  # another's: FORBIDDEN to an agent, whoever wrote it
            edit = {"id": conversation["id"], "body": "Changed by someone else"}
            assert trpc_error(await other_browser.call("conversations.update", edit)) == (403, "FORBIDDEN")
            gone = {"id": conversation["id"]}
            assert trpc_error(await other_browser.call("conversations.delete", gone)) == (403, "FORBIDDEN")
        assert trpc_error(await author_browser.call("conversations.update", {"id": admins["id"], "body": "x"})) == (
            403,
            "FORBIDDEN",
        )
        bodies = {c["id"]: c["body"] for c in (await listed(org.browser, ticket_id)).values()}
        assert bodies == {
            written["id"]: "Mine",
            admins["id"]: "The admin's note",
            customers["id"]: "The customer's own words",
        }
        assert [e["event_type"] for e in await conversation_events(org.browser, written["id"])] == ["created"]

        by_author = data(await author_browser.call("conversations.update", {"id": written["id"], "body": "Mine, v2"}))
        assert by_author["body"] == "Mine, v2"
        [updated, _] = await conversation_events(author_browser, written["id"])
        assert (updated["event_type"], updated["actor_id"]) == ("updated", author["id"])

    by_admin = data(await org.browser.call("conversations.update", {"id": written["id"], "body": "Mine, v3"}))
    assert by_admin["body"] == "Mine, v3"
    on_customers = data(await org.browser.call("conversations.update", {"id": customers["id"], "body": "Redacted"}))
    assert on_customers["body"] == "Redacted"
    assert data(await org.browser.call("conversations.delete", {"id": written["id"]}))["deleted"] is True
    [deleted, *_] = await conversation_events(org.browser, written["id"])
    assert (deleted["event_type"], deleted["actor_id"]) == ("deleted", org.admin_id)


async def test_a_member_s_replies_and_notes_carry_them_as_author_and_as_the_actor_of_their_events(
    org: Organization,
) -> None:
    ticket_id = await new_ticket(org)
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
        written = await reply(browser, ticket_id, "On its way!")
        note = await reply(browser, ticket_id, "Customer seems upset", internal=True)
    admins = await reply(org.browser, ticket_id, "Refund approved")
    me = {"name": agent["name"], "email": agent["email"]}
    for conversation, author, internal in (
        (written, agent["id"], False),
        (note, agent["id"], True),
        (admins, org.admin_id, False),
    ):
        assert (conversation["author_type"], conversation["author_id"], conversation["internal"]) == (
            "agent",
            author,
            internal,
        )
    shown = {item["id"]: item for item in (await org.rest("GET", f"/tickets/{ticket_id}/conversations")).json()["data"]}
    assert {key: shown[key]["author_id"] for key in shown} == {
        written["id"]: agent["id"],
        note["id"]: agent["id"],
        admins["id"]: org.admin_id,
    }
    for conversation, internal in ((written, False), (note, True)):
        [created] = await conversation_events(org.browser, conversation["id"])
        assert (created["event_type"], created["event_data"]) == (
            "created",
            {"content_preview": conversation["body"], "internal": internal},
        )
        assert created["actor_id"] == agent["id"]
        assert created["actor"] == me
    [created] = await conversation_events(org.browser, admins["id"])
    assert created["actor"] == {"name": "Ada Admin", "email": org.admin_email}
    on_ticket = data(await org.browser.query("events.listForTicket", {"ticketId": ticket_id}))["events"]
    actors = {
        event["aggregate_id"]: event["actor_id"] for event in on_ticket if event["aggregate_type"] == "conversation"
    }
    assert actors == {written["id"]: agent["id"], note["id"]: agent["id"], admins["id"]: org.admin_id}


async def test_an_agent_reads_a_deleted_conversation_s_events_alike_in_every_listing(org: Organization) -> None:
    """Whether a deleted reply's events are an agent's to read or its admins' alone, one listing does not show what
    another refuses: `events.listForTicket` (the ticket's and its conversations'), `events.list` of the conversation
    and `events.get` of each agree."""
    ticket_id = await new_ticket(org)
    async with org.stack.browser() as browser:
        await joined_agent(org, browser)
        doomed = await reply(browser, ticket_id, "Sent by mistake")
        data(await browser.call("conversations.delete", {"id": doomed["id"]}))

        on_ticket = data(await browser.query("events.listForTicket", {"ticketId": ticket_id}))["events"]
        via_ticket = sorted(event["id"] for event in on_ticket if event["aggregate_id"] == doomed["id"])
        given = {"aggregateType": "conversation", "aggregateId": doomed["id"]}
        listed = await browser.query("events.list", given)
        via_conversation = sorted(event["id"] for event in data(listed)["events"]) if listed.status_code == 200 else []
        one_by_one = [
            event_id
            for event_id in via_ticket
            if (await browser.query("events.get", {"id": event_id})).status_code == 200
        ]
    assert via_ticket == via_conversation == one_by_one, {
        "events.listForTicket": via_ticket,
        f"events.list ({listed.status_code})": via_conversation,
        "events.get": one_by_one,
    }
