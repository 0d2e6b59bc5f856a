"""The webhook delivery engine on every database under test, for every service's webhook profile, delivering to a real
HTTPS (or plain HTTP) receiver: deliveries in the profile's body shape with its headers (signed when the endpoint has
a secret, the event id as the delivery id on every attempt), the whole retry schedule on a fake clock, what a failed
endpoint becomes, the endpoint operations (create with its limit, update, delete, a test delivery), redelivered
fan-out, restarts, rotation of the keys that encrypt signing secrets, slow endpoints, the SSRF guard and the attempt
log.

What a receiver must see is spelled out per service in `Contract` from its contract, not read from the profile, so a
wrong profile fails here. Every test uses a service name of its own (the profile under another name), so its
deliverer never sees another test's deliveries."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet, MultiFernet
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker
from sqlalchemy import func, make_url, select

from processors.common.outbox import Sweeper
from processors.common.webhooks import WebhookDeliverer, events_outbox, fanout_router
from signalyard import secrets
from signalyard.settings import PlatformSettings, load
from storage.common.db import Database
from storage.common.webhooks.deliveries import claim_due, fan_out
from storage.common.webhooks.endpoints import (
    Endpoint,
    EndpointInactive,
    EndpointLimitReached,
    OperationNotOffered,
    create_endpoint,
    delete_endpoint,
    list_endpoints,
    update_endpoint,
)
from storage.common.webhooks.events import record_event, send_test_event
from storage.common.webhooks.models import ATTEMPTS, DELIVERIES, ENDPOINTS, EVENTS
from tests.helpers import writer_busy
from tests.peers.receiver import Received, Verify, WebhookReceiver, verify_helpdesk, verify_photo
from topics import helpdesk, photo
from topics.common.admin import ensure_topics
from topics.common.client import LINGER_MS
from topics.common.webhooks import event_message, events_topic
from wire.webhooks import WebhookProfile

START = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)
START_ISO = "2026-11-23T14:00:00.000000Z"


@dataclass(frozen=True)
class Contract:
    """A service's webhooks as its contract states them, and its profile."""

    name: str
    profile: WebhookProfile
    body: Callable[[str, str, str, Any], Any]
    """(event id, event type, ISO 8601 time, data) -> the JSON an endpoint receives."""
    verify: Verify
    """How the service's receivers check a delivery."""
    signature_header: str
    delivery_id_header: str
    extra_headers: frozenset[str]
    """Every `x-` header of a signed delivery."""
    schedule: tuple[timedelta, ...]
    """The waits before each retry."""
    failed_status: str
    spares_an_endpoint_that_delivered: bool
    """Whether an endpoint that got a delivery through since a failed one was created stays active."""


MINUTE, HOUR = timedelta(minutes=1), timedelta(hours=1)
PHOTO = Contract(
    name="photo",
    profile=photo.WEBHOOKS,
    body=lambda event_id, event_type, at, data: {"id": event_id, "type": event_type, "created_at": at, "data": data},
    verify=verify_photo,
    signature_header="x-verify-signature",
    delivery_id_header="x-verify-delivery-id",
    extra_headers=frozenset({"x-verify-signature", "x-verify-timestamp", "x-verify-delivery-id"}),
    schedule=(MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 12 * HOUR, 18 * HOUR, 24 * HOUR),
    failed_status="disabled",
    spares_an_endpoint_that_delivered=True,
)
HELPDESK = Contract(
    name="helpdesk",
    profile=helpdesk.WEBHOOKS,
    body=lambda event_id, event_type, at, data: {"event": event_type, "timestamp": at, "data": data},
    verify=verify_helpdesk,
    signature_header="x-helpdesk-signature",
    delivery_id_header="x-helpdesk-delivery-id",
    extra_headers=frozenset({"x-helpdesk-signature", "x-helpdesk-delivery-id"}),
    schedule=(MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 24 * HOUR),
    failed_status="failed",
    spares_an_endpoint_that_delivered=False,
)
CONTRACTS = (PHOTO, HELPDESK)


def profiles(where: Callable[[WebhookProfile], bool]) -> pytest.MarkDecorator:
    """Run the test for the services whose profile `where` holds for (instead of every service)."""
    chosen = [contract for contract in CONTRACTS if where(contract.profile)]
    return pytest.mark.parametrize("hooks", chosen, indirect=True, ids=[contract.name for contract in chosen])


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


@pytest.fixture(scope="module")
def plain_receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(tls=False) as running:
        yield running


class FakeClock:
    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def timestamp(self) -> float:
        return self.now.timestamp()

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@dataclass
class Hooks:
    """One test's service: its contract and profile (under a service name of its own), fake clock, cipher and an
    owner, on the shared database and receiver."""

    db: Database
    receiver: WebhookReceiver
    contract: Contract
    service: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:10]}")
    owner: str = field(default_factory=lambda: f"cus_{uuid.uuid4().hex[:12]}")
    clock: FakeClock = field(default_factory=FakeClock)
    cipher: MultiFernet = field(default_factory=lambda: MultiFernet([Fernet(Fernet.generate_key())]))
    engines: list[WebhookDeliverer] = field(default_factory=list)
    profile: WebhookProfile = field(init=False)

    def __post_init__(self) -> None:
        self.profile = dataclasses.replace(self.contract.profile, service=self.service)

    @property
    def types(self) -> tuple[str, ...]:
        """The service's event types: a test subscribes to and records these."""
        return self.profile.events

    def engine(self, **options: Any) -> WebhookDeliverer:
        defaults: dict[str, Any] = {
            "clock": self.clock,
            "allow_private_targets": True,
            "ca_bundle": self.receiver.ca_bundle,
        }
        engine = WebhookDeliverer(self.db, self.profile, self.cipher, **(defaults | options))
        self.engines.append(engine)
        return engine

    def expect(self, path: str, secret: str | None, receiver: WebhookReceiver | None = None) -> None:
        """Deliveries to `path` are checked as the service's receivers check them."""
        (receiver or self.receiver).expect_secret(path, secret, self.contract.verify)

    async def endpoint(
        self,
        path: str | None = None,
        events: tuple[str, ...] | None = None,
        owner: str | None = None,
        *,
        unsigned: bool = False,
        receiver: WebhookReceiver | None = None,
    ) -> tuple[Endpoint, str]:
        """An endpoint at a new receiver path, with a secret (generated, or given where the profile takes one)
        unless `unsigned`; deliveries to it are checked with that secret. Returns it and the path."""
        receiver = receiver or self.receiver
        path = path or receiver.new_path()
        given = None if unsigned or self.profile.secret == "generated" else f"s3cret-{uuid.uuid4().hex}"
        created, secret = await self.db.write(
            lambda connection: create_endpoint(
                connection,
                self.profile,
                self.cipher,
                owner_id=owner or self.owner,
                url=receiver.url(path),
                events=events or self.types[:1],
                secret=given,
                now=self.clock(),
            )
        )
        self.expect(path, secret, receiver)
        return created, path

    async def record(self, data: Any = None, event_type: str | None = None) -> str | None:
        """Record an event as a service does (in its transaction): its id, None when no endpoint subscribes to it."""
        return await self.db.write(
            lambda connection: record_event(
                connection,
                self.profile,
                self.owner,
                event_type or self.types[0],
                data or {"verification_id": "ver_1"},
                now=self.clock(),
            )
        )

    async def event(self, data: Any = None, event_type: str | None = None, fan_out: bool = True) -> str:
        """Record an event an endpoint subscribes to, and fan it out as the subscriber does."""
        event_id = await self.record(data, event_type)
        assert event_id is not None, "no endpoint subscribes to the event"
        if fan_out:
            await self.fan_out(event_id)
        return event_id

    async def fan_out(self, *event_ids: str) -> int:
        return await self.db.write(lambda connection: fan_out(connection, set(event_ids), now=self.clock()))

    async def listed(self) -> list[Endpoint]:
        """What the owner's list shows."""
        return await self.db.read(lambda connection: list_endpoints(connection, self.profile, self.owner))

    async def update(self, endpoint_id: str, **changes: Any) -> Endpoint | None:
        return await self.db.write(
            lambda connection: update_endpoint(
                connection, self.profile, self.owner, endpoint_id, now=self.clock(), **changes
            )
        )

    async def delete(self, endpoint_id: str, owner: str | None = None) -> bool:
        return await self.db.write(
            lambda connection: delete_endpoint(connection, self.profile, owner or self.owner, endpoint_id)
        )

    def delivery_ids(self, requests: list[Received]) -> list[str]:
        return [request.headers[self.contract.delivery_id_header] for request in requests]

    async def rows(self, table: Any, **where: Any) -> list[Any]:
        statement = select(table).where(*(table.c[name] == value for name, value in where.items()))
        if "id" in table.c:
            statement = statement.order_by(table.c.id)
        return await self.db.read(lambda connection: list(connection.execute(statement)))

    async def deliveries(self, endpoint_id: str) -> list[Any]:
        return await self.rows(DELIVERIES, endpoint_id=endpoint_id)

    async def attempts(self, endpoint_id: str) -> list[Any]:
        [delivery] = await self.deliveries(endpoint_id)
        return await self.rows(ATTEMPTS, delivery_id=delivery.id)

    async def move(self, endpoint_id: str, url: str) -> None:
        """The endpoint's URL changed in storage, past the checks a change through its operations makes."""
        await self.db.write(
            lambda connection: connection.execute(
                ENDPOINTS.update().where(ENDPOINTS.c.id == endpoint_id).values(url=url)
            )
        )

    async def endpoint_row(self, endpoint_id: str) -> Any:
        [row] = await self.rows(ENDPOINTS, id=endpoint_id)
        return row


@pytest.fixture(params=CONTRACTS, ids=[contract.name for contract in CONTRACTS])
async def hooks(request: pytest.FixtureRequest, db: Database, receiver: WebhookReceiver) -> AsyncIterator[Hooks]:
    setup = Hooks(db, receiver, request.param)
    receiver.clock = setup.clock.timestamp
    yield setup
    for engine in setup.engines:
        await engine.aclose(grace_s=1)


# ------------------------------------------------------------------------------------------------------ delivery


async def test_a_delivery_arrives_signed_in_the_services_body_shape(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    event_id = await hooks.event({"verification_id": "ver_123", "status": "completed"})

    assert await hooks.engine().deliver_due() == 1

    [request] = hooks.receiver.received(path)
    assert request.verified
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("signalyard-webhooks/")
    assert {name for name in request.headers if name.startswith("x-")} == hooks.contract.extra_headers
    assert request.headers[hooks.contract.delivery_id_header] == event_id
    if "x-verify-timestamp" in hooks.contract.extra_headers:
        assert request.headers["x-verify-timestamp"] == str(int(START.timestamp()))
    data = {"verification_id": "ver_123", "status": "completed"}
    assert request.json == hooks.contract.body(event_id, hooks.types[0], START_ISO, data)
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.attempts, delivery.next_attempt_at) == ("delivered", 1, None)
    [attempt] = await hooks.attempts(endpoint.id)
    assert (attempt.attempt, attempt.status_code, attempt.error, attempt.response_body) == (1, 200, None, "ok")


async def test_the_secret_is_stored_encrypted_beside_its_sha256_never_in_plain(hooks: Hooks) -> None:
    endpoint, _ = await hooks.endpoint()
    row = await hooks.endpoint_row(endpoint.id)
    secret = hooks.cipher.decrypt(row.secret_encrypted.encode()).decode()
    if hooks.profile.secret == "generated":
        assert secret.startswith(hooks.profile.secret_prefix)
    assert all(secret not in str(value) for value in row)
    assert row.secret_sha256 == hashlib.sha256(secret.encode()).hexdigest()
    assert endpoint.id.startswith(hooks.profile.id_prefix + "_")
    assert (endpoint.status, endpoint.enabled, endpoint.events, endpoint.has_secret) == (
        "active",
        True,
        [hooks.types[0]],
        True,
    )


@profiles(lambda profile: profile.secret == "generated")
async def test_a_service_that_generates_secrets_takes_none_from_the_user(hooks: Hooks) -> None:
    with pytest.raises(ValueError, match="generates its signing secrets"):
        await hooks.db.write(
            lambda connection: create_endpoint(
                connection,
                hooks.profile,
                hooks.cipher,
                owner_id=hooks.owner,
                url="https://hooks.example.com/x",
                events=hooks.types[:1],
                secret="mine",
            )
        )
    assert await hooks.listed() == []


@profiles(lambda profile: profile.secret == "optional")
async def test_without_a_secret_the_delivery_arrives_with_no_signature_header(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint(unsigned=True)
    event_id = await hooks.event()

    assert await hooks.engine().deliver_due() == 1

    [request] = hooks.receiver.received(path)
    assert request.verified is None
    assert hooks.contract.signature_header not in request.headers
    assert request.headers[hooks.contract.delivery_id_header] == event_id
    assert request.json["data"] == {"verification_id": "ver_1"}
    row = await hooks.endpoint_row(endpoint.id)
    assert (row.secret_encrypted, row.secret_sha256) == (None, None)
    assert [shown.has_secret for shown in await hooks.listed()] == [False]
    [delivery] = await hooks.deliveries(endpoint.id)
    assert delivery.state == "delivered"


@profiles(lambda profile: "http" in profile.url_schemes)
async def test_a_plain_http_target_gets_its_deliveries(hooks: Hooks, plain_receiver: WebhookReceiver) -> None:
    endpoint, path = await hooks.endpoint(receiver=plain_receiver)
    plain_receiver.clock = hooks.clock.timestamp
    event_id = await hooks.event()

    assert await hooks.engine().deliver_due() == 1

    assert endpoint.url.startswith("http://")
    [request] = plain_receiver.received(path)
    assert request.verified
    assert hooks.delivery_ids([request]) == [event_id]


async def test_an_event_reaches_only_the_owners_active_subscribed_endpoints(hooks: Hooks) -> None:
    subscribed, path = await hooks.endpoint(events=hooks.types[:2])
    other_type, other_type_path = await hooks.endpoint(events=hooks.types[2:3])
    _, other_owner_path = await hooks.endpoint(owner="cus_someone_else")
    deleted, deleted_path = await hooks.endpoint()
    assert await hooks.delete(deleted.id)

    await hooks.event(event_type=hooks.types[1])
    await hooks.engine().deliver_due()

    assert len(hooks.receiver.received(path)) == 1
    for quiet in (other_type_path, other_owner_path, deleted_path):
        assert hooks.receiver.received(quiet) == []
    assert {endpoint.id for endpoint in await hooks.listed()} == {subscribed.id, other_type.id}


async def test_an_owner_has_at_most_the_services_endpoints_even_when_creating_them_at_once(hooks: Hooks) -> None:
    limit = hooks.profile.max_endpoints

    async def create(index: int) -> bool:
        try:
            await hooks.db.write(
                lambda connection: create_endpoint(
                    connection,
                    hooks.profile,
                    hooks.cipher,
                    owner_id=hooks.owner,
                    url=f"https://hooks.example.com/{index}",
                    events=hooks.types[:1],
                )
            )
        except EndpointLimitReached:
            return False
        return True

    created = await asyncio.gather(*(create(index) for index in range(limit + 4)))

    assert created.count(True) == limit
    assert len(await hooks.listed()) == limit
    first = (await hooks.listed())[0]
    assert await hooks.delete(first.id)
    assert await create(limit + 4), "a deleted endpoint makes room"


# ------------------------------------------------------------------------------------------------------ retries


async def test_500s_are_retried_through_the_whole_schedule_then_the_endpoint_is_disabled(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500, "upstream exploded")
    event_id = await hooks.event()
    engine = hooks.engine()
    schedule = hooks.contract.schedule

    assert await engine.deliver_due() == 1
    for wait in schedule:
        hooks.clock.advance(wait - timedelta(seconds=1))
        assert await engine.deliver_due() == 0, "nothing is sent before the wait is over"
        hooks.clock.advance(timedelta(seconds=1))
        assert await engine.deliver_due() == 1

    requests = hooks.receiver.received(path)
    assert len(requests) == len(schedule) + 1
    assert all(request.verified for request in requests)
    assert set(hooks.delivery_ids(requests)) == {event_id}, "one delivery id on every attempt, to de-duplicate on"
    assert len({request.body for request in requests}) == 1, "the same body every time"
    if "x-verify-timestamp" in hooks.contract.extra_headers:
        assert len({request.headers["x-verify-timestamp"] for request in requests}) == len(requests), "signed anew"
    assert hooks.clock() - START == sum(schedule, timedelta())
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.attempts, delivery.next_attempt_at) == ("failed", len(schedule) + 1, None)
    attempts = await hooks.attempts(endpoint.id)
    assert [a.attempt for a in attempts] == list(range(1, len(schedule) + 2))
    assert {(a.status_code, a.error, a.response_body) for a in attempts} == {(500, "HTTP 500", "upstream exploded")}
    row = await hooks.endpoint_row(endpoint.id)
    assert (row.status, row.disabled_at) == (hooks.contract.failed_status, hooks.clock())
    listed = await hooks.listed()
    assert [(shown.id, shown.status, shown.enabled) for shown in listed] == [
        (endpoint.id, hooks.contract.failed_status, False)
    ]

    # A disabled endpoint gets no new deliveries, and the engine sends nothing more.
    hooks.clock.advance(timedelta(days=7))
    assert await hooks.record() is None
    assert await engine.deliver_due() == 0
    assert len(hooks.receiver.received(path)) == len(schedule) + 1


async def test_disabling_an_endpoint_cancels_its_other_pending_deliveries(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500)
    first = await hooks.event()
    engine = hooks.engine()
    schedule = hooks.contract.schedule
    await engine.deliver_due()
    for wait in schedule[:-1]:
        hooks.clock.advance(wait)
        await engine.deliver_due()
    hooks.clock.advance(schedule[-1] - timedelta(seconds=30))
    second = await hooks.event()  # its first attempt fails half a minute before the first event's last one
    assert await engine.deliver_due() == 1
    hooks.clock.advance(timedelta(seconds=30))
    assert await engine.deliver_due() == 1  # the first event's last attempt
    hooks.clock.advance(timedelta(days=1))
    assert await engine.deliver_due() == 0

    states = {row.event_id: row.state for row in await hooks.deliveries(endpoint.id)}
    assert states == {first: "failed", second: "canceled"}
    assert len(hooks.receiver.received(path)) == len(schedule) + 2


async def test_a_success_mid_schedule_stops_the_retries(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 503, times=2)
    await hooks.event()
    engine = hooks.engine()

    await engine.deliver_due()
    hooks.clock.advance(timedelta(minutes=1))
    await engine.deliver_due()
    hooks.clock.advance(timedelta(minutes=5))
    await engine.deliver_due()
    hooks.clock.advance(timedelta(days=4))
    assert await engine.deliver_due() == 0

    assert len(hooks.receiver.received(path)) == 3
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.attempts) == ("delivered", 3)
    assert [a.status_code for a in await hooks.attempts(endpoint.id)] == [503, 503, 200]
    assert (await hooks.endpoint_row(endpoint.id)).status == "active"


async def test_a_delivery_through_within_a_failed_window_spares_the_endpoint_only_where_the_contract_says(
    hooks: Hooks,
) -> None:
    """Photo keeps an endpoint that delivered since the failed delivery was created; the helpdesk marks it `failed`
    and disables it when the last retry fails, whatever succeeded before."""
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500)
    first = await hooks.event()
    engine = hooks.engine()
    schedule = hooks.contract.schedule
    await engine.deliver_due()
    hooks.clock.advance(timedelta(seconds=30))
    second = await hooks.event()  # due now, while the first event's retry waits for its minute
    hooks.receiver.respond(path, 200, times=1)
    assert await engine.deliver_due() == 1
    hooks.clock.advance(timedelta(seconds=30))
    for wait in schedule[1:]:
        assert await engine.deliver_due() == 1
        hooks.clock.advance(wait)
    assert await engine.deliver_due() == 1

    assert len(hooks.receiver.received(path)) == len(schedule) + 2
    states = {row.event_id: row.state for row in await hooks.deliveries(endpoint.id)}
    assert states == {first: "failed", second: "delivered"}
    row = await hooks.endpoint_row(endpoint.id)
    if hooks.contract.spares_an_endpoint_that_delivered:
        assert (row.status, row.disabled_at) == ("active", None)
    else:
        assert (row.status, row.disabled_at) == (hooks.contract.failed_status, hooks.clock())
        assert await hooks.record() is None, "a failed endpoint subscribes to nothing"
        assert await engine.deliver_due() == 0, "a failed endpoint gets nothing more"


async def test_deleting_an_endpoint_drops_its_pending_retries(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500)
    await hooks.event()
    engine = hooks.engine()
    await engine.deliver_due()

    deleted = await hooks.delete(endpoint.id)
    again = await hooks.delete(endpoint.id)
    hooks.clock.advance(timedelta(days=4))
    assert await engine.deliver_due() == 0

    assert (deleted, again) == (True, False)
    assert len(hooks.receiver.received(path)) == 1
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.next_attempt_at) == ("canceled", None)
    assert await hooks.listed() == []


async def test_only_the_owner_deletes_an_endpoint(hooks: Hooks) -> None:
    endpoint, _ = await hooks.endpoint()
    assert not await hooks.delete(endpoint.id, owner="cus_intruder")
    assert (await hooks.endpoint_row(endpoint.id)).deleted_at is None


async def test_a_new_engine_picks_up_stored_retries(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500, times=1)
    await hooks.event()
    first = hooks.engine()
    await first.deliver_due()
    await first.aclose()

    hooks.clock.advance(timedelta(minutes=1))
    assert await hooks.engine().deliver_due() == 1

    assert len(hooks.receiver.received(path)) == 2
    [delivery] = await hooks.deliveries(endpoint.id)
    assert delivery.state == "delivered"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # SQLite's one write lock; PostgreSQL locks rows
async def test_an_idle_members_polls_only_read_and_it_still_takes_what_comes(hooks: Hooks, database_url: str) -> None:
    """Once a claim found nothing, the member asks whether anything is due (a read) before it claims (a write): an
    idle stack's polls take no write lock, so they go on while another process writes SQLite."""
    endpoint, path = await hooks.endpoint()
    engine = hooks.engine()
    assert await engine.deliver_due() == 0
    with writer_busy(str(make_url(database_url).database)):
        # a claim (a write) would wait for its turn, until the other writer is done
        assert await asyncio.wait_for(engine.deliver_due(), timeout=10) == 0
    await hooks.event()
    assert await engine.deliver_due() == 1
    assert len(hooks.receiver.received(path)) == 1
    [delivery] = await hooks.deliveries(endpoint.id)
    assert delivery.state == "delivered"


async def test_a_delivery_claimed_by_a_member_that_died_is_sent_after_its_lease(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    await hooks.event()
    engine = hooks.engine(lease=timedelta(minutes=2))
    now = hooks.clock()
    [dead] = await hooks.db.write(  # a member claims it and is never heard from again
        lambda connection: claim_due(
            connection, hooks.service, now=now, lease_until=now + timedelta(minutes=2), limit=10, per_endpoint=8
        )
    )
    assert await engine.deliver_due() == 0, "leased to another member"
    hooks.clock.advance(timedelta(minutes=2))
    assert await engine.deliver_due() == 1

    [request] = hooks.receiver.received(path)
    assert request.verified
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.attempts) == ("delivered", 2)
    assert dead.attempt == 1


# ------------------------------------------------------------------------------------------ update and test events


@profiles(lambda profile: "update" in profile.operations)
async def test_an_update_changes_what_the_endpoint_gets_from_then_on(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint(events=hooks.types[:1])
    engine = hooks.engine()

    updated = await hooks.update(endpoint.id, events=[hooks.types[1], hooks.types[2], hooks.types[1]])
    assert updated is not None
    assert (updated.id, updated.events, updated.status) == (endpoint.id, [hooks.types[1], hooks.types[2]], "active")
    assert await hooks.record(event_type=hooks.types[0]) is None
    wanted = await hooks.event(event_type=hooks.types[2])
    await engine.deliver_due()

    assert hooks.delivery_ids(hooks.receiver.received(path)) == [wanted]
    assert [shown.events for shown in await hooks.listed()] == [[hooks.types[1], hooks.types[2]]]
    assert await hooks.update("hook_made_up", events=hooks.types[:1]) is None
    intruder = await hooks.db.write(
        lambda connection: update_endpoint(connection, hooks.profile, "cus_intruder", endpoint.id, enabled=False)
    )
    assert intruder is None
    assert (await hooks.endpoint_row(endpoint.id)).status == "active"


@profiles(lambda profile: "update" in profile.operations)
async def test_a_disabled_endpoint_gets_nothing_and_once_enabled_again_gets_new_events(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500, times=1)
    retried = await hooks.event()
    engine = hooks.engine()
    assert await engine.deliver_due() == 1  # fails: its retry is pending

    disabled = await hooks.update(endpoint.id, enabled=False)
    assert disabled is not None
    assert (disabled.status, disabled.enabled) == ("disabled", False)
    assert await hooks.record() is None, "a disabled endpoint subscribes to nothing"
    hooks.clock.advance(timedelta(hours=1))
    assert await engine.deliver_due() == 0
    assert {row.event_id: row.state for row in await hooks.deliveries(endpoint.id)} == {retried: "canceled"}
    assert (await hooks.endpoint_row(endpoint.id)).disabled_at == START

    enabled = await hooks.update(endpoint.id, enabled=True)
    assert enabled is not None
    assert (enabled.status, enabled.enabled) == ("active", True)
    wanted = await hooks.event()
    assert await engine.deliver_due() == 1

    assert hooks.delivery_ids(hooks.receiver.received(path)) == [retried, wanted]
    states = {row.event_id: row.state for row in await hooks.deliveries(endpoint.id)}
    assert states == {retried: "canceled", wanted: "delivered"}, "nothing of the event recorded while disabled"
    assert (await hooks.endpoint_row(endpoint.id)).disabled_at is None


@profiles(lambda profile: "update" in profile.operations)
async def test_a_failed_endpoint_stays_failed_until_enabled_again_by_the_same_deliverer(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500, times=len(hooks.contract.schedule) + 1)
    await hooks.event()
    engine = hooks.engine()
    await engine.deliver_due()
    for wait in hooks.contract.schedule:
        hooks.clock.advance(wait)
        await engine.deliver_due()
    assert (await hooks.endpoint_row(endpoint.id)).status == hooks.contract.failed_status

    still = await hooks.update(endpoint.id, enabled=False)
    assert still is not None
    assert still.status == hooks.contract.failed_status, "disabling a failed endpoint keeps why it stopped"
    enabled = await hooks.update(endpoint.id, enabled=True)
    assert enabled is not None
    assert enabled.status == "active"
    wanted = await hooks.event()
    assert await engine.deliver_due() == 1  # the member that disabled it sends to it again

    assert hooks.delivery_ids(hooks.receiver.received(path))[-1] == wanted
    assert hooks.receiver.received(path)[-1].verified


@profiles(lambda profile: "test" in profile.operations)
async def test_a_test_delivery_reaches_only_the_named_endpoint(hooks: Hooks) -> None:
    named, path = await hooks.endpoint(events=hooks.types[1:2])  # it need not subscribe to anything in particular
    _, other_path = await hooks.endpoint(events=hooks.types[1:2])
    _, other_owner_path = await hooks.endpoint(events=hooks.types[1:2], owner="cus_someone_else")

    event_id = await hooks.db.write(
        lambda connection: send_test_event(connection, hooks.profile, hooks.owner, named.id, now=hooks.clock())
    )
    assert event_id is not None
    assert await hooks.fan_out(event_id) == 0, "a test event is fanned out to no one else"
    assert await hooks.engine().deliver_due() == 1

    [request] = hooks.receiver.received(path)
    assert request.verified
    assert hooks.delivery_ids([request]) == [event_id]
    data = {"id": named.id, "url": named.url, "events": [hooks.types[1]]}
    assert request.json == hooks.contract.body(event_id, "webhook.test", START_ISO, data)
    assert hooks.receiver.received(other_path) == hooks.receiver.received(other_owner_path) == []


@profiles(lambda profile: "test" in profile.operations)
async def test_a_test_delivery_needs_an_active_endpoint_of_the_owner(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()

    def send_test(owner: str) -> Callable[[Any], str | None]:
        return lambda connection: send_test_event(connection, hooks.profile, owner, endpoint.id)

    assert await hooks.db.write(send_test("cus_intruder")) is None
    await hooks.update(endpoint.id, enabled=False)
    with pytest.raises(EndpointInactive, match="disabled"):
        await hooks.db.write(send_test(hooks.owner))
    assert await hooks.engine().deliver_due() == 0
    assert hooks.receiver.received(path) == []


@pytest.mark.parametrize(
    ("hooks", "operation"),
    [
        (contract, operation)
        for contract in CONTRACTS
        for operation in ("update", "test")
        if operation not in contract.profile.operations
    ],
    indirect=["hooks"],
    ids=lambda value: value.name if isinstance(value, Contract) else value,
)
async def test_an_operation_the_service_does_not_offer_is_refused(hooks: Hooks, operation: str) -> None:
    endpoint, path = await hooks.endpoint()
    calls = {
        "update": lambda connection: update_endpoint(
            connection, hooks.profile, hooks.owner, endpoint.id, enabled=False
        ),
        "test": lambda connection: send_test_event(connection, hooks.profile, hooks.owner, endpoint.id),
    }
    with pytest.raises(OperationNotOffered):
        await hooks.db.write(calls[operation])
    assert await hooks.engine().deliver_due() == 0
    assert (await hooks.endpoint_row(endpoint.id)).status == "active"
    assert hooks.receiver.received(path) == []


# ------------------------------------------------------------------------------------------------- key rotation


def cipher_of(data_dir: Path, *keys: str) -> MultiFernet:
    """The secret-encryption cipher every process builds from SIGNALYARD_SECRET_KEYS."""
    environ = {"SIGNALYARD_DATA_DIR": str(data_dir), "SIGNALYARD_SECRET_KEYS": ",".join(keys)}
    return secrets.secrets_cipher(load(PlatformSettings, environ))


async def test_rotated_keys_still_sign_with_secrets_stored_under_the_old_one(hooks: Hooks, tmp_path: Path) -> None:
    """Keys [A], then a restart with [B, A]: the old endpoint's deliveries are still signed with its secret, a new
    endpoint's secret is stored under B. With A dropped ([B] alone) the old secret cannot be read: its deliveries
    fail without a request (retried on the schedule like any failure) while the new endpoint's go on."""
    a, b = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    hooks.cipher = cipher_of(tmp_path, a)
    old, old_path = await hooks.endpoint()
    hooks.cipher = cipher_of(tmp_path, b, a)
    new, new_path = await hooks.endpoint()
    await hooks.event()

    assert await hooks.engine().deliver_due() == 2
    assert [request.verified for request in hooks.receiver.received(old_path)] == [True]
    assert [request.verified for request in hooks.receiver.received(new_path)] == [True]

    hooks.cipher = cipher_of(tmp_path, b)
    second = await hooks.event()
    assert await hooks.engine().deliver_due() == 2

    assert [request.verified for request in hooks.receiver.received(new_path)] == [True, True]
    assert len(hooks.receiver.received(old_path)) == 1, "nothing was sent with a secret that cannot be read"
    [unsigned] = [row for row in await hooks.deliveries(old.id) if row.event_id == second]
    assert (unsigned.state, unsigned.next_attempt_at) == ("pending", START + timedelta(minutes=1))
    [attempt] = await hooks.rows(ATTEMPTS, delivery_id=unsigned.id)
    assert (attempt.status_code, attempt.error) == (
        None,
        "the signing secret cannot be decrypted with the configured keys",
    )
    assert (await hooks.endpoint_row(new.id)).status == "active"


# -------------------------------------------------------------------------------------------------- concurrency


async def test_a_slow_endpoint_does_not_hold_up_a_fast_one(hooks: Hooks) -> None:
    slow, slow_path = await hooks.endpoint()
    fast, fast_path = await hooks.endpoint()
    hooks.receiver.hold(slow_path)
    for _ in range(12):
        await hooks.event()
    engine = hooks.engine(concurrency=8, per_endpoint=2, claim_batch=4, poll_s=0.05)
    engine.start()
    try:
        await hooks.receiver.wait_for(fast_path, 12)
        assert len(hooks.receiver.received(slow_path)) == 2, "at most per_endpoint at once to the slow endpoint"
    finally:
        hooks.receiver.release(slow_path)
    await hooks.receiver.wait_for(slow_path, 12)
    await engine.aclose()
    assert {row.state for row in await hooks.deliveries(slow.id)} == {"delivered"}
    assert {row.state for row in await hooks.deliveries(fast.id)} == {"delivered"}


# ---------------------------------------------------------------------------------------------------- SSRF guard


async def test_a_host_resolving_to_loopback_is_refused_unless_private_targets_are_allowed(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()  # https://localhost:PORT/...
    await hooks.event()

    assert await hooks.engine(allow_private_targets=False).deliver_due() == 1

    assert hooks.receiver.received(path) == []
    [attempt] = await hooks.attempts(endpoint.id)
    assert attempt.status_code is None
    assert "refused: localhost resolves only to non-public addresses" in attempt.error
    assert "127.0.0.1 (loopback)" in attempt.error
    assert "SIGNALYARD_WEBHOOK_ALLOW_PRIVATE_TARGETS" in attempt.error
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.next_attempt_at) == ("pending", START + timedelta(minutes=1))


async def test_the_dial_goes_to_the_vetted_address_with_tls_and_host_on_the_name(hooks: Hooks) -> None:
    path = hooks.receiver.new_path()
    resolved: list[str] = []

    async def resolve(host: str, port: int) -> list[tuple[str, int]]:
        resolved.append(host)
        return [("127.0.0.1", port)]  # hooks.example.test is in no DNS: only the vetted address can have been dialled

    endpoint, _ = await hooks.endpoint()
    await hooks.move(endpoint.id, hooks.receiver.url(path, host="hooks.example.test"))
    [row] = await hooks.rows(ENDPOINTS, id=endpoint.id)
    hooks.expect(path, hooks.cipher.decrypt(row.secret_encrypted.encode()).decode())
    await hooks.event()

    refused = hooks.engine(allow_private_targets=False, resolve=resolve)
    assert await refused.deliver_due() == 1
    assert hooks.receiver.received(path) == []
    hooks.clock.advance(timedelta(minutes=1))
    allowed = hooks.engine(allow_private_targets=True, resolve=resolve)
    assert await allowed.deliver_due() == 1

    [request] = hooks.receiver.received(path)
    assert request.verified
    assert request.host == f"hooks.example.test:{hooks.receiver.port}"
    assert resolved == ["hooks.example.test", "hooks.example.test"]
    errors = [attempt.error for attempt in await hooks.attempts(endpoint.id)]
    assert errors[0].startswith("ConnectError: refused: hooks.example.test resolves only to non-public addresses")
    assert errors[1] is None


async def test_a_certificate_for_another_name_fails_the_attempt(hooks: Hooks) -> None:
    path = hooks.receiver.new_path()

    async def resolve(host: str, port: int) -> list[tuple[str, int]]:
        return [("127.0.0.1", port)]

    endpoint, _ = await hooks.endpoint()
    await hooks.move(endpoint.id, hooks.receiver.url(path, host="impostor.example.test"))
    await hooks.event()
    await hooks.engine(resolve=resolve).deliver_due()
    [attempt] = await hooks.attempts(endpoint.id)
    assert hooks.receiver.received(path) == []
    assert "CERTIFICATE_VERIFY_FAILED" in attempt.error


async def test_a_url_that_names_a_private_address_itself_is_refused_at_the_dial(hooks: Hooks) -> None:
    """No name to resolve, so no resolver to ask: the socket is made only for a public address."""
    endpoint, path = await hooks.endpoint()
    await hooks.move(endpoint.id, hooks.receiver.url(path, host="127.0.0.1"))
    await hooks.event()

    assert await hooks.engine(allow_private_targets=False).deliver_due() == 1

    assert hooks.receiver.received(path) == []
    [attempt] = await hooks.attempts(endpoint.id)
    assert attempt.status_code is None
    assert attempt.error.startswith("ConnectError: refused: 127.0.0.1 is not a public address (loopback)")


# --------------------------------------------------------------------------------------------------- attempt log


async def test_a_long_response_body_is_truncated_in_the_attempt_log(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 400, "é" + "x" * 5000)
    await hooks.event()
    await hooks.engine().deliver_due()
    [attempt] = await hooks.attempts(endpoint.id)
    assert attempt.status_code == 400
    assert attempt.response_body == ("é" + "x" * 5000).encode()[:1024].decode()
    assert len(attempt.response_body.encode()) == 1024


async def test_a_receiver_that_does_not_answer_within_the_services_timeout_fails_the_attempt(hooks: Hooks) -> None:
    hooks.profile = dataclasses.replace(hooks.profile, timeout_s=0.3)  # the deliverer takes its timeout from here
    endpoint, path = await hooks.endpoint()
    hooks.receiver.hold(path)
    await hooks.event()
    try:
        await hooks.engine().deliver_due()
    finally:
        hooks.receiver.release(path)
    [attempt] = await hooks.attempts(endpoint.id)
    assert attempt.status_code is None
    assert attempt.error == "timed out after 0.3 s"


# ------------------------------------------------------------------------------------------ fan-out and the outbox


@profiles(lambda profile: "update" in profile.operations)
async def test_an_event_no_active_endpoint_subscribes_to_is_recorded_fanned_out_with_nothing_to_announce(
    hooks: Hooks,
) -> None:
    """The fan-out would find nobody to deliver it to: the event is kept (fanned out, no deliveries) and its recorder
    is told there is nothing to announce. An endpoint that subscribes, once it is active, gets the next one."""
    endpoint, path = await hooks.endpoint(events=hooks.types[1:2])
    await hooks.endpoint(owner="cus_someone_else", events=hooks.types[:1])
    assert await hooks.update(endpoint.id, enabled=False) is not None

    assert await hooks.record(event_type=hooks.types[0]) is None  # subscribed by another owner's endpoint only
    assert await hooks.record(event_type=hooks.types[1]) is None  # subscribed by a disabled endpoint only
    kept = await hooks.rows(EVENTS, owner_id=hooks.owner)
    assert sorted((row.type, row.state) for row in kept) == [
        (hooks.types[0], "fanned_out"),
        (hooks.types[1], "fanned_out"),
    ]
    assert await hooks.deliveries(endpoint.id) == []

    assert await hooks.update(endpoint.id, enabled=True) is not None
    wanted = await hooks.event(event_type=hooks.types[1])
    await hooks.engine().deliver_due()
    assert hooks.delivery_ids(hooks.receiver.received(path)) == [wanted]


async def test_a_redelivered_event_message_makes_no_duplicate(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    event_id = await hooks.event()
    assert await hooks.fan_out(event_id, event_id) == 0
    assert await hooks.fan_out(event_id) == 0
    await hooks.engine().deliver_due()
    assert len(hooks.receiver.received(path)) == 1
    assert len(await hooks.deliveries(endpoint.id)) == 1


async def test_fan_out_on_the_broker_with_a_lost_publish_and_a_duplicate(hooks: Hooks, broker_bootstrap: str) -> None:
    """The subscriber turns events into deliveries and wakes the deliverer of its process; the sweeper publishes an
    event whose publish was lost; a duplicate message changes nothing."""
    prefix = f"t{uuid.uuid4().hex[:8]}."
    hooks.clock.now = datetime.now(UTC) - timedelta(minutes=5)  # so the sweeper (on the real clock) finds it stale
    endpoint, path = await hooks.endpoint()
    topic = events_topic(hooks.service, prefix)
    await ensure_topics(broker_bootstrap, [topic], 1)
    engine = hooks.engine(poll_s=30)  # only a wake-up from the fan-out can make it send within the test
    broker = KafkaBroker(broker_bootstrap, serializer=MsgSpecSerializer(), logger=None, linger_ms=LINGER_MS)
    broker.include_router(
        fanout_router(hooks.db, hooks.service, prefix=prefix, on_fanned_out=engine.wake, clock=hooks.clock)
    )
    await broker.start()
    engine.start()
    try:
        lost = await hooks.event(fan_out=False)  # recorded; its publish never happened
        sweeper = Sweeper(hooks.db, events_outbox(hooks.service, prefix), _publisher(broker), after=timedelta(0))
        await sweeper.sweep()
        [first] = await hooks.receiver.wait_for(path, 1, timeout_s=30)
        assert hooks.delivery_ids([first]) == [lost]

        await _publisher(broker)(*event_message(hooks.service, hooks.owner, lost, prefix))  # duplicate
        later = await hooks.event(fan_out=False)
        await _publisher(broker)(*event_message(hooks.service, hooks.owner, later, prefix))
        requests = await hooks.receiver.wait_for(path, 2, timeout_s=30)
    finally:
        await broker.stop()
    assert hooks.delivery_ids(requests) == [lost, later]
    assert len(await hooks.deliveries(endpoint.id)) == 2
    states = await hooks.db.read(
        lambda connection: {
            row.id: row.state
            for row in connection.execute(select(EVENTS.c.id, EVENTS.c.state).where(EVENTS.c.id.in_([lost, later])))
        }
    )
    assert states == {lost: "fanned_out", later: "fanned_out"}
    count = await hooks.db.read(
        lambda connection: connection.execute(
            select(func.count()).select_from(DELIVERIES).where(DELIVERIES.c.event_id == lost)
        ).scalar_one()
    )
    assert count == 1


def _publisher(broker: KafkaBroker) -> Any:
    async def publish(message: Any, topic: str, key: bytes) -> None:
        await broker.publish(message, topic, key=key)

    return publish
