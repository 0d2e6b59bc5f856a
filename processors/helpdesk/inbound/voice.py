"""The voice provider's events (Dialpad's shape): call events update the call's record (storage/helpdesk/calls.py),
and a voicemail becomes one ticket; SMS events thread as SMS do (processors/helpdesk/inbound/sms.py).

A call's record keeps the most advanced state its events told (`calling` < `ringing` < `connected`, `hold` <
`recording` < `hangup`, `missed` < `voicemail` < `voicemail_uploaded` < `transcription`, whatever order they came in),
every state seen, and the latest of `direction`, `target`, `contact`, `started_at`, `answered_at`, `duration`. The
voicemail sequence `voicemail` -> `voicemail_uploaded` (the audio: `voicemail_link`) -> `transcription` (the text:
`transcription_text`) makes ONE ticket, once the audio and the transcription are both in, in whatever order the
events arrive: from the caller (identity `phone`, named by `contact.name`), channel `voice`, tag `voicemail`, the
transcription as its message and the recording as its attachment: fetched (with no credentials: the voice channel has
none) when the upload's event is handled, kept in the blob store beside its URL (media.py), and remembered on the call
(`details.recording`) until the ticket is made. One call's events are processed one after the other, and the ticket's
id is kept on the call, so a redelivered or late event makes no second one.

A voicemail is never lost for a part that does not come (a provider that failed to transcribe): once its call has
had no event for VOICEMAIL_WAIT, the processors make its ticket of what came (`waiting_voicemails_forever`), and a part
that comes after its ticket is added to it as the caller's message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import structlog
from sqlalchemy.engine import Connection

from operations.common.changes import announce
from processors.helpdesk.inbound.media import Medium, file_name, kept
from processors.helpdesk.inbound.service import Announce, Apply, Context
from processors.helpdesk.inbound.sms import from_number
from storage.common.db import Database
from storage.helpdesk import calls, customers, tickets
from storage.helpdesk.calls import CallRecord
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import VOICE_EVENT, VoiceEvent

log = structlog.get_logger("signalyard.processors.helpdesk")

STATE_ORDER = {
    "calling": 0,
    "ringing": 1,
    "connected": 2,
    "hold": 2,
    "recording": 3,
    "hangup": 4,
    "missed": 4,
    "voicemail": 5,
    "voicemail_uploaded": 6,
    "transcription": 7,
}
"""How far along a call a state is: the record keeps the furthest (a state of equal rank: the latest)."""
DETAILS = ("direction", "target", "contact", "started_at", "answered_at", "duration")
VOICEMAIL_WAIT = timedelta(minutes=10)
"""How long a voicemail waits for its missing audio or transcription, from its call's last event, before its ticket is
made of what came."""
WAITING_EVERY_S = 30.0
WAITING_AT_ONCE = 100


@dataclass(frozen=True, slots=True)
class CallEvent:
    call_id: str
    state: str
    details: dict[str, Any]
    voicemail: bool
    recording_url: str | None
    """The voicemail's audio: its link, "" for an upload that named none, None when the event says nothing of it."""
    transcription: str | None
    """The voicemail's text: "" for an empty transcription, None when the event says nothing of it."""


def call_event(payload: VoiceEvent) -> CallEvent:
    """A call event's part of the call (the gateway checked it has a call id and a state)."""
    state = payload.state or ""
    link = (payload.voicemail_link or "").strip()
    recording_url = link or ("" if state == "voicemail_uploaded" else None)
    given = msgspec.to_builtins(payload)
    return CallEvent(
        call_id="" if payload.call_id is None else str(payload.call_id),
        state=state,
        details={name: given[name] for name in DETAILS if given[name] is not None},
        voicemail=state in ("voicemail", "voicemail_uploaded") or bool(recording_url),
        recording_url=recording_url,
        transcription=(payload.transcription_text or "") if state == "transcription" else None,
    )


def _kept(current: str | None, given: str | None) -> str | None:
    """A voicemail part: what came with content over what came empty, and what came over nothing."""
    if given:
        return given
    return current if current is not None else given


def merged(
    current: CallRecord | None, event: CallEvent, *, organization_id: str, channel_id: str, new_id: str, now: datetime
) -> CallRecord:
    """The call's record once `event` is applied (a new record for the call's first event)."""
    if current is None:
        current = CallRecord(
            new_id, organization_id, channel_id, event.call_id, event.state, {}, False, None, None, None, now, now
        )
        state = event.state
    else:
        ahead = STATE_ORDER.get(event.state, 0) >= STATE_ORDER.get(current.state, 0)
        state = event.state if ahead else current.state
    seen = set(current.details.get("states") or []) | {event.state}
    states = sorted(seen, key=lambda name: (STATE_ORDER.get(name, 0), name))
    return replace(
        current,
        state=state,
        details={**current.details, **event.details, "states": states},
        voicemail=current.voicemail or event.voicemail,
        recording_url=_kept(current.recording_url, event.recording_url),
        transcription=_kept(current.transcription, event.transcription),
        updated_at=now,
    )


def voicemail_ready(call: CallRecord) -> bool:
    """The audio and the transcription are both in, and no ticket was made of them yet."""
    return call.voicemail and call.recording_url is not None and call.transcription is not None and not call.ticket_id


RECORDING = "recording"
"""The call's detail that holds its voicemail's recording as an attachment (stored, or its URL with why not)."""


def recording_reference(url: str) -> dict[str, Any]:
    return {"url": url, "content_type": None, "type": "voicemail"}


def _audio(call: CallRecord) -> list[dict[str, Any]]:
    """The voicemail's recording as the ticket's attachment: as it was fetched, or (a call recorded before recordings
    were fetched) its URL."""
    if not call.recording_url:
        return []
    recording = call.details.get(RECORDING)
    return [recording] if isinstance(recording, dict) else [recording_reference(call.recording_url)]


def _voicemail_ticket(
    connection: Connection, call: CallRecord, now: datetime, recorded: list[str]
) -> tickets.TicketRecord:
    given = call.details.get("contact")
    contact: dict[str, Any] = given if isinstance(given, dict) else {}
    number = str(contact.get("phone_number") or "").strip()
    name = str(contact.get("name") or "").strip() or None
    organization_id = call.organization_id
    if number:
        customer = customers.find_or_create_by_identity(
            connection, organization_id, kind="phone", value=number, name=name, phone=number, now=now, recorded=recorded
        )
    else:
        customer = customers.create(
            connection,
            organization_id,
            email=None,
            name=name or "Unknown caller",
            phone=None,
            now=now,
            recorded=recorded,
        )
    return tickets.create(
        connection,
        organization_id,
        subject=f"Voicemail from {name or number or 'an unknown caller'}"[:255],
        customer=customer,
        channel="voice",
        tags=["voicemail"],
        message=call.transcription or "(the voicemail has no transcription)",
        attachments=_audio(call),
        actor_id=None,
        now=now,
        recorded=recorded,
    )


def _waiting(call: CallRecord) -> str:
    if call.ticket_id:
        return "; its voicemail's ticket is made"
    if not call.voicemail:
        return ""
    missing = [
        part for part, value in (("audio", call.recording_url), ("transcription", call.transcription)) if value is None
    ]
    return f"; voicemail waiting for its {' and '.join(missing)}"


def _call(event: Any, payload: VoiceEvent, recording: dict[str, Any] | None) -> Apply:
    given = call_event(payload)
    if recording is not None:
        given = replace(given, details={**given.details, RECORDING: recording})

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        current = calls.of_call(connection, event.channel_id, given.call_id)
        call = merged(
            current,
            given,
            organization_id=event.organization_id,
            channel_id=event.channel_id,
            new_id=event.id,
            now=now,
        )
        ticket = _voicemail_ticket(connection, call, now, recorded) if voicemail_ready(call) else None
        if ticket is not None:
            call = replace(call, ticket_id=ticket.id)
        calls.save(connection, call, new=current is None)
        if ticket is not None:
            return Outcome(
                f"new ticket: voicemail of call {call.call_id}", classification="voicemail", ticket_id=ticket.id
            )
        if current is not None and current.ticket_id:
            late = _late_part(connection, current.ticket_id, current, call, now=now, recorded=recorded)
            if late is not None:
                return late
        return Outcome(f"call {call.call_id} {given.state}{_waiting(call)}", classification="call")

    return apply


def _late_part(
    connection: Connection, ticket_id: str, before: CallRecord, call: CallRecord, *, now: datetime, recorded: list[str]
) -> Outcome | None:
    """A voicemail part that came after the wait made the ticket without it: added to the ticket as the caller's
    message (the transcription as its text, the audio as its attachment)."""
    text = call.transcription if before.transcription is None and call.transcription is not None else None
    audio = _audio(call) if not before.recording_url and call.recording_url else []
    ticket = tickets.get(connection, call.organization_id, ticket_id) if text is not None or audio else None
    if ticket is None:
        return None
    conversation = tickets.add_conversation(
        connection,
        ticket,
        author_type="customer",
        author_id=ticket.customer_id,
        body=text or ("(the voicemail's recording)" if text is None else "(the voicemail has no transcription)"),
        internal=False,
        attachments=audio,
        now=now,
        recorded=recorded,
    )
    part = "transcription" if text is not None else "audio"
    return Outcome(
        f"call {call.call_id}: its voicemail's {part}, added to its ticket",
        classification="voicemail",
        ticket_id=ticket.id,
        conversation_id=conversation.id,
    )


def waiting_voicemails(connection: Connection, now: datetime) -> list[tuple[tickets.TicketRecord, list[str]]]:
    """The tickets of the voicemails whose call has had no event for VOICEMAIL_WAIT, made of what came, each with the
    webhook events it recorded."""
    made = []
    for call in calls.voicemails_waiting(connection, now - VOICEMAIL_WAIT, WAITING_AT_ONCE):
        recorded: list[str] = []
        ticket = _voicemail_ticket(connection, call, now, recorded)
        calls.save(connection, replace(call, ticket_id=ticket.id, updated_at=now), new=False)
        made.append((ticket, recorded))
    return made


async def make_waiting_voicemails(
    db: Database, publish_event: Announce, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> None:
    """One pass, in one transaction (a call's event applied meanwhile waits for it, then finds the ticket made): the
    tickets of the voicemails that waited long enough, their webhook events announced once committed."""
    made = await db.write(waiting_voicemails, clock())
    for ticket, recorded in made:
        log.info("voicemail_ticket_after_wait", ticket_id=ticket.id)
        await announce(publish_event, ticket.organization_id, recorded)


async def waiting_voicemails_forever(db: Database, announce: Announce, *, every_s: float = WAITING_EVERY_S) -> None:
    """In a processors process: `make_waiting_voicemails` every `every_s`."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await make_waiting_voicemails(db, announce)
        except Exception:  # a pass that fails is tried again at the next tick
            log.exception("voicemail_wait_failed")


def _sms(event: Any, payload: VoiceEvent) -> Apply:
    outbound = (payload.direction or "").lower() == "outbound"
    sender = next(iter(payload.senders), "")
    text = payload.text or "(empty message)"
    message_id = str(payload.id) if payload.id else None

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if outbound:
            return Outcome("no ticket: our own outbound message", classification="outbound_copy")
        if not sender:
            return Outcome("no ticket: the message has no sender", classification="invalid")
        return from_number(
            connection,
            event.organization_id,
            number=sender,
            text=text,
            message_id=message_id,
            now=now,
            recorded=recorded,
        )

    return apply


async def handle(context: Context, event: Any) -> Apply:
    payload = VOICE_EVENT.decode(event.body)
    if (payload.event_type or "").lower() == "sms":
        return _sms(event, payload)
    link = (payload.voicemail_link or "").strip()
    recording = None
    if link:
        name = file_name(None, link, None, "voicemail")
        [recording] = await kept(context, event, [Medium(recording_reference(link), name, url=link)])
    return _call(event, payload, recording)
