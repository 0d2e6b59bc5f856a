"""The pure parts of the SMS, messaging and voice providers: the SMS signature and TwiML answer, how a messaging call
splits into items and their de-duplication keys, how a message of each type reads as a conversation, and the call
record's merge that makes a voicemail ticket ready exactly once, in every order."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from litestar.datastructures import MultiDict

from gateway.helpdesk.inbound import messaging as gateway_messaging
from gateway.helpdesk.inbound.sms import form, signed, twiml
from processors.helpdesk.inbound import sms as sms_processor
from processors.helpdesk.inbound.messaging import business_content, page_content
from processors.helpdesk.inbound.voice import call_event, merged, voicemail_ready
from topics.helpdesk.inbound import BusinessMessage, PageEvent, VoiceEvent

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def test_twiml_answers_the_auto_reply_escaped_or_an_empty_response() -> None:
    head = '<?xml version="1.0" encoding="UTF-8"?>'
    assert twiml("Thanks <3 & bye") == f"{head}<Response><Message>Thanks &lt;3 &amp; bye</Message></Response>"
    assert twiml(None) == twiml("") == twiml("   ") == f"{head}<Response/>"


def test_the_sms_signature_is_twilio_s_with_or_without_the_default_port() -> None:
    params = {"To": "+15550001111", "From": "+15550002222", "Body": "Hi+there & more", "MessageSid": "SM1"}
    token = "auth-token"

    def signature(url: str) -> str:
        data = url + "".join(name + params[name] for name in sorted(params))
        return base64.b64encode(hmac.new(token.encode(), data.encode(), hashlib.sha1).digest()).decode()

    given = MultiDict(list(params.items()))
    url = "https://helpdesk.example/api/webhooks/sms"
    assert signed(url, given, token, signature(url))
    assert signed(url, given, token, signature("https://helpdesk.example:443/api/webhooks/sms"))
    assert not signed(url, given, token, signature("https://other.example/api/webhooks/sms"))
    assert not signed(url, given, "another-token", signature(url))
    assert not signed(url, given, "", signature(url))
    assert not signed(url, given, token, "")


def test_the_sms_form_is_read_strictly() -> None:
    assert form(b"From=%2B1555&Body=a+b").get("Body") == "a b"
    for bad in (b"From=%FF", b"\xff=1", b"no-equals-sign&x"):
        with pytest.raises(Exception, match="x-www-form-urlencoded"):
            form(bad)


def test_an_mms_keeps_its_media_as_references_and_a_text_less_one_says_what_it_carried() -> None:
    sms = sms_processor.parse(
        b"From=%2B15550002222&To=%2B1555&Body=&NumMedia=1&MessageSid=MM1"
        b"&MediaUrl0=https%3A%2F%2Fmedia.example%2F1&MediaContentType0=image%2Fpng"
    )
    assert sms.media == [{"url": "https://media.example/1", "content_type": "image/png"}]
    assert (sms.sender, sms.sid, sms.body()) == ("+15550002222", "MM1", "(1 attachment)")


def _business(value: dict[str, Any]) -> dict[str, Any]:
    value = {"messaging_product": "whatsapp", "metadata": {"phone_number_id": "42"}} | value
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "1", "changes": [{"field": "messages", "value": value}]}],
    }


def test_a_business_call_splits_into_its_messages_and_statuses_each_with_its_own_key() -> None:
    payload = _business(
        {
            "contacts": [{"wa_id": "155", "profile": {"name": "Ada"}}],
            "messages": [{"from": "155", "id": "wamid.A", "type": "text", "text": {"body": "x"}}],
            "statuses": [{"id": "wamid.B", "status": "read", "recipient_id": "166"}],
        }
    )
    parts = gateway_messaging.business_parts(json.dumps(payload).encode())
    assert [part.address for part in parts] == ["42"]
    items = gateway_messaging.business_items(parts)
    assert [(i.kind, i.dedup_key, i.sender, i.address) for i in items] == [
        ("message", "wamid.A", "155", "42"),
        ("status", "wamid.B:read", "166", "42"),
    ]
    assert json.loads(items[0].body)["contact"] == {"wa_id": "155", "profile": {"name": "Ada"}}
    other_call = json.dumps(_business({"errors": [{"code": 131000}]})).encode()
    [other] = gateway_messaging.business_items(gateway_messaging.business_parts(other_call))
    assert (other.kind, other.dedup_key[:7]) == ("other", "change:")


def test_a_page_call_splits_into_messages_postbacks_and_receipts_each_with_its_own_key() -> None:
    def event(**what: Any) -> dict[str, Any]:
        return {"sender": {"id": "7"}, "recipient": {"id": "99"}, "timestamp": 1700} | what

    payload = {
        "object": "page",
        "entry": [
            {
                "id": "99",
                "time": 1,
                "messaging": [
                    event(message={"mid": "m1", "text": "hi"}),
                    event(postback={"title": "Start", "payload": "GO"}),
                    event(read={"watermark": 1699}),
                    event(delivery={"mids": ["m0"], "watermark": 1698}),
                    event(reaction={"mid": "m1", "action": "react"}),
                    {"sender": {"id": "99"}, "recipient": {"id": "7"}, "message": {"mid": "m2", "is_echo": True}},
                ],
            }
        ],
    }
    items = gateway_messaging.page_items(gateway_messaging.page_parts(json.dumps(payload).encode()))
    assert [(i.kind, i.dedup_key.split(":")[0], i.sender) for i in items] == [
        ("message", "m1", "7"),
        ("postback", "postback", "7"),
        ("read", "read", "7"),
        ("delivery", "delivery", "7"),
        ("reaction", "reaction", "7"),
        ("message", "m2", "7"),
    ]
    assert items[1].dedup_key == "postback:7:1700"
    assert items[2].dedup_key == "read:7:1699"


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ({"type": "text", "text": {"body": "Hello"}}, "Hello"),
        ({"type": "image", "image": {"id": "1", "mime_type": "image/jpeg"}}, "(image)"),
        ({"type": "video", "video": {"id": "1", "caption": "Look"}}, "Look"),
        ({"type": "document", "document": {"id": "1", "filename": "a.pdf"}}, "(document: a.pdf)"),
        ({"type": "location", "location": {"latitude": 1.5, "longitude": 2}}, "Location: (1.5, 2)"),
        ({"type": "contacts", "contacts": [{"name": {"formatted_name": "Ada"}}]}, "Contact: Ada"),
        (
            {"type": "interactive", "interactive": {"list_reply": {"title": "Blue", "description": "Sky"}}},
            "Chose: Blue, Sky",
        ),
        ({"type": "button", "button": {"text": "Yes"}}, "Yes"),
        ({"type": "reaction", "reaction": {"emoji": "👍"}}, "Reacted 👍"),
        ({"type": "unsupported"}, "(unsupported message)"),
    ],
)
def test_every_business_message_type_reads_as_a_conversation(message: dict[str, Any], text: str) -> None:
    given = json.dumps({"id": "wamid.A", "from": "155"} | message)
    assert business_content(msgspec.json.decode(given, type=BusinessMessage)).text == text


def test_a_page_message_s_attachments_are_references_and_its_location_is_text() -> None:
    content = page_content(
        msgspec.convert(
            {
                "message": {
                    "mid": "m1",
                    "attachments": [
                        {"type": "file", "payload": {"url": "https://cdn.example/f.pdf"}},
                        {"type": "location", "payload": {"coordinates": {"lat": 1, "long": 2}}},
                    ],
                }
            },
            PageEvent,
        )
    )
    assert content.text == "Location: (1, 2)"
    assert content.attachments == [{"url": "https://cdn.example/f.pdf", "content_type": None, "type": "file"}]


VOICEMAIL = {
    "voicemail": VoiceEvent(call_id="c1", state="voicemail"),
    "voicemail_uploaded": VoiceEvent(call_id="c1", state="voicemail_uploaded", voicemail_link="https://r.example/1"),
    "transcription": VoiceEvent(call_id="c1", state="transcription", transcription_text="Call me back"),
}


@pytest.mark.parametrize("order", list(itertools.permutations(VOICEMAIL)))
def test_a_voicemail_is_ready_once_its_audio_and_transcription_are_in_whatever_their_order(
    order: tuple[str, ...],
) -> None:
    call = None
    ready = []
    for state in order:
        event = call_event(VOICEMAIL[state])
        call = merged(call, event, organization_id="o", channel_id="c", new_id="i", now=NOW)
        ready.append(voicemail_ready(call))
    assert call is not None
    # ready from the event that brings the second of the audio and the transcription on (no ticket is made here)
    assert ready == [{"voicemail_uploaded", "transcription"} <= set(order[: i + 1]) for i in range(len(order))]
    assert (call.state, call.recording_url, call.transcription, call.voicemail) == (
        "transcription",
        "https://r.example/1",
        "Call me back",
        True,
    )
    assert call.details["states"] == ["voicemail", "voicemail_uploaded", "transcription"]


def test_an_upload_without_a_link_and_an_empty_transcription_still_make_the_voicemail_ready() -> None:
    call = None
    for state in ("voicemail_uploaded", "transcription"):
        event = call_event(VoiceEvent(call_id="c", state=state))
        call = merged(call, event, organization_id="o", channel_id="c", new_id="i", now=NOW)
    assert call is not None
    assert (call.recording_url, call.transcription, voicemail_ready(call)) == ("", "", True)


def test_a_call_keeps_its_furthest_state_and_a_recorded_call_s_transcription_is_no_voicemail() -> None:
    call = None
    for state in ("hangup", "ringing", "recording", "transcription"):
        event = call_event(VoiceEvent(call_id="c", state=state))
        call = merged(call, event, organization_id="o", channel_id="c", new_id="i", now=NOW)
        assert call is not None
        assert not voicemail_ready(call)
    assert call is not None
    assert (call.state, call.voicemail) == ("transcription", False)
