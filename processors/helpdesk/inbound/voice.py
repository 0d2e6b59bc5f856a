"""The voice provider's events (Dialpad's shape): call events update the call's record (storage/helpdesk/calls.py),
and a voicemail becomes one ticket; SMS events thread as SMS do (processors/helpdesk/inbound/sms.py).

A call's record keeps the most advanced state its events told (`calling` < `ringing` < `connected`, `hold` <
`recording` < `hangup`, `missed` < `voicemail` < `voicemail_uploaded` < `transcription`, whatever order they came in),
every state seen, and the latest of `direction`, `target`, `contact`, `started_at`, `answered_at`, `duration`. The
voicemail sequence `voicemail` -> `voicemail_uploaded` (the audio: `voicemail_link`) -> `transcription` (the text:
`transcription_text`) makes ONE ticket, once the audio and the transcription are both in, in whatever order the
events arrive: from the caller (identity `phone`, named by `contact.name`), channel `voice`, tag `voicemail`, the
transcription as its message and the recording's URL as an attachment reference. One call's events are processed one
after the other, and the ticket's id is kept on the call, so a redelivered or late event makes no second one."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.service import Apply, Context
from processors.helpdesk.inbound.sms import from_number
from storage.helpdesk import calls, customers, tickets
from storage.helpdesk.calls import CallRecord
from storage.helpdesk.inbound import Outcome

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


def call_event(payload: dict[str, Any]) -> CallEvent:
    """A call event's part of the call (the gateway checked it has a call id and a state)."""
    state = str(payload.get("state") or "")
    link = payload.get("voicemail_link")
    if isinstance(link, str) and link.strip():
        recording_url: str | None = link.strip()
    else:
        recording_url = "" if state == "voicemail_uploaded" else None
    text = payload.get("transcription_text")
    return CallEvent(
        call_id=str(payload.get("call_id") or ""),
        state=state,
        details={name: payload[name] for name in DETAILS if payload.get(name) is not None},
        voicemail=state in ("voicemail", "voicemail_uploaded") or bool(recording_url),
        recording_url=recording_url,
        transcription=(str(text) if text else "") if state == "transcription" else None,
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
    audio = [{"url": call.recording_url, "content_type": None, "type": "voicemail"}] if call.recording_url else []
    return tickets.create(
        connection,
        organization_id,
        subject=f"Voicemail from {name or number or 'an unknown caller'}"[:255],
        customer=customer,
        channel="voice",
        tags=["voicemail"],
        message=call.transcription or "(the voicemail has no transcription)",
        attachments=audio,
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


def _call(event: Any, payload: dict[str, Any]) -> Apply:
    given = call_event(payload)

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
        return Outcome(f"call {call.call_id} {given.state}{_waiting(call)}", classification="call")

    return apply


def _sms(event: Any, payload: dict[str, Any]) -> Apply:
    outbound = str(payload.get("direction") or "").lower() == "outbound"
    senders = payload.get("from_number")
    sender = str((senders[0] if senders else "") if isinstance(senders, list) else (senders or "")).strip()
    text = str(payload.get("text") or "") or "(empty message)"
    message_id = str(payload["id"]) if payload.get("id") else None

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


async def handle(_context: Context, event: Any) -> Apply:
    payload = json.loads(event.body)
    if str(payload.get("event_type") or "").lower() == "sms":
        return _sms(event, payload)
    return _call(event, payload)
