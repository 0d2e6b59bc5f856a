"""The helpdesk loses nothing: its processors killed mid-stream still deliver every ticket's `ticket.created` once
restarted; the activity log reaches its topic for stream consumers, and an event a relay claimed before dying is
published once its lease ends."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from aiokafka import AIOKafkaConsumer
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import func, insert, select

from gateway.helpdesk.inbound.common import Inbound
from processors.helpdesk.activity import activity_relay
from processors.helpdesk.inbound.handlers import HANDLERS
from processors.helpdesk.inbound.service import Context, InboundProcessor
from processors.helpdesk.outbound import SENDS_AT_ONCE
from signalyard import secrets
from storage.common.blobs import BlobStore
from storage.common.db import Database, migrate
from storage.helpdesk import channels, events, inbound, outbound
from storage.helpdesk.tickets import TICKETS
from storage.helpdesk.workspaces import ORGANIZATIONS
from tests.conftest import running_stack
from tests.helpdesk_stack import HelpdeskStack, helpdesk_settings
from tests.helpers import new_organization, signed_up, until, writer_busy
from tests.peers.receiver import WebhookReceiver, verify_helpdesk
from tests.peers.smtp import SmtpPeer
from topics.helpdesk import ActivityRecorded, HelpdeskTopics, InboundReceived, partition_key

pytestmark = pytest.mark.waits  # started early: tests/conftest.py


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as an operator stops it (its sends in flight may take their timeout to finish), else SIGKILL."""
    process.terminate()
    try:
        process.wait(45)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_processors(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "signalyard.cli", "processors", "helpdesk"],
        env={**os.environ, **env},
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


async def test_processors_killed_mid_stream_every_ticket_is_still_delivered(
    broker_bootstrap: str, database_url: str, tmp_path: Path, plain_receiver: WebhookReceiver
) -> None:
    settings = helpdesk_settings(tmp_path, database_url, None, sweep_after_s=3, sweep_every_s=1)
    env = {
        "SIGNALYARD_KAFKA_BOOTSTRAP": broker_bootstrap,
        "SIGNALYARD_DATABASE_URL": database_url,
        "SIGNALYARD_TOPIC_PREFIX": settings.platform.topic_prefix,
        "SIGNALYARD_SWEEP_AFTER_S": "3",
        "SIGNALYARD_SWEEP_EVERY_S": "1",
        "SIGNALYARD_DATA_DIR": str(tmp_path),
        "SIGNALYARD_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
        "SIGNALYARD_WEBHOOK_LEASE_S": "5",  # the receiver answers at once: no attempt comes near it
    }
    log = tmp_path / "processors.log"
    path = plain_receiver.new_path(secret="kill-s3cret", verify=verify_helpdesk)
    async with (
        running_stack(settings, broker_bootstrap, HelpdeskStack, with_processor=False) as gateway,
        gateway.browser() as browser,
    ):
        key = (await new_organization(browser)).key
        hook = {"url": plain_receiver.url(path), "events": ["ticket.created"], "secret": "kill-s3cret"}
        assert (await gateway.rest(key, "POST", "/webhooks", json=hook)).status_code == 201
        first = start_processors(env, log)
        total = 120
        created: list[str] = []

        async def create(index: int) -> None:
            answer = await gateway.rest(
                key, "POST", "/tickets", json={"subject": f"kill {index}", "customer_email": f"k{index}@example.com"}
            )
            assert answer.status_code == 201, answer.text
            created.append(answer.json()["id"])

        await create(0)

        async def delivered() -> set[str]:
            return {d.json["data"]["ticketId"] for d in plain_receiver.received(path) if d.verified}

        async def joined() -> bool:  # the first processors have joined the fan-out's group
            return len(await delivered()) >= 1

        await until(joined, "the first processors delivered the first ticket", timeout_s=60)

        async def create_all() -> None:
            for chunk in range(1, total, 10):
                await asyncio.gather(*(create(index) for index in range(chunk, min(chunk + 10, total))))

        creating = asyncio.create_task(create_all())
        try:

            async def some_delivered() -> bool:
                return len(await delivered()) >= 15

            await until(some_delivered, "15 tickets delivered", timeout_s=60, every_s=0.02)
            first.send_signal(signal.SIGKILL)  # mid-stream: tickets are still being created and delivered
            first.wait()
            assert not creating.done(), "the kill came too late to interrupt anything"
            await creating
            second = start_processors(env, log)
            try:

                async def all_delivered() -> bool:
                    return await delivered() == set(created)

                # A delivery the killed member had leased waits out its lease (5 s here, 90 s by default), on a
                # machine busy with other workers.
                await until(all_delivered, f"all {total} tickets delivered", timeout_s=120)
            finally:
                stop(second)
        finally:
            if first.poll() is None:
                first.kill()
            creating.cancel()
    assert len(created) == total
    assert all(d.verified for d in plain_receiver.received(path))


async def test_stream_consumers_read_the_activity_log_from_its_topic(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as organization:
        organization_id, key = organization.id, organization.key
    consumer = AIOKafkaConsumer(
        helpdesk_stack.topics.activity,
        bootstrap_servers=helpdesk_stack.platform.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
    )
    await consumer.start()
    try:
        created = await helpdesk_stack.rest(
            key, "POST", "/tickets", json={"subject": "Stream me", "customer_email": "s@example.com", "tags": ["vip"]}
        )
        ticket_id = created.json()["id"]
        seen: list[ActivityRecorded] = []
        decode = msgspec.json.Decoder(ActivityRecorded).decode

        async def both_seen() -> bool:
            batches = await consumer.getmany(timeout_ms=200)
            seen.extend(decode(record.value) for records in batches.values() for record in records)
            return {e.event_type for e in seen if e.aggregate_id == ticket_id} == {"created", "tagged"}

        await until(both_seen, "the ticket's created and tagged events on the topic", every_s=0)
    finally:
        await consumer.stop()
    mine = [e for e in seen if e.aggregate_id == ticket_id]
    created_event = next(e for e in mine if e.event_type == "created")
    assert created_event.aggregate_type == "ticket"
    assert created_event.event_data == {"subject": "Stream me", "priority": "normal", "channel": "api"}
    assert (created_event.organization_id, created_event.actor_id) == (organization_id, None)
    assert datetime.fromisoformat(created_event.created_at).tzinfo is not None


async def test_messages_published_together_reach_the_partition_publish_chooses_for_their_key_in_order(
    helpdesk_stack: HelpdeskStack,
) -> None:
    """The activity relay publishes a pass's rows together (Platform.publish_together): each key's messages land on
    the partition a lone `publish` of that key lands on, in the order given, as the same JSON with the same
    content-type header."""
    platform, topic = helpdesk_stack.platform, helpdesk_stack.topics.activity
    organizations = [str(uuid.uuid4()) for _ in range(8)]

    def recorded(organization_id: str, n: int) -> ActivityRecorded:
        return ActivityRecorded(
            id=str(uuid.uuid4()),
            organization_id=organization_id,
            aggregate_type="organization",
            aggregate_id=organization_id,
            event_type="updated",
            event_data={"n": n},
            actor_id=None,
            created_at=datetime.now(UTC).isoformat(),
        )

    for organization_id in organizations:
        await platform.publish(recorded(organization_id, 0), topic, partition_key(organization_id))
    together = [recorded(organization_id, n) for n in range(1, 4) for organization_id in organizations]
    await platform.publish_together([(message, topic, partition_key(message.organization_id)) for message in together])

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=platform.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
    )
    await consumer.start()
    seen: dict[str, list[tuple[int, int, bytes | None]]] = {organization_id: [] for organization_id in organizations}
    decode = msgspec.json.Decoder(ActivityRecorded).decode
    try:

        async def all_seen() -> bool:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                for record in records:
                    message = decode(record.value)
                    if message.organization_id in seen:
                        content_type = dict(record.headers).get("content-type")
                        seen[message.organization_id].append((record.partition, message.event_data["n"], content_type))
            return all(len(found) == 4 for found in seen.values())

        await until(all_seen, "every key's four messages on the topic", every_s=0)
    finally:
        await consumer.stop()
    for found in seen.values():
        assert len({partition for partition, _, _ in found}) == 1, "one partition per key"
        assert [n for _, n, _ in found] == [0, 1, 2, 3], "in order"
        assert {content_type for _, _, content_type in found} == {b"application/json"}
    assert len({found[0][0] for found in seen.values()}) > 1, "the keys spread over the partitions"


async def test_a_relay_that_died_holding_the_lease_leaves_its_events_to_another_once_the_lease_ends(
    tmp_path: Path,
) -> None:
    """On a database of its own: no other relay may take the event."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'relay.db'}"
    await asyncio.to_thread(migrate, url)
    db = Database(url)
    try:
        await relay_after_a_death(db)
    finally:
        await db.dispose()


async def relay_after_a_death(db: Database) -> None:
    organization = str(uuid.uuid4())
    event = events.row(
        organization,
        ("organization", organization),
        "updated",
        {"name": "Relay test"},
        actor_id=None,
        now=datetime.now(UTC),
    )
    await db.write(events.record_rows, [event])
    event_id = event["id"]
    topics = HelpdeskTopics(f"t{uuid.uuid4().hex[:8]}.")
    clock = [datetime.now(UTC) + timedelta(seconds=1)]
    published: list[Any] = []

    async def broker_down(messages: Sequence[tuple[msgspec.Struct, str, bytes]]) -> None:
        raise ConnectionError("the broker is unreachable")

    async def broker_up(messages: Sequence[tuple[msgspec.Struct, str, bytes]]) -> None:
        published.extend(message for message, _, _ in messages)

    dying = activity_relay(db, topics, broker_down)
    dying.clock = lambda: clock[0]
    assert await dying.relay() == 0  # it took the lease, then could not publish

    living = activity_relay(db, topics, broker_up)
    living.clock = lambda: clock[0]
    assert await living.relay() == 0, "the lease holds for its time"
    clock[0] += timedelta(seconds=31)
    assert await living.relay() == 1
    assert [message.id for message in published] == [event_id]
    state = select(events.EVENTS.c.state).where(events.EVENTS.c.id == event_id)
    assert await db.read(lambda connection: connection.scalar(state)) == "published"
    clock[0] += timedelta(minutes=5)
    assert await living.relay() == 0, "a published event is not published again"


async def test_relays_side_by_side_publish_each_event_once_in_order_and_one_that_stops_hands_over_at_once(
    tmp_path: Path,
) -> None:
    """Two relays on one outbox, passes at once: each event reaches the broker once, in the order of the log; a relay
    that stops gives its lease up, so the other publishes what comes next without waiting for the lease to end."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'relay.db'}"
    await asyncio.to_thread(migrate, url)
    db = Database(url)
    published: list[str] = []

    async def broker_up(messages: Sequence[tuple[msgspec.Struct, str, bytes]]) -> None:
        await asyncio.sleep(0)  # the other relay's pass runs meanwhile
        published.extend(cast(ActivityRecorded, message).id for message, _, _ in messages)

    organization, MS = str(uuid.uuid4()), timedelta(milliseconds=1)

    async def logged(count: int) -> list[str]:
        at = datetime.now(UTC) - timedelta(seconds=1)
        rows = [
            events.row(organization, ("organization", organization), "updated", {}, actor_id=None, now=at + n * MS)
            for n in range(count)
        ]
        await db.write(events.record_rows, rows)
        return [row["id"] for row in rows]

    topics = HelpdeskTopics(f"t{uuid.uuid4().hex[:8]}.")
    first, second = activity_relay(db, topics, broker_up), activity_relay(db, topics, broker_up)
    first.batch = second.batch = 3
    try:
        written = await logged(10)
        counts = await asyncio.gather(first.relay(), second.relay())
        assert sorted(counts) == [0, 10]
        assert published == written
        holder, other = (first, second) if counts[0] else (second, first)

        await holder.release()
        written += await logged(2)
        assert await other.relay() == 2
        assert published == written
    finally:
        await db.dispose()


async def test_an_idle_relays_passes_only_read(tmp_path: Path) -> None:
    """With nothing to publish, a relay's pass asks (a read) and claims nothing (no write): it goes on while another
    process holds SQLite's write lock, where a claim would wait for it."""
    path = tmp_path / "relay.db"
    url = f"sqlite+aiosqlite:///{path}"
    await asyncio.to_thread(migrate, url)
    db = Database(url)
    published: list[Any] = []

    async def broker_up(messages: Sequence[tuple[msgspec.Struct, str, bytes]]) -> None:
        published.extend(message for message, _, _ in messages)

    try:
        relay = activity_relay(db, HelpdeskTopics(f"t{uuid.uuid4().hex[:8]}."), broker_up)
        with writer_busy(str(path)):
            assert await asyncio.wait_for(relay.relay(), timeout=10) == 0
        organization = str(uuid.uuid4())
        event = events.row(
            organization, ("organization", organization), "updated", {}, actor_id=None, now=relay.clock()
        )
        await db.write(events.record_rows, [event])
        relay.clock = lambda: event["created_at"] + timedelta(seconds=1)
        assert await relay.relay() == 1
        assert [message.id for message in published] == [event["id"]]
    finally:
        await db.dispose()


async def test_inbound_processors_killed_mid_stream_every_stored_mail_becomes_exactly_one_ticket_or_reply(
    broker_bootstrap: str, database_url: str, tmp_path: Path
) -> None:
    """Mails forwarded while the inbound processors are killed with SIGKILL and started again: every stored event is
    processed once; each first mail is one ticket, each reply one conversation on its ticket, none twice."""
    settings = helpdesk_settings(tmp_path, database_url, None, sweep_after_s=3, sweep_every_s=1)
    env = {
        "SIGNALYARD_KAFKA_BOOTSTRAP": broker_bootstrap,
        "SIGNALYARD_DATABASE_URL": database_url,
        "SIGNALYARD_TOPIC_PREFIX": settings.platform.topic_prefix,
        "SIGNALYARD_SWEEP_AFTER_S": "3",
        "SIGNALYARD_SWEEP_EVERY_S": "1",
        "SIGNALYARD_DATA_DIR": str(tmp_path),
    }
    log = tmp_path / "processors.log"
    async with (
        running_stack(settings, broker_bootstrap, HelpdeskStack, with_processor=False) as gateway,
        gateway.browser() as browser,
    ):
        organization = (await browser.sign_up())["organization"]["id"]
        mailbox = f"kill-{uuid.uuid4().hex[:8]}@acme.example"
        channel, generated = await gateway.db.write(
            channels.open_channel,
            secrets.secrets_cipher(settings.platform),
            organization,
            kind="email",
            name="Kill test",
            addresses=[mailbox],
            given={},
            settings={},
            now=datetime.now(UTC),
        )
        headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": generated["forwarder_secret"]}
        senders = 40

        def mail(sender: int, reply: bool) -> bytes:
            first_id = f"first-{sender}@customers.example"
            lines = [
                f"From: customer{sender}@customers.example",
                f"To: {mailbox}",
                f"Subject: {'Re: ' if reply else ''}Order {sender}",
                f"Message-ID: <{'reply' if reply else 'first'}-{sender}@customers.example>",
                *([f"In-Reply-To: <{first_id}>"] if reply else []),
                "",
                f"{'More' if reply else 'Help'} about order {sender}",
            ]
            return "\r\n".join(lines).encode()

        async def forward(sender: int, reply: bool) -> None:
            answer = await gateway.client.post(
                "/api/webhooks/inbound-email", content=mail(sender, reply), headers=headers
            )
            assert answer.status_code == 200, answer.text

        async def states() -> dict[str, int]:
            statement = (
                select(inbound.EVENTS.c.state, func.count())
                .where(inbound.EVENTS.c.channel_id == channel.id)
                .group_by(inbound.EVENTS.c.state)
            )
            return await gateway.db.read(lambda connection: dict(connection.execute(statement).all()))

        first = start_processors(env, log)
        await forward(0, reply=False)

        async def joined() -> bool:
            return (await states()).get("processed", 0) >= 1

        await until(joined, "the first processors processed the first mail", timeout_s=60)

        async def send_all() -> None:
            for sender in range(1, senders):
                await forward(sender, reply=False)
            for sender in range(senders):
                await forward(sender, reply=True)

        sending = asyncio.create_task(send_all())
        try:

            async def some_processed() -> bool:
                return (await states()).get("processed", 0) >= 10

            await until(some_processed, "10 mails processed", timeout_s=60, every_s=0.02)
            first.send_signal(signal.SIGKILL)
            first.wait()
            assert not sending.done(), "the kill came too late to interrupt anything"
            await sending
            second = start_processors(env, log)
            try:

                async def all_processed() -> bool:
                    return await states() == {"processed": 2 * senders}

                await until(all_processed, f"all {2 * senders} mails processed", timeout_s=120)
            finally:
                stop(second)
        finally:
            if first.poll() is None:
                first.kill()
            sending.cancel()
        key = await browser.api_key("*")
        listed = await gateway.rest(key, "GET", "/tickets", params={"limit": 100})
        tickets = listed.json()["data"]
        assert len(tickets) == senders, "each first mail is one ticket, none twice"
        for ticket in tickets:
            replies = await gateway.rest(key, "GET", f"/tickets/{ticket['id']}/conversations")
            assert len(replies.json()["data"]) == 2, ticket["subject"]


async def test_an_inbound_event_whose_attachment_the_blob_store_refuses_stays_pending_until_it_is_taken(
    tmp_path: Path,
) -> None:
    """A mail whose attachment cannot be stored (the blob store down) is not recorded as failed: the batch is handed
    back for redelivery and the event stays pending; once the store takes it, the mail becomes its ticket. On a
    database of its own: no stack's processors may take the event."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'inbound.db'}"
    await asyncio.to_thread(migrate, url)
    db = Database(url)
    organization, channel = str(uuid.uuid4()), str(uuid.uuid4())
    mail = (
        b"From: Ana <ana@customers.example>\r\nTo: help@acme.example\r\nSubject: The invoice\r\n"
        b"Message-ID: <blob-down@customers.example>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nAttached.\r\n'
        b'--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename="invoice.pdf"\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n"
    )
    event = inbound.Received(
        id=str(uuid.uuid4()),
        organization_id=organization,
        channel_id=channel,
        provider="email_d",
        dedup_key="blob-down@customers.example",
        content_type="message/rfc822",
        body=mail,
        partition_key=f"{channel}:ana@customers.example",
        created_at=datetime.now(UTC),
        details={"envelope_to": "help@acme.example"},
    )

    class Store:
        def __init__(self) -> None:
            self.down = True
            self.kept: dict[str, bytes] = {}

        async def put(self, key: str, data: bytes, content_type: str) -> None:
            if self.down:
                raise ConnectionError("the blob store is unreachable")
            self.kept[key] = data

    store = Store()
    processor = InboundProcessor(Context(db, cast(BlobStore, store)), HANDLERS, lambda _o, _e: asyncio.sleep(0))
    received = InboundReceived(event_id=event.id, organization_id=organization, channel_id=channel, provider="email_d")
    organization_row = {
        "id": organization,
        "name": "Acme",
        "slug": "acme",
        "plan": "free",
        "created_at": event.created_at,
    }
    try:
        await db.write(lambda connection: connection.execute(insert(ORGANIZATIONS).values(organization_row)))
        assert await db.write(inbound.store, [event]) == {event.id}
        with pytest.raises(OSError, match="blob store"):
            await processor.handle_batch([received])
        (stored,) = (await db.read(inbound.load, [event.id])).values()
        assert (stored.state, stored.outcome) == (inbound.PENDING, None)

        store.down = False
        await processor.handle_batch([received])  # the redelivery
        (stored,) = (await db.read(inbound.load, [event.id])).values()
        assert (stored.state, stored.outcome) == (inbound.PROCESSED, "new ticket")
        assert list(store.kept.values()) == [b"%PDF-1.4\n"]
    finally:
        await db.dispose()


async def test_events_two_members_handle_at_once_each_become_exactly_one_ticket(tmp_path: Path) -> None:
    """Two members given the same batch at once (a rebalance, or the sweeper's re-publish of an event under way): both
    load the events while they are pending and apply them; the one that settles second finds them processed, its
    transaction is undone, and it ends quietly. Each mail is one ticket, numbered once. On a database of its own: no
    stack's processors may take the events."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'members.db'}"
    await asyncio.to_thread(migrate, url)
    first, second = Database(url), Database(url)  # as two processes
    organization, channel = str(uuid.uuid4()), str(uuid.uuid4())
    now = datetime.now(UTC)
    events_ = [
        inbound.Received(
            id=str(uuid.uuid4()),
            organization_id=organization,
            channel_id=channel,
            provider="email_d",
            dedup_key=f"m{n}@customers.example",
            content_type="message/rfc822",
            body=(
                # no Message-ID: the second member cannot find the first one's conversation by it
                f"From: Customer {n} <c{n}@customers.example>\r\nTo: help@acme.example\r\nSubject: Order {n}\r\n"
                f"\r\nWhere is order {n}?\r\n"
            ).encode(),
            partition_key=f"{channel}:c{n}@customers.example",
            created_at=now,
            details={"envelope_to": "help@acme.example"},
        )
        for n in range(6)
    ]
    batch = [
        InboundReceived(event_id=event.id, organization_id=organization, channel_id=channel, provider="email_d")
        for event in events_
    ]
    organization_row = {"id": organization, "name": "Acme", "slug": "acme", "plan": "free", "created_at": now}
    announced: list[str] = []

    async def announce(_organization_id: str, event_id: str) -> None:
        announced.append(event_id)

    members = [InboundProcessor(Context(db, cast(BlobStore, None)), HANDLERS, announce) for db in (first, second)]
    try:
        await first.write(lambda connection: connection.execute(insert(ORGANIZATIONS).values(organization_row)))
        assert await first.write(inbound.store, events_) == {event.id for event in events_}
        await asyncio.gather(*(member.handle_batch(batch) for member in members))

        stored = await first.read(inbound.load, [event.id for event in events_])
        assert {(row.state, row.outcome) for row in stored.values()} == {(inbound.PROCESSED, "new ticket")}
        numbers = await first.read(
            lambda connection: sorted(
                connection.execute(select(TICKETS.c.number).where(TICKETS.c.organization_id == organization)).scalars()
            )
        )
        assert numbers == [1, 2, 3, 4, 5, 6], "one ticket per mail, no number given twice"
        assert sorted(row.ticket_id for row in stored.values()) == sorted(
            await first.read(
                lambda connection: list(
                    connection.execute(select(TICKETS.c.id).where(TICKETS.c.organization_id == organization)).scalars()
                )
            )
        )
    finally:
        await first.dispose()
        await second.dispose()


async def test_an_inbound_call_is_answered_once_its_event_is_stored_while_the_broker_has_not_acknowledged_it(
    tmp_path: Path,
) -> None:
    """A provider's call is answered once its event is stored (the outbox), not once the broker acknowledges the
    publish: a broker that hangs does not hold the call. The publish goes on after the answer, and the server's
    shutdown waits for it."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'accept.db'}"
    await asyncio.to_thread(migrate, url)
    db = Database(url)
    organization, channel = str(uuid.uuid4()), str(uuid.uuid4())
    acknowledged = asyncio.Event()
    published: list[str] = []

    async def publish(messages: Sequence[tuple[InboundReceived, bytes]]) -> None:
        await acknowledged.wait()  # the broker takes its time
        published.extend(message.event_id for message, _ in messages)

    gateway = Inbound(db, MultiFernet([Fernet(Fernet.generate_key())]), publish)
    routed = channels.Routed(channel_id=channel, organization_id=organization, kind="email", settings={}, secrets={})
    now = datetime.now(UTC)
    organization_row = {"id": organization, "name": "Acme", "slug": "acme", "plan": "free", "created_at": now}
    try:
        await db.write(lambda connection: connection.execute(insert(ORGANIZATIONS).values(organization_row)))
        async with asyncio.timeout(5):
            stored = await gateway.accept(
                routed,
                "email_d",
                dedup_key="hanging-broker@customers.example",
                body=b"From: ana@customers.example\r\nTo: help@acme.example\r\n\r\nHello\r\n",
                content_type="message/rfc822",
                partition_key=f"{channel}:ana@customers.example",
            )
        assert stored
        (record,), _ = await db.read(
            inbound.listing, organization, channel_id=None, classification=None, limit=10, cursor=None
        )
        assert (record.state, published) == (inbound.PENDING, [])

        acknowledged.set()
        await gateway.aclose()
        assert published == [record.id]
    finally:
        await db.dispose()


async def test_the_reply_sender_killed_mid_stream_sends_every_reply_repeating_at_most_its_sends_in_flight(
    broker_bootstrap: str, database_url: str, tmp_path: Path
) -> None:
    """Replies posted while the processors (and their reply sender) are killed with SIGKILL and started again: every
    reply reaches the SMTP server and is recorded sent; a mail the server accepted before the kill and the sender had
    not recorded is sent again after the lease, and those repeats are counted: at most SENDS_AT_ONCE."""
    settings = helpdesk_settings(tmp_path, database_url, None)
    total = 120
    with SmtpPeer() as smtp:
        env = {
            "SIGNALYARD_KAFKA_BOOTSTRAP": broker_bootstrap,
            "SIGNALYARD_DATABASE_URL": database_url,
            "SIGNALYARD_TOPIC_PREFIX": settings.platform.topic_prefix,
            "SIGNALYARD_DATA_DIR": str(tmp_path),
            "SIGNALYARD_HELPDESK_SMTP_URL": smtp.url,
            "SIGNALYARD_HELPDESK_REPLY_LEASE_S": "3",
        }
        log = tmp_path / "processors.log"
        async with (
            running_stack(settings, broker_bootstrap, HelpdeskStack, with_processor=False) as gateway,
            gateway.browser() as browser,
        ):
            organization = await new_organization(browser)
            cipher = secrets.secrets_cipher(gateway.settings.platform)
            await gateway.db.write(
                channels.create,
                cipher,
                organization.id,
                kind="email",
                name="Support",
                addresses=[("email", f"help-{uuid.uuid4().hex[:8]}@acme.example")],
                secrets={},
                now=datetime.now(UTC),
            )
            made = await gateway.rest(
                organization.key, "POST", "/tickets", json={"subject": "Kill", "customer_email": "k@example.com"}
            )
            assert made.status_code == 201, made.text
            path = f"/tickets/{made.json()['id']}/conversations"
            sent_as: list[str] = []

            async def reply(index: int) -> None:
                answer = await gateway.rest(organization.key, "POST", path, json={"body": f"reply {index}"})
                assert answer.status_code == 201, answer.text
                sent_as.append(answer.json()["delivery"]["provider_message_id"])

            async def reply_all() -> None:
                for chunk in range(1, total, 4):
                    await asyncio.gather(*(reply(index) for index in range(chunk, min(chunk + 4, total))))
                    await asyncio.sleep(0.02)

            def received() -> Counter[str]:
                return Counter(mail.message["Message-ID"].strip("<>") for mail in list(smtp.received))

            first = start_processors(env, log)
            await reply(0)
            await until(lambda: len(smtp.received) >= 1, "the first processors mailed the first reply", timeout_s=60)
            replying = asyncio.create_task(reply_all())
            try:
                await until(lambda: len(smtp.received) >= 16, "16 replies mailed", timeout_s=60, every_s=0.01)
                first.send_signal(signal.SIGKILL)  # mid-stream: replies are still being posted and sent
                first.wait()
                assert not replying.done(), "the kill came too late to interrupt anything"
                await replying
                second = start_processors(env, log)
                try:
                    await until(lambda: set(received()) == set(sent_as), f"all {total} replies mailed", timeout_s=120)

                    def states(connection: Any) -> Counter[str]:
                        rows = connection.execute(
                            select(outbound.OUTBOUND.c.state).where(
                                outbound.OUTBOUND.c.organization_id == organization.id
                            )
                        )
                        return Counter(rows.scalars())

                    async def recorded() -> Counter[str] | None:
                        found = await gateway.db.read(states)
                        return found if found == Counter({"sent": total}) else None

                    await until(recorded, "every reply recorded sent", timeout_s=60)
                finally:
                    stop(second)
            finally:
                if first.poll() is None:
                    first.kill()
                replying.cancel()
    repeats = sum(count - 1 for count in received().values())
    print(f"reply sender killed once: {total} replies, {repeats} mailed twice (at most {SENDS_AT_ONCE})")
    assert len(sent_as) == total
    assert repeats <= SENDS_AT_ONCE
