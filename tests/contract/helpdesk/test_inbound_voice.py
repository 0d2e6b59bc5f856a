"""Section 4.6, the voice provider (`POST /api/webhooks/voice`, Dialpad's shape) with the voicemail sequence of
section 3, through the running stack: a signed event is stored before the 200, a retry stores nothing new, a bad
signature or a malformed event is refused and stores nothing; call events update the call's record; `voicemail`,
`voicemail_uploaded` and `transcription` make one ticket with the audio and the transcription in every order they may
arrive, redelivered or not (the recording fetched from a local server and kept with its URL); and the provider's SMS
events thread as SMS do.

`x-voice-signature` signs no timestamp, so there is no replay window to test: a replayed event is a duplicate of its
call id and state, acknowledged, and stores nothing new."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.voice import VOICEMAIL_WAIT, make_waiting_voicemails
from storage.helpdesk import calls
from storage.helpdesk.inbound import EVENTS
from tests.contract.helpdesk.inbound_desk import Desk, desk, unique_number
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.media import MediaPeer
from topics.helpdesk import InboundReceived

PATH = "/api/webhooks/voice"
RECORDING = "https://dialpad.example/r/voicemail/{call_id}.mp3"
AUDIO = b"ID3 a voicemail"


@pytest.fixture(scope="module")
def recordings() -> Iterator[MediaPeer]:
    """The voice provider's recordings, which the processors fetch (no credentials)."""
    with MediaPeer(account_sid="AC" + "0" * 32, auth_token="unused").serving() as peer:
        yield peer


def recording_of(attachments: list[dict[str, Any]]) -> dict[str, Any]:
    """The voicemail's attachment: its recording, fetched and kept beside its URL."""
    [recording] = attachments
    assert recording["blob"]
    return {name: recording[name] for name in ("url", "type", "name", "content_type", "size")}


@dataclass
class Phone:
    """A voice channel: its number and webhook secret."""

    desk: Desk
    number: str
    secret: str
    recordings: MediaPeer | None = None

    @property
    def stack(self) -> HelpdeskStack:
        return self.desk.stack

    async def post(self, event: dict[str, Any], *, secret: str | None = None) -> httpx.Response:
        body = json.dumps(event).encode()
        signature = hmac.new((secret or self.secret).encode(), body, hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/json", "x-voice-signature": signature}
        return await self.stack.client.post(PATH, content=body, headers=headers)

    def call(self, call_id: str, state: str, caller: str = "+15550009999", **more: Any) -> dict[str, Any]:
        now = int(time.time() * 1000)
        return {
            "call_id": call_id,
            "state": state,
            "direction": "inbound",
            "target": {"phone_number": self.number, "name": "Support line"},
            "contact": {"phone_number": caller, "name": "Grace Hopper"},
            "started_at": now - 60_000,
            "answered_at": None,
            "duration": 41.5,
        } | more

    def recording(self, call_id: str) -> str:
        """The URL of the call's recording (at the recordings' server, when the line has one)."""
        return (
            RECORDING.format(call_id=call_id)
            if self.recordings is None
            else f"{self.recordings.base_url}/voicemail/{call_id}.mp3"
        )

    def voicemail(self, call_id: str, caller: str = "+15550009999") -> dict[str, dict[str, Any]]:
        """The voicemail sequence of one call, by state."""
        if self.recordings is not None:
            self.recordings.public(f"/voicemail/{call_id}.mp3", AUDIO, "audio/mpeg")
        return {
            "voicemail": self.call(call_id, "voicemail", caller),
            "voicemail_uploaded": self.call(
                call_id, "voicemail_uploaded", caller, voicemail_link=self.recording(call_id)
            ),
            "transcription": self.call(
                call_id, "transcription", caller, transcription_text=f"Hi, this is Grace about call {call_id}."
            ),
        }

    def sms(self, sender: str, text: str, **more: Any) -> dict[str, Any]:
        return {
            "event_type": "sms",
            "id": str(uuid.uuid4().int)[:16],
            "direction": "inbound",
            "from_number": sender,
            "to_number": [self.number],
            "text": text,
            "timestamp": int(time.time() * 1000),
        } | more


async def phone(stack: HelpdeskStack, recordings: MediaPeer | None = None) -> Phone:
    line = Phone(await desk(stack), unique_number(), f"whsec-{uuid.uuid4().hex}", recordings)
    await line.desk.open_channel("voice", [("voice_number", line.number)], {"webhook_secret": line.secret})
    return line


def call_id() -> str:
    return str(uuid.uuid4().int)[:16]


async def test_a_signed_call_event_is_stored_and_updates_the_call_s_record(helpdesk_stack: HelpdeskStack) -> None:
    line = await phone(helpdesk_stack)
    call = call_id()
    for state in ("ringing", "hangup", "connected"):  # out of order: the record keeps the furthest state
        answer = await line.post(line.call(call, state))
        assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    events = await line.desk.processed(3)
    assert sorted(event["dedup_key"] for event in events) == sorted(
        f"call:{call}:{s}" for s in ("ringing", "hangup", "connected")
    )
    assert {event["classification"] for event in events} == {"call"}
    record = await helpdesk_stack.db.read(calls.of_call, line.desk.channel_id, call)
    assert record is not None
    assert (record.state, record.details["states"]) == ("hangup", ["ringing", "connected", "hangup"])
    assert (record.details["contact"]["name"], record.details["duration"], record.ticket_id) == (
        "Grace Hopper",
        41.5,
        None,
    )
    assert await line.desk.tickets() == []


async def test_a_bad_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    line = await phone(helpdesk_stack)
    wrong = await line.post(line.call(call_id(), "ringing"), secret="not-the-webhook-secret")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    body = json.dumps(line.call(call_id(), "ringing")).encode()
    unsigned = await helpdesk_stack.client.post(PATH, content=body, headers={"Content-Type": "application/json"})
    assert unsigned.status_code == 401
    wrong_sms = await line.post(line.sms(unique_number(), "Hi"), secret="not-the-webhook-secret")
    assert wrong_sms.status_code == 401
    assert await line.desk.stored() == 0


async def test_a_retry_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    line = await phone(helpdesk_stack)
    event = line.call(call_id(), "ringing")
    assert (await line.post(event)).json() == {"status": "accepted"}
    assert (await line.post(event)).json() == {"status": "duplicate"}
    sms = line.sms(unique_number(), "Hello")
    assert (await line.post(sms)).json() == {"status": "accepted"}
    assert (await line.post(sms)).json() == {"status": "duplicate"}
    assert await line.desk.stored() == 2


async def test_a_malformed_event_is_a_clear_4xx_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    line = await phone(helpdesk_stack)
    headers = {"Content-Type": "application/json", "x-voice-signature": "00"}
    no_json = await helpdesk_stack.client.post(PATH, content=b"[1, 2", headers=headers)
    assert (no_json.status_code, no_json.json()["error"]["code"]) == (400, "invalid_request")
    no_call_id = line.call("", "ringing")
    assert (await line.post(no_call_id)).status_code == 400
    no_state = line.call(call_id(), "")
    assert (await line.post(no_state)).status_code == 400
    no_target = line.call(call_id(), "ringing")
    del no_target["target"]
    assert (await line.post(no_target)).status_code == 400
    assert (await line.post(line.sms(unique_number(), "Hi", to_number=[]))).status_code == 400
    elsewhere = line.call(call_id(), "ringing", target={"phone_number": unique_number()})
    assert (await line.post(elsewhere)).status_code == 404
    as_form = await helpdesk_stack.client.post(PATH, data={"call_id": "1"})
    assert as_form.status_code == 415
    assert await line.desk.stored() == 0


async def test_the_voicemail_sequence_makes_one_ticket_with_audio_and_transcription_in_every_order(
    helpdesk_stack: HelpdeskStack, recordings: MediaPeer
) -> None:
    line = await phone(helpdesk_stack, recordings)
    orders = list(itertools.permutations(("voicemail", "voicemail_uploaded", "transcription")))
    # and a redelivered event within the sequence, and after it
    orders += [("voicemail", "voicemail", "voicemail_uploaded", "transcription", "transcription")]
    orders += [("transcription", "voicemail_uploaded", "transcription", "voicemail", "voicemail_uploaded")]
    sequences = {call_id(): order for order in orders}

    async def deliver(call: str, order: tuple[str, ...]) -> list[str]:
        events = line.voicemail(call, caller="+15550001234")
        return [(await line.post(events[state])).json()["status"] for state in order]

    answers = await asyncio.gather(*(deliver(call, order) for call, order in sequences.items()))
    for order, statuses in zip(sequences.values(), answers, strict=True):
        assert statuses == ["duplicate" if order[:i].count(state) else "accepted" for i, state in enumerate(order)]
    events = await line.desk.processed(3 * len(sequences))
    assert len(events) == 3 * len(sequences)

    tickets = await line.desk.tickets()
    assert len(tickets) == len(sequences)
    made = {event["dedup_key"].split(":")[1]: event["ticket_id"] for event in events if event["ticket_id"]}
    assert set(made) == set(sequences)  # one ticket per call, made by exactly one of its events
    assert sum(1 for event in events if event["outcome"].startswith("new ticket: voicemail")) == len(sequences)
    for call, ticket_id in made.items():
        ticket = await line.desk.ticket(ticket_id)
        assert (ticket["subject"], ticket["channel"], ticket["tags"]) == (
            "Voicemail from Grace Hopper",
            "voice",
            ["voicemail"],
        )
        [message] = await line.desk.conversations(ticket_id)
        assert message.body == f"Hi, this is Grace about call {call}."
        assert recording_of(message.attachments) == {
            "url": line.recording(call),
            "type": "voicemail",
            "name": f"{call}.mp3",
            "content_type": "audio/mpeg",
            "size": len(AUDIO),
        }
        record = await helpdesk_stack.db.read(calls.of_call, line.desk.channel_id, call)
        assert record is not None
        assert record.ticket_id == ticket_id
    customers = {ticket["customer_id"] for ticket in tickets}
    assert len(customers) == 1  # the caller, known by their number
    assert (await line.desk.customer(customers.pop()))["phone"] == "+15550001234"


async def test_a_voicemail_whose_transcription_never_comes_is_a_ticket_after_the_wait_and_a_late_one_is_added(
    helpdesk_stack: HelpdeskStack, recordings: MediaPeer
) -> None:
    """A provider that fails to transcribe must not lose the voicemail: once its call has had no event for the wait,
    a pass of the processors' task (run here with its clock past the wait) makes the ticket of the audio alone; a
    voicemail still within the wait is left waiting; the transcription that comes after is added to the ticket as the
    caller's message, and a second pass makes nothing more."""
    line = await phone(helpdesk_stack, recordings)
    late, fresh = call_id(), call_id()
    events = line.voicemail(late)
    for state in ("voicemail", "voicemail_uploaded"):
        assert (await line.post(events[state])).json() == {"status": "accepted"}
    await line.desk.processed(2)
    waiting = await helpdesk_stack.db.read(calls.of_call, line.desk.channel_id, late)
    assert waiting is not None
    await asyncio.sleep(0.05)
    await line.post(line.voicemail(fresh)["voicemail"])
    processed = await line.desk.processed(3)
    assert f"call {late} voicemail_uploaded; voicemail waiting for its transcription" in [
        event["outcome"] for event in processed
    ]
    assert await line.desk.tickets() == []

    clock = waiting.updated_at + VOICEMAIL_WAIT + timedelta(milliseconds=10)
    announced: list[str] = []

    async def announce(_organization_id: str, event_id: str) -> None:
        announced.append(event_id)

    await make_waiting_voicemails(helpdesk_stack.db, announce, clock=lambda: clock)
    [ticket] = await line.desk.tickets()
    assert (ticket["subject"], ticket["channel"], ticket["tags"]) == (
        "Voicemail from Grace Hopper",
        "voice",
        ["voicemail"],
    )
    [message] = await line.desk.conversations(ticket["id"])
    assert message.body == "(the voicemail has no transcription)"
    assert recording_of(message.attachments)["url"] == line.recording(late)
    made = await helpdesk_stack.db.read(calls.of_call, line.desk.channel_id, late)
    assert made is not None
    assert made.ticket_id == ticket["id"]
    still = await helpdesk_stack.db.read(calls.of_call, line.desk.channel_id, fresh)
    assert still is not None
    assert still.ticket_id is None  # its call's last event is within the wait

    await line.post(events["transcription"])
    processed = await line.desk.processed(4)
    [event] = [e for e in processed if e["dedup_key"] == f"call:{late}:transcription"]
    assert event["outcome"] == f"call {late}: its voicemail's transcription, added to its ticket"
    # (the ticket's first message is dated by the pass's clock, past the wait: found by id, not by order)
    [added] = [c for c in await line.desk.conversations(ticket["id"]) if c.id == event["conversation_id"]]
    assert (added.body, added.author_type, added.author_id) == (
        f"Hi, this is Grace about call {late}.",
        "customer",
        ticket["customer_id"],
    )
    await make_waiting_voicemails(helpdesk_stack.db, announce, clock=lambda: clock)
    assert [t["id"] for t in await line.desk.tickets()] == [ticket["id"]]
    assert len(await line.desk.conversations(ticket["id"])) == 2


def partition_key_of(connection: Connection, event_id: str) -> str:
    return str(connection.scalar(select(EVENTS.c.partition_key).where(EVENTS.c.id == event_id)))


async def test_a_voicemail_event_redelivered_to_the_processors_makes_no_second_ticket(
    helpdesk_stack: HelpdeskStack, recordings: MediaPeer
) -> None:
    line = await phone(helpdesk_stack, recordings)
    call = call_id()
    for event in line.voicemail(call).values():
        await line.post(event)
    events = await line.desk.processed(3)
    [ticket] = await line.desk.tickets()
    # the broker delivers every stored event's message once more (a processor that died before committing)
    for event in events:
        partition_key = await helpdesk_stack.db.read(partition_key_of, event["id"])
        message = InboundReceived(
            event_id=event["id"],
            organization_id=line.desk.organization_id,
            channel_id=line.desk.channel_id,
            provider="voice",
        )
        await helpdesk_stack.platform.publish(message, helpdesk_stack.topics.inbound, partition_key.encode())
    # a later event of the same call after them: once it is processed, the redelivered ones were handled before it
    await line.post(line.call(call, "hangup"))
    after = await line.desk.processed(4)
    assert [e["outcome"] for e in after if e["dedup_key"] == f"call:{call}:hangup"] == [
        f"call {call} hangup; its voicemail's ticket is made"
    ]
    assert [t["id"] for t in await line.desk.tickets()] == [ticket["id"]]
    assert len(await line.desk.conversations(ticket["id"])) == 1


async def test_voice_sms_events_thread_like_sms_and_an_outbound_one_makes_no_ticket(
    helpdesk_stack: HelpdeskStack,
) -> None:
    line = await phone(helpdesk_stack)
    sender = unique_number()
    for text in ("Can I change my booking?", "For Friday, please"):
        assert (await line.post(line.sms(sender, text))).json() == {"status": "accepted"}
    outbound = line.sms(line.number, "Sure, done.", direction="outbound", to_number=[sender], from_number=line.number)
    assert (await line.post(outbound)).json() == {"status": "accepted"}
    events = await line.desk.processed(3)
    assert [event["outcome"] for event in events] == [
        "new ticket",
        "threaded by sender",
        "no ticket: our own outbound message",
    ]
    [ticket] = await line.desk.tickets()
    assert (ticket["subject"], ticket["channel"]) == (f"SMS from {sender}", "sms")
    bodies = [c.body for c in await line.desk.conversations(ticket["id"])]
    assert bodies == ["Can I change my booking?", "For Friday, please"]
    customer = await until(lambda: line.desk.customer(ticket["customer_id"]), "the caller's customer")
    assert customer["phone"] == sender
