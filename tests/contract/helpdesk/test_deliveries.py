"""Sections 2.5 and 6.1: what each operation delivers to a subscription, signed with its secret as the receiver checks
it (a plain-HTTP receiver), and the retry schedule on a fake clock: 1 min, 5 min, 30 min, 2 h and 24 h, after which
the subscription is failed and disabled."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.fernet import MultiFernet
from sqlalchemy import select

from processors.common.webhooks import WebhookDeliverer
from signalyard import secrets
from storage.common.webhooks.deliveries import fan_out
from storage.common.webhooks.models import DELIVERIES as WEBHOOK_DELIVERIES
from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from tests.conftest import running_stack
from tests.helpdesk_stack import HelpdeskStack, helpdesk_settings
from tests.helpers import new_organization
from tests.peers.receiver import WebhookReceiver, verify_helpdesk
from topics.helpdesk import EVENTS, WEBHOOKS

TICKET_DATA = {"ticketId", "ticketNumber", "subject", "status", "priority", "customerId", "customerEmail"}


async def subscribe(
    stack: HelpdeskStack, key: str, receiver: WebhookReceiver, events: list[str], *, secret: str | None
) -> str:
    """A subscription at a new path of the receiver, which checks each delivery's signature with `secret`."""
    path = receiver.new_path(secret=secret, verify=verify_helpdesk)
    body: dict[str, Any] = {"url": receiver.url(path), "events": events}
    if secret is not None:
        body["secret"] = secret
    created = await stack.rest(key, "POST", "/webhooks", json=body)
    assert created.status_code == 201, created.text
    return path


async def test_a_created_ticket_is_delivered_as_ticket_created_signed_over_the_raw_body(
    helpdesk_stack: HelpdeskStack, plain_receiver: WebhookReceiver
) -> None:
    async with helpdesk_stack.browser() as browser:
        key = (await new_organization(browser)).key
    path = await subscribe(helpdesk_stack, key, plain_receiver, ["ticket.created"], secret="s3cret-signing-key")
    created = await helpdesk_stack.rest(
        key, "POST", "/tickets", json={"subject": "Where is my parcel?", "customer_email": "Ada@Example.com"}
    )
    ticket = created.json()

    [delivery] = await plain_receiver.wait_for(path, 1)
    assert delivery.verified, "x-helpdesk-signature is the lowercase hex HMAC-SHA256 of the raw body"
    assert delivery.headers["x-helpdesk-signature"] == delivery.headers["x-helpdesk-signature"].lower()
    assert delivery.headers["x-helpdesk-delivery-id"]
    assert set(delivery.json) == {"event", "timestamp", "data"}
    assert delivery.json["event"] == "ticket.created"
    assert datetime.fromisoformat(delivery.json["timestamp"]).tzinfo is not None
    assert delivery.json["data"] == {
        "ticketId": ticket["id"],
        "ticketNumber": ticket["number"],
        "subject": "Where is my parcel?",
        "status": "open",
        "priority": "normal",
        "customerId": ticket["customer_id"],
        "customerEmail": "ada@example.com",
    }


async def test_without_a_secret_deliveries_carry_no_signature(
    helpdesk_stack: HelpdeskStack, plain_receiver: WebhookReceiver
) -> None:
    async with helpdesk_stack.browser() as browser:
        key = (await new_organization(browser)).key
    path = await subscribe(helpdesk_stack, key, plain_receiver, ["customer.created"], secret=None)
    await helpdesk_stack.rest(key, "POST", "/customers", json={"email": "grace@example.com", "name": "Grace Hopper"})

    [delivery] = await plain_receiver.wait_for(path, 1)
    assert "x-helpdesk-signature" not in delivery.headers
    assert delivery.headers["x-helpdesk-delivery-id"]
    assert delivery.json["event"] == "customer.created"
    assert delivery.json["data"] == {
        "customerId": delivery.json["data"]["customerId"],
        "email": "grace@example.com",
        "name": "Grace Hopper",
        "phone": None,
    }


async def test_each_operation_delivers_the_events_the_reference_names(
    helpdesk_stack: HelpdeskStack, plain_receiver: WebhookReceiver
) -> None:
    """docs/helpdesk.md, "Which operation emits what": a status change is `ticket.status_changed` and
    `ticket.updated`; likewise priority and assignment; tags are `ticket.updated` alone; a reply is
    `conversation.created`; a customer's change `customer.updated`. One delivery per event and subscription."""
    async with helpdesk_stack.browser() as browser:
        key = (await new_organization(browser)).key
        me = (await browser.query("auth.getUser")).json()["result"]["data"]["json"]
    path = await subscribe(helpdesk_stack, key, plain_receiver, list(EVENTS), secret="another-s3cret")
    created = (
        await helpdesk_stack.rest(
            key, "POST", "/tickets", json={"subject": "Refund", "customer_email": "c@example.com"}
        )
    ).json()
    ticket = f"/tickets/{created['id']}"
    for change in ({"status": "pending"}, {"priority": "urgent"}, {"assignee_id": me["id"]}, {"tags": ["billing"]}):
        assert (await helpdesk_stack.rest(key, "PATCH", ticket, json=change)).status_code == 200
    reply = await helpdesk_stack.rest(key, "POST", f"{ticket}/conversations", json={"body": "We are on it."})
    assert reply.status_code == 201
    customer = f"/customers/{created['customer_id']}"
    assert (await helpdesk_stack.rest(key, "PATCH", customer, json={"name": "Carol"})).status_code == 200

    expected = [
        "ticket.created",
        "customer.created",
        "ticket.status_changed",
        "ticket.updated",
        "ticket.priority_changed",
        "ticket.updated",
        "ticket.assigned",
        "ticket.updated",
        "ticket.updated",
        "conversation.created",
        "customer.updated",
    ]
    deliveries = await plain_receiver.wait_for(path, len(expected))
    assert sorted(d.json["event"] for d in deliveries) == sorted(expected)
    assert all(d.verified for d in deliveries)
    assert len({d.headers["x-helpdesk-delivery-id"] for d in deliveries}) == len(expected)
    by_event: dict[str, list[Any]] = {}
    for delivery in deliveries:
        by_event.setdefault(delivery.json["event"], []).append(delivery.json["data"])
    assert {tuple(sorted(data)) for name in by_event if name.startswith("ticket.") for data in by_event[name]} == {
        tuple(sorted(TICKET_DATA))
    }
    assigned = by_event["ticket.assigned"][0]
    assert (assigned["status"], assigned["priority"]) == ("pending", "urgent")
    [conversation] = by_event["conversation.created"]
    assert (conversation["ticketId"], conversation["body"], conversation["internal"]) == (
        created["id"],
        "We are on it.",
        False,
    )


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def test_a_failing_receiver_is_retried_at_1m_5m_30m_2h_24h_then_the_subscription_is_failed_and_disabled(
    broker_bootstrap: str, plain_receiver: WebhookReceiver, tmp_path: Path
) -> None:
    """A gateway without processors (nothing delivers on its own), on a database of its own (the engine claims every
    due helpdesk delivery in its database); the engine is run here on a fake clock."""
    settings = helpdesk_settings(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'own.db'}", None)
    async with (
        running_stack(settings, broker_bootstrap, HelpdeskStack, with_processor=False) as gateway,
        gateway.browser() as browser,
    ):
        admin = await new_organization(browser)
        organization_id, key = admin.id, admin.key
        path = await subscribe(gateway, key, plain_receiver, ["ticket.created"], secret="retry-s3cret")
        plain_receiver.respond(path, 500, "down for maintenance")
        created = await gateway.rest(key, "POST", "/tickets", json={"subject": "Hi", "customer_email": "r@example.com"})
        assert created.status_code == 201
        hook = (await gateway.rest(key, "GET", "/webhooks")).json()["data"][0]["id"]

        clock = FakeClock(datetime.now(UTC) + timedelta(seconds=1))
        recorded = select(WEBHOOK_EVENTS.c.id).where(
            WEBHOOK_EVENTS.c.service == WEBHOOKS.service, WEBHOOK_EVENTS.c.owner_id == organization_id
        )
        pending = set(await gateway.db.read(lambda connection: list(connection.scalars(recorded))))
        assert len(pending) == 2, "ticket.created and customer.created, waiting for the fan-out"
        await gateway.db.write(lambda connection: fan_out(connection, pending, now=clock()))
        cipher: MultiFernet = secrets.secrets_cipher(gateway.settings.platform)
        engine = WebhookDeliverer(gateway.db, WEBHOOKS, cipher, allow_private_targets=True, clock=clock)
        try:
            assert await engine.deliver_due() == 1
            for wait in (timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2)):
                clock.now += wait - timedelta(seconds=1)
                assert await engine.deliver_due() == 0, "nothing is sent before the wait is over"
                clock.now += timedelta(seconds=1)
                assert await engine.deliver_due() == 1
                listed = (await gateway.rest(key, "GET", "/webhooks")).json()["data"]
                assert (listed[0]["status"], listed[0]["enabled"]) == ("active", True), "enabled between retries"
            clock.now += timedelta(hours=24)
            assert await engine.deliver_due() == 1
        finally:
            await engine.aclose(grace_s=1)

        attempts = [d for d in plain_receiver.received(path) if d.json["data"].get("ticketId") == created.json()["id"]]
        assert len(attempts) == 6, "the first delivery and 5 retries"
        assert all(attempt.verified for attempt in attempts)
        assert len({attempt.headers["x-helpdesk-delivery-id"] for attempt in attempts}) == 1
        [listed] = (await gateway.rest(key, "GET", "/webhooks")).json()["data"]
        assert (listed["id"], listed["status"], listed["enabled"]) == (hook, "failed", False)


async def test_a_disabled_subscription_gets_nothing(
    helpdesk_stack: HelpdeskStack, plain_receiver: WebhookReceiver
) -> None:
    async with helpdesk_stack.browser() as browser:
        key = (await new_organization(browser)).key
    quiet = await subscribe(helpdesk_stack, key, plain_receiver, ["ticket.created"], secret=None)
    loud = await subscribe(helpdesk_stack, key, plain_receiver, ["ticket.created"], secret=None)
    hooks = (await helpdesk_stack.rest(key, "GET", "/webhooks")).json()["data"]
    quiet_id = next(h["id"] for h in hooks if h["url"].endswith(quiet))
    assert (
        await helpdesk_stack.rest(key, "PATCH", f"/webhooks/{quiet_id}", json={"enabled": False})
    ).status_code == 200
    subject = f"only-loud-{uuid.uuid4()}"
    await helpdesk_stack.rest(key, "POST", "/tickets", json={"subject": subject, "customer_email": "q@example.com"})

    [delivery] = await plain_receiver.wait_for(loud, 1)
    assert delivery.json["data"]["subject"] == subject
    to_quiet = select(WEBHOOK_DELIVERIES.c.id).where(WEBHOOK_DELIVERIES.c.endpoint_id == quiet_id)
    assert await helpdesk_stack.db.read(lambda connection: list(connection.scalars(to_quiet))) == []
    assert plain_receiver.received(quiet) == []
