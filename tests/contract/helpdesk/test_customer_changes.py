"""Merging a customer into another (`customers.merge`, `POST /api/v1/customers/{id}/merge`) and deleting one
(`customers.delete`, `DELETE /api/v1/customers/{id}`: an erasure) through the running stack, with the one
`customer.updated` delivery each fires (section 6.1), at a local receiver that checks its signature."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from storage.helpdesk.orders import REDACTED, REDACTED_NAME
from tests.helpdesk_stack import HelpdeskStack, data, new_email, trpc_error
from tests.helpers import Organization, joined_agent, signed_up, until
from tests.peers.receiver import WebhookReceiver, verify_helpdesk

SECRET = "customer-s3cret"


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


async def subscribe(org: Organization, receiver: WebhookReceiver) -> str:
    path = receiver.new_path(secret=SECRET, verify=verify_helpdesk)
    created = await org.rest(
        "POST", "/webhooks", json={"url": receiver.url(path), "events": ["customer.updated"], "secret": SECRET}
    )
    assert created.status_code == 201, created.text
    return path


async def customer(org: Organization, name: str, phone: str | None = None) -> dict[str, Any]:
    body = {"email": new_email(name.split(maxsplit=1)[0].lower()), "name": name} | ({"phone": phone} if phone else {})
    created = await org.rest("POST", "/customers", json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


async def ticket_of(org: Organization, customer_id: str, subject: str, message: str) -> dict[str, Any]:
    created = await org.rest(
        "POST", "/tickets", json={"subject": subject, "customer_id": customer_id, "message": message}
    )
    assert created.status_code == 201, created.text
    return dict(created.json())


def updates_of(connection: Connection, organization_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The organization's recorded `customer.updated` webhook events: (id, delivered body)."""
    hooks = WEBHOOK_EVENTS.c
    rows = connection.execute(
        select(hooks.id, hooks.body)
        .where(hooks.service == "helpdesk", hooks.owner_id == organization_id, hooks.type == "customer.updated")
        .order_by(hooks.created_at, hooks.id)
    )
    return [(row.id, json.loads(row.body)) for row in rows]


async def one_delivery(org: Organization, receiver: WebhookReceiver, path: str) -> dict[str, Any]:
    """The organization's one `customer.updated` event (its rows say there is one, hence at most one delivery per
    subscription), as delivered and verified at `path`."""
    [(event_id, body)] = await org.stack.db.read(updates_of, org.id)

    def arrived() -> list[Any]:
        return [d for d in receiver.received(path) if d.headers["x-helpdesk-delivery-id"] == event_id]

    [delivery] = await until(arrived, "the customer.updated delivery")
    assert delivery.verified
    assert delivery.json == body
    assert delivery.json["event"] == "customer.updated"
    return dict(delivery.json["data"])


async def tickets_of(org: Organization, customer_id: str) -> list[dict[str, Any]]:
    listed = await org.rest("GET", "/tickets", params={"customer_id": customer_id, "limit": 100})
    assert listed.status_code == 200, listed.text
    return list(listed.json()["data"])


# Merge


async def test_a_merge_by_procedure_moves_the_tickets_to_the_target_and_delivers_one_customer_updated(
    org: Organization, plain_receiver: WebhookReceiver
) -> None:
    path = await subscribe(org, plain_receiver)
    source = await customer(org, "Grace Hopper", phone="+15550100001")
    target = await customer(org, "Grace B. Hopper")
    moved = [await ticket_of(org, source["id"], f"Question {n}", "Hello") for n in (1, 2)]
    own = await ticket_of(org, target["id"], "Another", "Hi")

    merged = data(await org.browser.call("customers.merge", {"id": source["id"], "intoId": target["id"]}))
    assert (merged["id"], merged["email"], merged["name"]) == (target["id"], target["email"], "Grace B. Hopper")
    assert merged["phone"] == "+15550100001", "the source's phone fills the target's, which had none"

    assert trpc_error(await org.browser.query("customers.get", {"id": source["id"]})) == (404, "NOT_FOUND")
    assert (await org.rest("GET", f"/customers/{source['id']}")).status_code == 404
    listed = data(await org.browser.query("customers.list", {"limit": 100}))["items"]
    assert [item["id"] for item in listed] == [target["id"]]
    now = await tickets_of(org, target["id"])
    assert {item["id"] for item in now} == {own["id"], *(item["id"] for item in moved)}
    assert {(item["customer_id"], item["customer_email"]) for item in now} == {(target["id"], target["email"])}
    assert await tickets_of(org, source["id"]) == []

    delivered = await one_delivery(org, plain_receiver, path)
    assert delivered == {
        "customerId": target["id"],
        "email": target["email"],
        "name": "Grace B. Hopper",
        "phone": "+15550100001",
    }


async def test_a_merge_over_rest_moves_the_tickets_and_delivers_one_customer_updated(
    org: Organization, plain_receiver: WebhookReceiver
) -> None:
    path = await subscribe(org, plain_receiver)
    source = await customer(org, "Ada Lovelace")
    target = await customer(org, "Augusta Ada King", phone="+15550100002")
    moved = await ticket_of(org, source["id"], "Engine", "Does it compute?")
    answer = await org.rest("POST", f"/customers/{source['id']}/merge", json={"into_id": target["id"]})
    assert answer.status_code == 200, answer.text
    assert (answer.json()["id"], answer.json()["phone"]) == (target["id"], "+15550100002")
    assert (await org.rest("GET", f"/customers/{source['id']}")).status_code == 404
    assert [item["id"] for item in await tickets_of(org, target["id"])] == [moved["id"]]
    delivered = await one_delivery(org, plain_receiver, path)
    assert (delivered["customerId"], delivered["email"]) == (target["id"], target["email"])
    again = await org.rest("POST", f"/customers/{source['id']}/merge", json={"into_id": target["id"]})
    assert (again.status_code, again.json()["error"]["code"]) == (404, "not_found")


async def test_another_organization_s_customer_is_not_found_and_cannot_be_merged_into(
    helpdesk_stack: HelpdeskStack, org: Organization
) -> None:
    mine = await customer(org, "Mine Person")
    async with signed_up(helpdesk_stack) as other:
        theirs = await customer(other, "Their Person")
    for source_id, into_id, status, code in (
        (theirs["id"], mine["id"], 404, "not_found"),  # the customer in the path: none of ours
        (mine["id"], theirs["id"], 409, "conflict"),  # ours, into a customer the organization does not have
    ):
        refused = await org.browser.call("customers.merge", {"id": source_id, "intoId": into_id})
        assert trpc_error(refused) == (status, code.upper())
        over_rest = await org.rest("POST", f"/customers/{source_id}/merge", json={"into_id": into_id})
        assert (over_rest.status_code, over_rest.json()["error"]["code"]) == (status, code)
    assert (await org.rest("GET", f"/customers/{mine['id']}")).status_code == 200
    assert await org.stack.db.read(updates_of, org.id) == []


# Delete (erasure)


async def test_a_deletion_by_procedure_erases_the_customer_and_delivers_the_redacted_customer(
    org: Organization, plain_receiver: WebhookReceiver
) -> None:
    path = await subscribe(org, plain_receiver)
    erased = await customer(org, "Grace Hopper", phone="+15550100003")
    kept = await customer(org, "Linus Torvalds")
    theirs = await ticket_of(org, erased["id"], "My address is 1 Navy Way", "Send it to 1 Navy Way please")
    reply = await org.rest("POST", f"/tickets/{theirs['id']}/conversations", json={"body": "Sent to 1 Navy Way"})
    assert reply.status_code == 201, reply.text
    other = await ticket_of(org, kept["id"], "Kernel panic", "It panics")

    deleted = data(await org.browser.call("customers.delete", {"id": erased["id"]}))
    assert deleted == {"id": erased["id"], "deleted": True}

    assert trpc_error(await org.browser.query("customers.get", {"id": erased["id"]})) == (404, "NOT_FOUND")
    gone = await org.rest("GET", f"/customers/{erased['id']}")
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "not_found")
    listed = data(await org.browser.query("customers.list", {"limit": 100}))["items"]
    assert [item["id"] for item in listed] == [kept["id"]]

    redacted = data(await org.browser.query("tickets.get", {"id": theirs["id"]}))
    assert redacted["subject"] == REDACTED
    assert redacted["customer_email"] is None
    bodies = [
        c["body"] for c in data(await org.browser.query("conversations.list", {"ticketId": theirs["id"]}))["items"]
    ]
    assert bodies == [REDACTED, REDACTED]
    events = data(await org.browser.query("events.listForTicket", {"ticketId": theirs["id"]}))["events"]
    assert "Navy Way" not in json.dumps(events)
    untouched = data(await org.browser.query("tickets.get", {"id": other["id"]}))
    assert untouched["subject"] == "Kernel panic"

    delivered = await one_delivery(org, plain_receiver, path)
    assert delivered == {"customerId": erased["id"], "email": None, "name": REDACTED_NAME, "phone": None}


async def test_a_deletion_over_rest_erases_the_customer(org: Organization, plain_receiver: WebhookReceiver) -> None:
    path = await subscribe(org, plain_receiver)
    erased = await customer(org, "Ada Lovelace")
    theirs = await ticket_of(org, erased["id"], "Notes on the engine", "Private notes")
    reader = await org.browser.api_key("customers:read")
    refused = await org.stack.rest(reader, "DELETE", f"/customers/{erased['id']}")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")

    deleted = await org.rest("DELETE", f"/customers/{erased['id']}")
    assert (deleted.status_code, deleted.json()) == (200, {"id": erased["id"], "deleted": True})
    assert (await org.rest("GET", f"/customers/{erased['id']}")).status_code == 404
    assert (await org.rest("DELETE", f"/customers/{erased['id']}")).status_code == 404
    ticket = (await org.rest("GET", f"/tickets/{theirs['id']}")).json()
    assert ticket["subject"] == REDACTED
    conversations = (await org.rest("GET", f"/tickets/{theirs['id']}/conversations")).json()["data"]
    assert [c["body"] for c in conversations] == [REDACTED]
    delivered = await one_delivery(org, plain_receiver, path)
    assert (delivered["customerId"], delivered["email"], delivered["name"]) == (erased["id"], None, REDACTED_NAME)


async def test_erasing_a_customer_redacts_their_messages_on_a_ticket_theirs_was_merged_into(
    org: Organization,
) -> None:
    """Their messages are redacted wherever they are: a ticket of theirs merged into another customer's took its
    messages there."""
    erased = await customer(org, "Grace Hopper")
    other = await customer(org, "Linus Torvalds")
    theirs = await ticket_of(org, erased["id"], "Navy order", "Ship it to 1 Navy Way, Arlington")
    target = await ticket_of(org, other["id"], "Kernel order", "Ship it to Portland")
    merged = await org.rest("POST", f"/tickets/{theirs['id']}/merge", json={"into_id": target["id"]})
    assert merged.status_code == 200, merged.text

    data(await org.browser.call("customers.delete", {"id": erased["id"]}))

    conversations = (await org.rest("GET", f"/tickets/{target['id']}/conversations")).json()["data"]
    erased_authors = [c for c in conversations if c["author_type"] == "customer" and c["author_id"] == erased["id"]]
    assert [c["body"] for c in erased_authors] == [REDACTED], "the erased customer's own message"
    assert "Navy Way" not in json.dumps(conversations)
    events = data(await org.browser.query("events.listForTicket", {"ticketId": target["id"]}))["events"]
    events += data(await org.browser.query("events.listForTicket", {"ticketId": theirs["id"]}))["events"]
    assert "Navy Way" not in json.dumps(events)


async def test_an_agent_cannot_delete_a_customer(org: Organization) -> None:
    kept = await customer(org, "Grace Hopper")
    async with org.stack.browser() as browser:
        await joined_agent(org, browser)
        assert trpc_error(await browser.call("customers.delete", {"id": kept["id"]})) == (403, "FORBIDDEN")
        assert data(await browser.query("customers.get", {"id": kept["id"]}))["name"] == "Grace Hopper"
    assert await org.stack.db.read(updates_of, org.id) == []
