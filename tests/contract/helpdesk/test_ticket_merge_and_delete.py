"""Merging a ticket into another (`tickets.merge`, `POST /api/v1/tickets/{id}/merge`) and deleting one
(`tickets.delete`, `DELETE /api/v1/tickets/{id}`) through the running stack: what the merged ticket becomes and its
events, where its conversations and what threads to it go (an SMS from its number, a mail naming its number or
replying to one of its messages), the merges refused; a deleted ticket is absent to every read but its activity
log's, which only admins read, and what threaded to it opens a new ticket."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from tests.contract.helpdesk.inbound_desk import unique_number
from tests.contract.helpdesk.test_inbound_sms import sms_line
from tests.helpdesk_stack import Browser, HelpdeskStack, data, new_email, trpc_error
from tests.helpers import Organization, joined_agent, signed_up, until
from tests.peers.inbound_mail import Mailbox


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


async def create(org: Organization, message: str = "It has not arrived.", **body: Any) -> dict[str, Any]:
    body = {"subject": "My order has not arrived", "customer_email": new_email("customer"), "message": message} | body
    created = await org.rest("POST", "/tickets", json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


async def ticket(org: Organization, ticket_id: str) -> dict[str, Any]:
    found = await org.rest("GET", f"/tickets/{ticket_id}")
    assert found.status_code == 200, found.text
    return dict(found.json())


async def events_of(browser: Browser, ticket_id: str) -> list[dict[str, Any]]:
    """The ticket's events and its conversations', newest first (`events.listForTicket`)."""
    listed = data(await browser.query("events.listForTicket", {"ticketId": ticket_id, "limit": 100}))
    assert listed["hasMore"] is False
    return list(listed["events"])


async def conversation_bodies(browser: Browser, ticket_id: str) -> list[str]:
    listed = data(await browser.query("conversations.list", {"ticketId": ticket_id, "limit": 100}))
    return sorted(conversation["body"] for conversation in listed["items"])


async def listed_ids(browser: Browser) -> list[str]:
    return [item["id"] for item in data(await browser.query("tickets.list", {"limit": 100}))["items"]]


def webhook_rows(connection: Connection, organization_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    hooks = WEBHOOK_EVENTS.c
    rows = connection.execute(
        select(hooks.id, hooks.type, hooks.body)
        .where(hooks.service == "helpdesk", hooks.owner_id == organization_id)
        .order_by(hooks.created_at, hooks.id)
    )
    return [(row.id, row.type, json.loads(row.body)) for row in rows]


# Merge


async def test_a_merge_by_procedure_closes_the_source_into_the_target_with_its_events(org: Organization) -> None:
    source = await create(org, "The box is empty.")
    target = await create(org, "Where is my refund?")
    hooks_before = {row[0] for row in await org.stack.db.read(webhook_rows, org.id)}

    answer = data(await org.browser.call("tickets.merge", {"id": source["id"], "intoId": target["id"]}))
    assert answer["id"] == target["id"], "a merge answers the ticket that stays"
    assert (answer["status"], answer["merged_into_id"]) == ("open", None)

    merged = data(await org.browser.query("tickets.get", {"id": source["id"]}))
    assert (merged["status"], merged["merged_into_id"]) == ("closed", target["id"])
    written = {
        event["event_type"]: event
        for event in await events_of(org.browser, source["id"])
        if event["event_type"] in ("merged", "status_changed")
    }
    assert {name: event["event_data"] for name, event in written.items()} == {
        "merged": {"merged_into_id": target["id"]},
        "status_changed": {"old_status": "open", "new_status": "closed"},
    }
    for event in written.values():
        assert (event["aggregate_type"], event["aggregate_id"]) == ("ticket", source["id"])
        assert event["actor_id"] == org.admin_id
        assert event["actor"] == {"name": "Ada Admin", "email": org.admin_email}

    assert await conversation_bodies(org.browser, target["id"]) == ["The box is empty.", "Where is my refund?"]
    assert await conversation_bodies(org.browser, source["id"]) == []
    new_hooks = [
        (name, body["data"])
        for event_id, name, body in await org.stack.db.read(webhook_rows, org.id)
        if event_id not in hooks_before
    ]
    assert sorted(name for name, _ in new_hooks) == ["ticket.status_changed", "ticket.updated"]
    assert {(found["ticketId"], found["status"]) for _, found in new_hooks} == {(source["id"], "closed")}


async def test_a_merge_over_rest_closes_the_source_into_the_target(org: Organization) -> None:
    source = await create(org, "First message")
    target = await create(org, "Second message")
    merged = await org.rest("POST", f"/tickets/{source['id']}/merge", json={"into_id": target["id"]})
    assert merged.status_code == 200, merged.text
    assert merged.json()["id"] == target["id"]
    now = await ticket(org, source["id"])
    assert (now["status"], now["merged_into_id"]) == ("closed", target["id"])
    events = await org.rest("GET", f"/tickets/{source['id']}/events")
    written = {
        event["event_type"]: (event["event_data"], event["actor_id"])
        for event in events.json()["data"]
        if event["aggregate_type"] == "ticket" and event["event_type"] in ("merged", "status_changed")
    }
    assert written == {
        "merged": ({"merged_into_id": target["id"]}, None),
        "status_changed": ({"old_status": "open", "new_status": "closed"}, None),
    }
    conversations = await org.rest("GET", f"/tickets/{target['id']}/conversations")
    assert sorted(c["body"] for c in conversations.json()["data"]) == ["First message", "Second message"]
    assert {c["ticket_id"] for c in conversations.json()["data"]} == {target["id"]}


async def test_after_a_merge_the_target_s_events_include_those_of_the_conversations_it_took(org: Organization) -> None:
    """`events.listForTicket` combines the events of the ticket and of its conversations (section 4.3): once merged,
    the source's conversations are the target's, and so are their events (the one written before the merge and the
    one written after alike)."""
    source = await create(org, "The box is empty.")
    target = await create(org, "Where is my refund?")
    data(await org.browser.call("tickets.merge", {"id": source["id"], "intoId": target["id"]}))
    taken = data(await org.browser.query("conversations.list", {"ticketId": target["id"]}))["items"]
    [moved] = [conversation for conversation in taken if conversation["body"] == "The box is empty."]
    data(await org.browser.call("conversations.update", {"id": moved["id"], "body": "The box was empty."}))

    of_moved = data(
        await org.browser.query("events.list", {"aggregateType": "conversation", "aggregateId": moved["id"]})
    )["events"]
    assert sorted(event["event_type"] for event in of_moved) == ["created", "updated"]
    of_target = {event["id"] for event in await events_of(org.browser, target["id"])}
    missing = [event["event_type"] for event in of_moved if event["id"] not in of_target]
    assert missing == [], "the moved conversation's events are listed with the ticket it now belongs to"


async def test_merging_into_a_merged_ticket_a_merged_ticket_again_or_a_ticket_into_itself_is_conflict(
    org: Organization,
) -> None:
    merged, target, other = await create(org), await create(org), await create(org)
    data(await org.browser.call("tickets.merge", {"id": merged["id"], "intoId": target["id"]}))
    refused = [
        (other["id"], merged["id"]),  # into a merged ticket
        (merged["id"], other["id"]),  # a merged ticket again
        (other["id"], other["id"]),  # into itself
    ]
    for source_id, into_id in refused:
        by_procedure = await org.browser.call("tickets.merge", {"id": source_id, "intoId": into_id})
        assert trpc_error(by_procedure) == (409, "CONFLICT"), (source_id, into_id)
        over_rest = await org.rest("POST", f"/tickets/{source_id}/merge", json={"into_id": into_id})
        assert (over_rest.status_code, over_rest.json()["error"]["code"]) == (409, "conflict")
    assert (await ticket(org, other["id"]))["status"] == "open"
    assert (await ticket(org, merged["id"]))["merged_into_id"] == target["id"]
    assert [e["event_type"] for e in await events_of(org.browser, other["id"]) if e["aggregate_type"] == "ticket"] == [
        "created"
    ]


async def test_another_organization_s_ticket_is_not_found_and_cannot_be_merged_into(
    helpdesk_stack: HelpdeskStack, org: Organization
) -> None:
    mine = await create(org)
    async with signed_up(helpdesk_stack) as other:
        theirs = await create(other)
    for source_id, into_id, status, code in (
        (theirs["id"], mine["id"], 404, "not_found"),  # the ticket in the path: none of ours
        (mine["id"], theirs["id"], 409, "conflict"),  # ours, into a ticket the organization does not have
    ):
        by_procedure = await org.browser.call("tickets.merge", {"id": source_id, "intoId": into_id})
        assert trpc_error(by_procedure) == (status, code.upper())
        over_rest = await org.rest("POST", f"/tickets/{source_id}/merge", json={"into_id": into_id})
        assert (over_rest.status_code, over_rest.json()["error"]["code"]) == (status, code)
    unknown = await org.rest("POST", f"/tickets/{mine['id']}/merge", json={"into_id": str(uuid.uuid4())})
    assert unknown.status_code == 409
    now = await ticket(org, mine["id"])
    assert (now["status"], now["merged_into_id"]) == ("open", None)
    assert await conversation_bodies(org.browser, mine["id"]) == ["It has not arrived."]


async def test_after_a_merge_an_sms_from_the_source_s_number_lands_on_the_target(
    helpdesk_stack: HelpdeskStack,
) -> None:
    line = await sms_line(helpdesk_stack)
    sender = unique_number()
    assert (await line.send(line.message(sender, "My parcel is late"))).status_code == 200
    [first] = await line.desk.processed(1)
    source = first["ticket_id"]
    made = await helpdesk_stack.rest(
        line.desk.key, "POST", "/tickets", json={"subject": "Late parcel", "customer_email": new_email()}
    )
    target = made.json()["id"]
    merged = await helpdesk_stack.rest(line.desk.key, "POST", f"/tickets/{source}/merge", json={"into_id": target})
    assert merged.status_code == 200, merged.text

    assert (await line.send(line.message(sender, "Any news?"))).status_code == 200
    second = (await line.desk.processed(2))[1]
    assert (second["outcome"], second["ticket_id"]) == ("threaded by sender", target)
    assert [c.body for c in await line.desk.conversations(target)] == ["My parcel is late", "Any news?"]
    assert (await line.desk.ticket(source))["status"] == "closed"
    assert len(await line.desk.tickets()) == 2, "no new ticket"


def mail(subject: str, body: str, **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Grace Hopper <grace@example.com>"
    message["To"] = "support@acme.example"
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="example.com")
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return message


async def two_mailed_tickets(box: Mailbox) -> tuple[dict[str, Any], EmailMessage, dict[str, Any]]:
    """The source (with its first mail) and the target, each opened by a mail; the source merged into the target."""
    first = mail("Printer on fire", "It is on fire.")
    assert (await box.forward(first.as_bytes(), **{"x-envelope-to": box.address})).status_code == 200
    await box.outcomes(1)
    second = mail("Scanner jammed", "Jammed.")
    assert (await box.forward(second.as_bytes(), **{"x-envelope-to": box.address})).status_code == 200
    outcomes = await box.outcomes(2)
    source, target = outcomes[0]["ticket_id"], outcomes[1]["ticket_id"]
    assert source != target
    merged = await box.stack.rest(box.key, "POST", f"/tickets/{source}/merge", json={"into_id": target})
    assert merged.status_code == 200, merged.text
    found = {t["id"]: t for t in await box.tickets()}
    return found[source], first, found[target]


async def test_after_a_merge_a_mail_naming_the_source_s_number_in_its_subject_lands_on_the_target(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    source, _, target = await two_mailed_tickets(box)
    reply = mail(f"Re: [Ticket #{source['number']}] Printer on fire", "Still burning.")
    assert (await box.forward(reply.as_bytes(), **{"x-envelope-to": box.address})).status_code == 200
    outcome = (await box.outcomes(3))[2]
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by subject", target["id"])
    assert "Still burning." in [c["body"].strip() for c in await box.conversations(target["id"])]
    assert len(await box.tickets()) == 2


async def test_after_a_merge_a_reply_to_a_message_of_the_source_lands_on_the_target(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    _, first, target = await two_mailed_tickets(box)
    reply = mail("A different subject", "Still burning.", In_Reply_To=str(first["Message-ID"]))
    assert (await box.forward(reply.as_bytes(), **{"x-envelope-to": box.address})).status_code == 200
    outcome = (await box.outcomes(3))[2]
    assert (outcome["outcome"], outcome["ticket_id"]) == ("threaded by In-Reply-To", target["id"])
    assert [c["body"].strip() for c in await box.conversations(target["id"])] == [
        "It is on fire.",
        "Jammed.",
        "Still burning.",
    ]


# Delete


async def test_an_admin_deletes_a_ticket_by_procedure_and_it_is_gone_from_lists_and_reads(org: Organization) -> None:
    doomed, kept = await create(org), await create(org)
    assert set(await listed_ids(org.browser)) == {doomed["id"], kept["id"]}
    deleted = data(await org.browser.call("tickets.delete", {"id": doomed["id"]}))
    assert deleted == {"id": doomed["id"], "deleted": True}

    assert await listed_ids(org.browser) == [kept["id"]]
    assert trpc_error(await org.browser.query("tickets.get", {"id": doomed["id"]})) == (404, "NOT_FOUND")
    gone = await org.rest("GET", f"/tickets/{doomed['id']}")
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "not_found")
    listing = await org.rest("GET", "/tickets")
    assert [item["id"] for item in listing.json()["data"]] == [kept["id"]]
    for call in (
        org.browser.query("conversations.list", {"ticketId": doomed["id"]}),
        org.browser.call("tickets.update", {"id": doomed["id"], "status": "pending"}),
        org.browser.call("conversations.create", {"ticketId": doomed["id"], "body": "Hello?"}),
        org.browser.call("tickets.delete", {"id": doomed["id"]}),
    ):
        assert trpc_error(await call) == (404, "NOT_FOUND")

    [latest, *_] = await events_of(org.browser, doomed["id"])
    assert (latest["event_type"], latest["event_data"], latest["actor_id"]) == ("deleted", {}, org.admin_id)


async def test_an_agent_cannot_delete_a_ticket(org: Organization) -> None:
    target = await create(org)
    async with org.stack.browser() as browser:
        await joined_agent(org, browser)
        assert trpc_error(await browser.call("tickets.delete", {"id": target["id"]})) == (403, "FORBIDDEN")
        assert data(await browser.query("tickets.get", {"id": target["id"]}))["id"] == target["id"]
    assert "deleted" not in [event["event_type"] for event in await events_of(org.browser, target["id"])]


async def test_a_deleted_ticket_s_events_are_readable_by_an_admin_and_forbidden_to_an_agent(
    org: Organization,
) -> None:
    doomed = await create(org)
    async with org.stack.browser() as browser:
        await joined_agent(org, browser)
        before = await events_of(browser, doomed["id"])
        data(await org.browser.call("tickets.delete", {"id": doomed["id"]}))

        given = {"ticketId": doomed["id"]}
        assert trpc_error(await browser.query("events.listForTicket", given)) == (403, "FORBIDDEN")
        by_aggregate = {"aggregateType": "ticket", "aggregateId": doomed["id"]}
        assert trpc_error(await browser.query("events.list", by_aggregate)) == (403, "FORBIDDEN")
        assert trpc_error(await browser.query("events.get", {"id": before[-1]["id"]})) == (403, "FORBIDDEN")

    after = await events_of(org.browser, doomed["id"])
    assert [event["id"] for event in after[1:]] == [event["id"] for event in before]
    assert after[0]["event_type"] == "deleted"
    assert data(await org.browser.query("events.get", {"id": before[-1]["id"]}))["event_type"] == "created"


async def test_a_ticket_deleted_over_rest_is_gone(org: Organization) -> None:
    doomed = await create(org)
    reader = await org.browser.api_key("tickets:read")
    refused = await org.stack.rest(reader, "DELETE", f"/tickets/{doomed['id']}")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    assert (await ticket(org, doomed["id"]))["id"] == doomed["id"]

    deleted = await org.rest("DELETE", f"/tickets/{doomed['id']}")
    assert (deleted.status_code, deleted.json()) == (200, {"id": doomed["id"], "deleted": True})
    assert (await org.rest("GET", f"/tickets/{doomed['id']}")).status_code == 404
    assert (await org.rest("GET", f"/tickets/{doomed['id']}/conversations")).status_code == 404
    assert (await org.rest("DELETE", f"/tickets/{doomed['id']}")).status_code == 404
    assert doomed["id"] not in [item["id"] for item in (await org.rest("GET", "/tickets")).json()["data"]]
    [latest, *_] = await events_of(org.browser, doomed["id"])
    assert (latest["event_type"], latest["actor_id"]) == ("deleted", None)


async def test_an_sms_from_a_deleted_ticket_s_number_opens_a_new_ticket(helpdesk_stack: HelpdeskStack) -> None:
    line = await sms_line(helpdesk_stack)
    sender = unique_number()
    await line.send(line.message(sender, "Broken screen"))
    [first] = await line.desk.processed(1)
    deleted = await helpdesk_stack.rest(line.desk.key, "DELETE", f"/tickets/{first['ticket_id']}")
    assert deleted.status_code == 200, deleted.text

    await line.send(line.message(sender, "Still broken"))
    second = (await line.desk.processed(2))[1]
    assert second["outcome"] == "new ticket"
    assert second["ticket_id"] != first["ticket_id"]
    [listed] = await until(line.desk.tickets, "the new ticket listed")
    assert listed["id"] == second["ticket_id"]
    assert [c.body for c in await line.desk.conversations(second["ticket_id"])] == ["Still broken"]
