"""The webhook delivery engine on every database under test, delivering to a real HTTPS receiver: signed deliveries,
the whole retry schedule on a fake clock (one event id throughout), disabling, deletion, redelivered fan-out, restarts,
rotation of the keys that encrypt signing secrets, slow endpoints, the SSRF guard and the attempt log.

Every test uses a service name of its own, so its deliverer never sees another test's deliveries."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet, MultiFernet
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker
from sqlalchemy import func, select

from processors.common.outbox import Sweeper
from processors.common.webhooks import (
    BACKOFF_OVER_3_DAYS,
    WebhookDeliverer,
    WebhookProfile,
    events_outbox,
    fanout_router,
)
from signalyard import secrets
from signalyard.settings import PlatformSettings, load
from storage.common import webhooks
from storage.common.db import Database, migrate
from storage.common.webhooks import ATTEMPTS, DELIVERIES, ENDPOINTS, EVENTS
from tests.peers.receiver import WebhookReceiver
from topics.common.admin import ensure_topics
from topics.common.client import LINGER_MS

START = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
async def db(database_url: str) -> AsyncIterator[Database]:
    await asyncio.to_thread(migrate, database_url)
    database = Database(database_url)
    yield database
    await database.dispose()


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
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
    """One test's service: its profile, fake clock, cipher and an owner, on the shared database and receiver."""

    db: Database
    receiver: WebhookReceiver
    service: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:10]}")
    owner: str = field(default_factory=lambda: f"cus_{uuid.uuid4().hex[:12]}")
    clock: FakeClock = field(default_factory=FakeClock)
    cipher: MultiFernet = field(default_factory=lambda: MultiFernet([Fernet(Fernet.generate_key())]))
    engines: list[WebhookDeliverer] = field(default_factory=list)

    @property
    def profile(self) -> WebhookProfile:
        return WebhookProfile(
            service=self.service,
            signature_header="X-Verify-Signature",
            timestamp_header="X-Verify-Timestamp",
            schedule=BACKOFF_OVER_3_DAYS,
        )

    def engine(self, **options: Any) -> WebhookDeliverer:
        defaults: dict[str, Any] = {
            "clock": self.clock,
            "allow_private_targets": True,
            "ca_bundle": self.receiver.ca_bundle,
            "timeout_s": 5,
        }
        engine = WebhookDeliverer(self.db, self.profile, self.cipher, **(defaults | options))
        self.engines.append(engine)
        return engine

    async def endpoint(
        self, path: str | None = None, events: tuple[str, ...] = ("verification.completed",), owner: str | None = None
    ) -> tuple[webhooks.Endpoint, str]:
        """An endpoint at a new receiver path (verified with the endpoint's secret); returns it and the path."""
        path = path or self.receiver.new_path()
        created, secret = await self.db.write(
            lambda connection: webhooks.create_endpoint(
                connection,
                self.cipher,
                service=self.service,
                owner_id=owner or self.owner,
                url=self.receiver.url(path),
                events=events,
                now=self.clock(),
            )
        )
        self.receiver.expect_secret(path, secret)
        return created, path

    async def event(self, data: Any = None, event_type: str = "verification.completed", fan_out: bool = True) -> str:
        """Record an event as a service does (in its transaction) and fan it out as the subscriber does."""
        event_id = await self.db.write(
            lambda connection: webhooks.record_event(
                connection, self.service, self.owner, event_type, data or {"verification_id": "ver_1"}, now=self.clock()
            )
        )
        if fan_out:
            await self.fan_out(event_id)
        return event_id

    async def fan_out(self, *event_ids: str) -> int:
        return await self.db.write(lambda connection: webhooks.fan_out(connection, set(event_ids), now=self.clock()))

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

    async def endpoint_row(self, endpoint_id: str) -> Any:
        [row] = await self.rows(ENDPOINTS, id=endpoint_id)
        return row


@pytest.fixture
async def hooks(db: Database, receiver: WebhookReceiver) -> AsyncIterator[Hooks]:
    setup = Hooks(db, receiver)
    receiver.clock = setup.clock.timestamp
    yield setup
    for engine in setup.engines:
        await engine.aclose(grace_s=1)


# ------------------------------------------------------------------------------------------------------ delivery


async def test_a_delivery_arrives_signed_with_the_event_body(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    event_id = await hooks.event({"verification_id": "ver_123", "status": "completed"})

    assert await hooks.engine().deliver_due() == 1

    [request] = hooks.receiver.received(path)
    assert request.verified
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("signalyard-webhooks/")
    assert request.headers["x-verify-timestamp"] == str(int(START.timestamp()))
    assert request.json == {
        "id": event_id,
        "type": "verification.completed",
        "created_at": "2026-11-23T14:00:00.000000Z",
        "data": {"verification_id": "ver_123", "status": "completed"},
    }
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.attempts, delivery.next_attempt_at) == ("delivered", 1, None)
    [attempt] = await hooks.attempts(endpoint.id)
    assert (attempt.attempt, attempt.status_code, attempt.error, attempt.response_body) == (1, 200, None, "ok")


async def test_the_secret_is_stored_encrypted_beside_its_sha256_never_in_plain(hooks: Hooks) -> None:
    endpoint, _ = await hooks.endpoint()
    row = await hooks.endpoint_row(endpoint.id)
    secret = hooks.cipher.decrypt(row.secret_encrypted.encode()).decode()
    assert secret.startswith("whsec_")
    assert all(secret not in str(value) for value in row)
    assert row.secret_sha256 == hashlib.sha256(secret.encode()).hexdigest()
    assert endpoint.id.startswith("whk_")
    assert (endpoint.status, endpoint.events) == ("active", ["verification.completed"])


async def test_an_event_reaches_only_the_owners_active_subscribed_endpoints(hooks: Hooks) -> None:
    subscribed, path = await hooks.endpoint(events=("verification.completed", "verification.reviewed"))
    other_type, other_type_path = await hooks.endpoint(events=("inspection.submitted",))
    _, other_owner_path = await hooks.endpoint(owner="cus_someone_else")
    deleted, deleted_path = await hooks.endpoint()
    await hooks.db.write(
        lambda connection: webhooks.delete_endpoint(connection, hooks.service, hooks.owner, deleted.id)
    )

    await hooks.event(event_type="verification.reviewed")
    await hooks.engine().deliver_due()

    assert len(hooks.receiver.received(path)) == 1
    for quiet in (other_type_path, other_owner_path, deleted_path):
        assert hooks.receiver.received(quiet) == []
    listed = await hooks.db.read(lambda connection: webhooks.list_endpoints(connection, hooks.service, hooks.owner))
    assert {endpoint.id for endpoint in listed} == {subscribed.id, other_type.id}


# ------------------------------------------------------------------------------------------------------ retries


async def test_500s_are_retried_through_the_whole_schedule_then_the_endpoint_is_disabled(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500, "upstream exploded")
    event_id = await hooks.event()
    engine = hooks.engine()

    assert await engine.deliver_due() == 1
    for wait in BACKOFF_OVER_3_DAYS:
        hooks.clock.advance(wait - timedelta(seconds=1))
        assert await engine.deliver_due() == 0, "nothing is sent before the wait is over"
        hooks.clock.advance(timedelta(seconds=1))
        assert await engine.deliver_due() == 1

    requests = hooks.receiver.received(path)
    assert len(requests) == 10
    assert all(request.verified for request in requests)
    assert {request.json["id"] for request in requests} == {event_id}, "one event id, for receivers to de-duplicate"
    assert len({request.headers["x-verify-timestamp"] for request in requests}) == 10, "each attempt signed anew"
    assert hooks.clock() - START == timedelta(hours=71, minutes=36)
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.attempts, delivery.next_attempt_at) == ("failed", 10, None)
    attempts = await hooks.attempts(endpoint.id)
    assert [a.attempt for a in attempts] == list(range(1, 11))
    assert {(a.status_code, a.error, a.response_body) for a in attempts} == {(500, "HTTP 500", "upstream exploded")}
    row = await hooks.endpoint_row(endpoint.id)
    assert (row.status, row.disabled_at) == ("disabled", hooks.clock())
    listed = await hooks.db.read(  # what GET /api/v1/webhooks shows (it lists through this function)
        lambda connection: webhooks.list_endpoints(connection, hooks.service, hooks.owner)
    )
    assert [(shown.id, shown.status) for shown in listed] == [(endpoint.id, "disabled")]

    # A disabled endpoint gets no new deliveries, and the engine sends nothing more.
    hooks.clock.advance(timedelta(days=7))
    await hooks.event()
    assert await engine.deliver_due() == 0
    assert len(hooks.receiver.received(path)) == 10


async def test_disabling_an_endpoint_cancels_its_other_pending_deliveries(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500)
    first = await hooks.event()
    engine = hooks.engine()
    await engine.deliver_due()
    for wait in BACKOFF_OVER_3_DAYS[:-1]:
        hooks.clock.advance(wait)
        await engine.deliver_due()
    hooks.clock.advance(BACKOFF_OVER_3_DAYS[-1] - timedelta(seconds=30))
    second = await hooks.event()  # its first attempt fails half a minute before the first event's last one
    assert await engine.deliver_due() == 1
    hooks.clock.advance(timedelta(seconds=30))
    assert await engine.deliver_due() == 1  # the first event's last attempt
    hooks.clock.advance(timedelta(days=1))
    assert await engine.deliver_due() == 0

    states = {row.event_id: row.state for row in await hooks.deliveries(endpoint.id)}
    assert states == {first: "failed", second: "canceled"}
    assert len(hooks.receiver.received(path)) == 11


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


async def test_an_endpoint_that_delivered_within_the_failed_window_stays_active(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500)
    first = await hooks.event()
    engine = hooks.engine()
    await engine.deliver_due()
    hooks.clock.advance(timedelta(seconds=30))
    second = await hooks.event()  # due now, while the first event's retry waits for its minute
    hooks.receiver.respond(path, 200, times=1)
    assert await engine.deliver_due() == 1
    hooks.clock.advance(timedelta(seconds=30))
    for wait in BACKOFF_OVER_3_DAYS[1:]:
        assert await engine.deliver_due() == 1
        hooks.clock.advance(wait)
    assert await engine.deliver_due() == 1

    assert len(hooks.receiver.received(path)) == 11
    states = {row.event_id: row.state for row in await hooks.deliveries(endpoint.id)}
    assert states == {first: "failed", second: "delivered"}
    assert (await hooks.endpoint_row(endpoint.id)).status == "active"


async def test_deleting_an_endpoint_drops_its_pending_retries(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.respond(path, 500)
    await hooks.event()
    engine = hooks.engine()
    await engine.deliver_due()

    deleted = await hooks.db.write(
        lambda connection: webhooks.delete_endpoint(connection, hooks.service, hooks.owner, endpoint.id)
    )
    again = await hooks.db.write(
        lambda connection: webhooks.delete_endpoint(connection, hooks.service, hooks.owner, endpoint.id)
    )
    hooks.clock.advance(timedelta(days=4))
    assert await engine.deliver_due() == 0

    assert (deleted, again) == (True, False)
    assert len(hooks.receiver.received(path)) == 1
    [delivery] = await hooks.deliveries(endpoint.id)
    assert (delivery.state, delivery.next_attempt_at) == ("canceled", None)
    listed = await hooks.db.read(lambda connection: webhooks.list_endpoints(connection, hooks.service, hooks.owner))
    assert listed == []


async def test_only_the_owner_deletes_an_endpoint(hooks: Hooks) -> None:
    endpoint, _ = await hooks.endpoint()
    assert not await hooks.db.write(
        lambda connection: webhooks.delete_endpoint(connection, hooks.service, "cus_intruder", endpoint.id)
    )
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


async def test_a_delivery_claimed_by_a_member_that_died_is_sent_after_its_lease(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    await hooks.event()
    engine = hooks.engine(lease=timedelta(minutes=2))
    now = hooks.clock()
    [dead] = await hooks.db.write(  # a member claims it and is never heard from again
        lambda connection: webhooks.claim_due(
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


# ------------------------------------------------------------------------------------------------- key rotation


def cipher_of(data_dir: Path, *keys: str) -> MultiFernet:
    """The secret-encryption cipher every process builds from SIGNALYARD_WEBHOOK_SECRET_KEYS."""
    environ = {"SIGNALYARD_DATA_DIR": str(data_dir), "SIGNALYARD_WEBHOOK_SECRET_KEYS": ",".join(keys)}
    return secrets.webhook_cipher(load(PlatformSettings, environ))


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

    async def resolve(host: str, port: int) -> list[str]:
        resolved.append(host)
        return ["127.0.0.1"]  # hooks.example.test exists in no DNS: only the vetted address can have been dialled

    endpoint, _ = await hooks.endpoint()
    await hooks.db.write(
        lambda connection: connection.execute(
            ENDPOINTS.update()
            .where(ENDPOINTS.c.id == endpoint.id)
            .values(url=hooks.receiver.url(path, host="hooks.example.test"))
        )
    )
    [row] = await hooks.rows(ENDPOINTS, id=endpoint.id)
    hooks.receiver.expect_secret(path, hooks.cipher.decrypt(row.secret_encrypted.encode()).decode())
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

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    endpoint, _ = await hooks.endpoint()
    await hooks.db.write(
        lambda connection: connection.execute(
            ENDPOINTS.update()
            .where(ENDPOINTS.c.id == endpoint.id)
            .values(url=hooks.receiver.url(path, host="impostor.example.test"))
        )
    )
    await hooks.event()
    await hooks.engine(resolve=resolve).deliver_due()
    [attempt] = await hooks.attempts(endpoint.id)
    assert hooks.receiver.received(path) == []
    assert "CERTIFICATE_VERIFY_FAILED" in attempt.error


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


async def test_a_receiver_that_does_not_answer_in_time_fails_the_attempt(hooks: Hooks) -> None:
    endpoint, path = await hooks.endpoint()
    hooks.receiver.hold(path)
    await hooks.event()
    try:
        await hooks.engine(timeout_s=0.3).deliver_due()
    finally:
        hooks.receiver.release(path)
    [attempt] = await hooks.attempts(endpoint.id)
    assert attempt.status_code is None
    assert "timed out" in attempt.error


# ------------------------------------------------------------------------------------------ fan-out and the outbox


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
    topic = webhooks.events_topic(hooks.service, prefix)
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
        assert first.json["id"] == lost

        await _publisher(broker)(*webhooks.event_message(hooks.service, hooks.owner, lost, prefix))  # duplicate
        later = await hooks.event(fan_out=False)
        await _publisher(broker)(*webhooks.event_message(hooks.service, hooks.owner, later, prefix))
        requests = await hooks.receiver.wait_for(path, 2, timeout_s=30)
    finally:
        await broker.stop()
    assert [request.json["id"] for request in requests] == [lost, later]
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
