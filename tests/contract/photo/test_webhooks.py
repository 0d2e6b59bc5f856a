"""Sections 2.2, 4.2 and 6: endpoints are created (the secret shown once), listed and deleted, never updated; at
most 16 per account; literal private addresses are refused unless private targets are allowed; deliveries of
`verification.completed` and `verification.reviewed` are signed over the raw body and timestamped."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from storage.common.webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from tests.conftest import running_stack, stack_settings
from tests.helpers import until
from tests.peers.receiver import WebhookReceiver
from tests.photo_stack import CustomerKeys, PhotoStack, jpeg

HOOKS = "/api/v1/webhooks"
ALL_EVENTS = ["verification.completed", "verification.reviewed", "inspection.submitted"]


async def create(stack: PhotoStack, key: str, url: str, events: list[str]) -> dict:
    response = await stack.call(key, "POST", HOOKS, json={"url": url, "events": events})
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_shows_the_signing_secret_once(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key, "https://hooks.example.com/a", ALL_EVENTS)
    assert set(created) == {"id", "url", "events", "status", "created_at", "signing_secret"}
    assert created["id"].startswith("whk_")
    assert created["signing_secret"].startswith("whsec_")
    assert (created["status"], created["events"]) == ("active", ALL_EVENTS)
    listed = (await photo_stack.call(customer.test_key, "GET", HOOKS)).json()["data"]
    assert [hook["id"] for hook in listed] == [created["id"]]
    assert set(listed[0]) == {"id", "url", "events", "status", "created_at"}


async def test_the_secret_is_stored_encrypted_with_its_hash(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    created = await create(photo_stack, customer.test_key, "https://hooks.example.com/b", ["verification.completed"])
    endpoint = select(WebhookEndpoint.__table__).where(WebhookEndpoint.id == created["id"])
    row = await photo_stack.db.read(lambda connection: connection.execute(endpoint).one())
    stored = [str(value) for value in row]
    assert all(created["signing_secret"] not in value for value in stored)
    assert row.secret_sha256 == hashlib.sha256(created["signing_secret"].encode()).hexdigest()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"events": ["verification.completed"]}, "url"),
        ({"url": "http://hooks.example.com/x", "events": ["verification.completed"]}, "HTTPS"),
        ({"url": "https:///nohost", "events": ["verification.completed"]}, "host"),
        ({"url": "https://hooks.example.com/x"}, "events"),
        ({"url": "https://hooks.example.com/x", "events": []}, "events"),
        ({"url": "https://hooks.example.com/x", "events": ["verification.deleted"]}, "events"),
        ({"url": "https://hooks.example.com/x", "events": "verification.completed"}, "events"),
    ],
)
async def test_bad_endpoints_are_400(photo_stack: PhotoStack, customer: CustomerKeys, body: dict, message: str):
    response = await photo_stack.call(customer.test_key, "POST", HOOKS, json=body)
    assert response.status_code == 400
    assert message in response.json()["error"]


PRIVATE = "url must not point at a private, loopback or reserved address"


async def test_literal_private_addresses_are_refused_unless_private_targets_are_allowed(
    photo_stack: PhotoStack, customer: CustomerKeys, broker_bootstrap: str, database_url: str, tmp_path: Path
) -> None:
    """The session stack allows private targets (its receiver is on localhost); a gateway with the default refuses
    them. A host name is accepted at creation: the address it resolves to is checked at every delivery."""
    refused = {
        "https://10.0.0.1/x": PRIVATE,
        "https://127.0.0.1/x": PRIVATE,
        "https://169.254.169.254/x": PRIVATE,
        "https://[::1]/x": "url must be an HTTPS URL with a host name",  # the body's schema admits no IPv6 literal
    }
    settings = stack_settings(tmp_path, database_url, None, webhook_allow_private_targets=False)
    async with running_stack(settings, broker_bootstrap, PhotoStack, with_processor=False) as strict:
        owner = await strict.new_customer()
        for url, message in refused.items():
            response = await strict.call(owner.test_key, "POST", HOOKS, json={"url": url, "events": ALL_EVENTS})
            assert (response.status_code, response.json()) == (400, {"error": message}), url
        public = await create(strict, owner.test_key, "https://8.8.8.8/x", ALL_EVENTS)
        named = await create(strict, owner.test_key, "https://localhost/x", ALL_EVENTS)
        listed = (await strict.call(owner.test_key, "GET", HOOKS)).json()["data"]
        assert {hook["id"] for hook in listed} == {public["id"], named["id"]}
    allowed = await create(photo_stack, customer.test_key, "https://10.0.0.1/x", ALL_EVENTS)
    assert allowed["url"] == "https://10.0.0.1/x"


async def test_a_17th_endpoint_is_409_until_one_is_deleted(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    made = [
        await create(photo_stack, customer.test_key, f"https://hooks.example.com/{n}", ALL_EVENTS) for n in range(16)
    ]
    refused = await photo_stack.call(
        customer.test_key, "POST", HOOKS, json={"url": "https://hooks.example.com/17", "events": ALL_EVENTS}
    )
    assert refused.status_code == 409
    assert refused.json() == {"error": "An account can have at most 16 webhook endpoints; delete one first"}
    assert len((await photo_stack.call(customer.test_key, "GET", HOOKS)).json()["data"]) == 16
    other = await photo_stack.new_customer()  # the limit is per account
    await create(photo_stack, other.test_key, "https://hooks.example.com/theirs", ALL_EVENTS)

    deleted = await photo_stack.call(customer.test_key, "DELETE", f"{HOOKS}/{made[0]['id']}")
    assert deleted.status_code == 200
    seventeenth = await create(photo_stack, customer.test_key, "https://hooks.example.com/17", ALL_EVENTS)
    listed = (await photo_stack.call(customer.test_key, "GET", HOOKS)).json()["data"]
    assert {hook["id"] for hook in listed} == {hook["id"] for hook in made[1:]} | {seventeenth["id"]}


async def test_there_is_no_update_operation(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    hook = await create(photo_stack, customer.test_key, "https://hooks.example.com/p", ["verification.completed"])
    for endpoint_id in (hook["id"], "whk_x"):
        response = await photo_stack.call(
            customer.test_key, "PATCH", f"{HOOKS}/{endpoint_id}", json={"events": ["verification.reviewed"]}
        )
        assert response.status_code == 405
        assert set(response.headers["Allow"].split(", ")) == {"DELETE", "OPTIONS"}
        assert response.json() == {"error": "Method PATCH is not allowed here"}
    [listed] = (await photo_stack.call(customer.test_key, "GET", HOOKS)).json()["data"]
    assert listed["events"] == ["verification.completed"]


async def test_delete_and_another_accounts_endpoint(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    other = await photo_stack.new_customer()
    theirs = await create(photo_stack, other.test_key, "https://hooks.example.com/t", ["verification.completed"])
    mine = await create(photo_stack, customer.test_key, "https://hooks.example.com/m", ["verification.completed"])
    assert [h["id"] for h in (await photo_stack.call(customer.test_key, "GET", HOOKS)).json()["data"]] == [mine["id"]]
    for endpoint_id in (theirs["id"], "whk_nothing"):
        response = await photo_stack.call(customer.test_key, "DELETE", f"{HOOKS}/{endpoint_id}")
        assert response.status_code == 404
        assert response.json() == {"error": "No webhook endpoint with that id on this account"}
    response = await photo_stack.call(customer.test_key, "DELETE", f"{HOOKS}/{mine['id']}")
    assert (response.status_code, response.json()) == (200, {"id": mine["id"], "deleted": True})
    assert (await photo_stack.call(customer.test_key, "GET", HOOKS)).json()["data"] == []
    assert (await photo_stack.call(customer.test_key, "DELETE", f"{HOOKS}/{mine['id']}")).status_code == 404


async def test_completed_verification_is_delivered_signed(
    photo_stack: PhotoStack, customer: CustomerKeys, receiver: WebhookReceiver
) -> None:
    path = await photo_stack.subscribe(customer.test_key, receiver, ["verification.completed"])
    verification = (await photo_stack.verify(customer.test_key, jpeg(), "icao")).json()
    [delivery] = await receiver.wait_for(path, 1)
    assert delivery.verified  # hex HMAC-SHA256 of the raw body with the secret, timestamp within 5 minutes
    assert delivery.headers["content-type"] == "application/json"
    event = delivery.json
    assert set(event) == {"id", "type", "created_at", "data"}
    assert event["id"].startswith("evt_")
    assert event["type"] == "verification.completed"
    assert event["data"]["id"] == verification["id"]
    assert event["data"]["violation_reasons"] == verification["violation_reasons"]


async def test_only_subscribed_events_are_delivered(
    photo_stack: PhotoStack, customer: CustomerKeys, receiver: WebhookReceiver
) -> None:
    reviewed_only, completed_only = receiver.new_path(), receiver.new_path()
    await create(photo_stack, customer.test_key, receiver.url(reviewed_only), ["verification.reviewed"])
    await create(photo_stack, customer.test_key, receiver.url(completed_only), ["verification.completed"])
    verification = (await photo_stack.verify(customer.test_key, jpeg())).json()
    await receiver.wait_for(completed_only, 1)
    review = await photo_stack.call(
        customer.test_key,
        "POST",
        f"/api/v1/verifications/{verification['id']}/review",
        json={"is_compliant": True, "note": "checked by hand"},
    )
    assert review.status_code == 200
    [reviewed] = await receiver.wait_for(reviewed_only, 1)
    assert reviewed.json["type"] == "verification.reviewed"
    assert reviewed.json["data"]["is_compliant"] is True
    assert [r.json["type"] for r in receiver.received(completed_only)] == ["verification.completed"]


async def test_another_accounts_events_are_not_delivered(
    photo_stack: PhotoStack, customer: CustomerKeys, receiver: WebhookReceiver
) -> None:
    path = await photo_stack.subscribe(customer.test_key, receiver, ["verification.completed"])
    other = await photo_stack.new_customer()
    await photo_stack.verify(other.test_key, jpeg())
    mine = (await photo_stack.verify(customer.test_key, jpeg())).json()
    await receiver.wait_for(path, 1)
    # Deliveries are made at fan-out: once the other account's event is fanned out, none of it can ever come.
    events = select(WebhookEvent.state).where(WebhookEvent.owner_id == other.id)

    async def fanned_out() -> list[str]:
        states = [state for (state,) in await photo_stack.db.read(lambda connection: connection.execute(events).all())]
        return states if states and "pending" not in states else []

    assert await until(fanned_out, "the other account's event fanned out") == ["fanned_out"]
    theirs = select(WebhookEvent.id).where(WebhookEvent.owner_id == other.id)
    deliveries = select(WebhookDelivery.__table__).where(WebhookDelivery.event_id.in_(theirs))
    assert await photo_stack.db.read(lambda connection: connection.execute(deliveries).all()) == []
    assert [delivery.json["data"]["id"] for delivery in receiver.received(path)] == [mine["id"]]


async def deliveries_made(stack: PhotoStack, endpoint_id: str) -> list[tuple[str, str]]:
    """(event type, verification id) of each delivery made for the endpoint, sent or not, oldest first. The fan-out
    makes all of an event's deliveries in one statement: once one endpoint has its delivery of an event, another
    endpoint without one never gets that event."""
    made = (
        select(WebhookEvent.type, WebhookEvent.body)
        .join(WebhookDelivery, WebhookDelivery.event_id == WebhookEvent.id)
        .where(WebhookDelivery.endpoint_id == endpoint_id)
        .order_by(WebhookDelivery.id)
    )
    rows = await stack.db.read(lambda connection: connection.execute(made).all())
    return [(event_type, json.loads(body)["data"]["id"]) for event_type, body in rows]


def verifications_received(receiver: WebhookReceiver, path: str) -> set[str]:
    """The ids of the verifications whose events have reached `path` so far."""
    return {delivery.json["data"]["id"] for delivery in receiver.received(path)}


async def test_a_deleted_endpoint_gets_nothing_more(
    photo_stack: PhotoStack, customer: CustomerKeys, receiver: WebhookReceiver
) -> None:
    path, kept = receiver.new_path(), receiver.new_path()
    hook = await create(photo_stack, customer.test_key, receiver.url(path), ["verification.completed"])
    await create(photo_stack, customer.test_key, receiver.url(kept), ["verification.completed"])
    first = (await photo_stack.verify(customer.test_key, jpeg())).json()
    await receiver.wait_for(path, 1)
    deleted = await photo_stack.call(customer.test_key, "DELETE", f"{HOOKS}/{hook['id']}")
    assert deleted.status_code == 200
    second = (await photo_stack.verify(customer.test_key, jpeg())).json()
    # The second event at the kept endpoint means its fan-out is done: a delivery for the deleted endpoint, if wrongly
    # made, was made by the same statement.
    await until(lambda: second["id"] in verifications_received(receiver, kept), "the second event at the kept endpoint")
    assert await deliveries_made(photo_stack, hook["id"]) == [("verification.completed", first["id"])]
    assert [delivery.json["data"]["id"] for delivery in receiver.received(path)] == [first["id"]]


async def test_inspection_submitted_is_accepted_and_never_fired(
    photo_stack: PhotoStack, customer: CustomerKeys, receiver: WebhookReceiver
) -> None:
    path, witness = receiver.new_path(), receiver.new_path()
    hook = await create(photo_stack, customer.test_key, receiver.url(path), ["inspection.submitted"])
    await create(photo_stack, customer.test_key, receiver.url(witness), ["verification.completed"])
    verification = (await photo_stack.verify(customer.test_key, jpeg())).json()
    # The witness gets the verification's event once it is fanned out: by then every event the verification fired is
    # recorded, and each one's deliveries are made.
    await until(lambda: verification["id"] in verifications_received(receiver, witness), "the event at the witness")
    recorded = select(WebhookEvent.type).where(WebhookEvent.owner_id == customer.id)
    types = await photo_stack.db.read(lambda connection: connection.execute(recorded).scalars().all())
    assert types == ["verification.completed"]
    assert await deliveries_made(photo_stack, hook["id"]) == []
    assert receiver.received(path) == []
