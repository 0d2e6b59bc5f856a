"""Inbound email kind A (Mailgun-shaped: multipart/form-data, `signature` = hex HMAC-SHA256 of timestamp + token keyed
by the channel's signing key) through the running stack: a signed post becomes a ticket with its attachments in the
blob store; a wrong signature, a stale timestamp and a reused token are refused and store nothing; a retry is
acknowledged and stores nothing new; a body that is not a whole form is 400."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.inbound_mail import (
    PATH,
    Mailbox,
    mailgun_form,
    mailgun_signature,
    multipart,
    new_message_id,
    parts_of,
    retitled,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "mail"


def fixture(name: str, **headers: str) -> bytes:
    return retitled((FIXTURES / name).read_bytes(), **headers)


async def test_a_signed_post_becomes_a_ticket_and_its_attachments_reach_the_blob_store(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = fixture("inbound_attachments.eml", Message_ID=new_message_id())
    answer = await box.mailgun(raw)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})

    [ticket] = await until(box.tickets, "the mail's ticket")
    assert (ticket["subject"], ticket["channel"], ticket["customer_email"]) == (
        "Broken label printer (photo and invoice attached)",
        "email",
        "grace@example.com",
    )
    [conversation] = await box.stored_conversations(ticket["id"])
    assert conversation.body.startswith("The label printer prints blank labels.")
    names = [(a["name"], a["content_type"]) for a in conversation.attachments]
    assert names == [
        ("label.png", "image/png"),
        ("invoice-2024-05.pdf", "application/pdf"),
        ("Invoice 2024-05.eml", "message/rfc822"),
    ]
    sent = {name: data for name, _, data in parts_of(raw).attachments}
    blobs = box.blobs()
    try:
        for attachment in conversation.attachments[:2]:
            assert await blobs.get(attachment["blob"]) == sent[attachment["name"]]
            assert attachment["size"] == len(sent[attachment["name"]])
    finally:
        await blobs.close()


async def test_the_raw_mail_in_body_mime_becomes_a_ticket_in_its_own_charset(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    assert (await box.mailgun(fixture("inbound_iso2022jp.eml"), mime=True)).json() == {"status": "accepted"}
    [ticket] = await until(box.tickets, "the mail's ticket")
    assert ticket["subject"] == "プリンター故障の件について"
    [conversation] = await box.conversations(ticket["id"])
    assert "①番のプリンターが故障しました。" in conversation["body"]


async def test_a_wrong_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = fixture("inbound_gmail_utf8.eml")
    answer = await box.mailgun(raw, signature="0" * 64)
    assert (answer.status_code, answer.json()["error"]["code"]) == (401, "unauthorized")
    body, content_type = mailgun_form(raw, recipient=box.address, signing_key="not-the-channels-key")
    other_key = await helpdesk_stack.client.post(PATH, content=body, headers={"Content-Type": content_type})
    assert other_key.status_code == 401
    assert await box.stored() == 0


async def test_a_timestamp_outside_the_replay_window_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    stale = str(int(time.time()) - 301)
    answer = await box.mailgun(fixture("inbound_gmail_utf8.eml"), timestamp=stale)
    assert answer.status_code == 401
    assert "timestamp" in answer.json()["error"]["message"]
    assert await box.stored() == 0


async def test_a_retry_with_a_new_token_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = fixture("inbound_gmail_utf8.eml")
    assert (await box.mailgun(raw)).json() == {"status": "accepted"}
    retry = await box.mailgun(raw)
    assert (retry.status_code, retry.json()) == (200, {"status": "duplicate"})
    assert await box.stored() == 1
    [message] = await box.outcomes(1)
    assert (message["provider"], message["dedup_key"]) == (
        "email_a",
        "CAKx8Jm3ZqR2x+Vn4p5Yw_0ZsH1wq9tB7=gN2dE4c6rU1oXy5aQ@mail.gmail.com",
    )
    assert len(await box.tickets()) == 1


async def test_a_token_used_again_is_the_same_delivery_or_a_replay(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    timestamp, token = str(int(time.time())), "f3b2a1c09d8e4f7ab6c5d4e3f2a1b0c9e8d7c6b5a4f3e2d1c0"
    first = fixture("inbound_gmail_utf8.eml")
    assert (await box.mailgun(first, timestamp=timestamp, token=token)).json() == {"status": "accepted"}
    same = await box.mailgun(first, timestamp=timestamp, token=token)
    assert (same.status_code, same.json()) == (200, {"status": "duplicate"})
    # The signature covers only timestamp and token: the same pair on another mail is someone replaying it.
    forged = fixture("inbound_html_only.eml", To=box.address)
    replayed = await box.mailgun(forged, timestamp=timestamp, token=token)
    assert (replayed.status_code, replayed.json()["error"]["code"]) == (401, "unauthorized")
    assert "token" in replayed.json()["error"]["message"]
    assert await box.stored() == 1


async def test_a_malformed_body_is_400_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body, content_type = mailgun_form(
        fixture("inbound_gmail_utf8.eml"), recipient=box.address, signing_key=box.secrets["signing_key"]
    )
    post = helpdesk_stack.client.post
    truncated = await post(PATH, content=body[: len(body) // 2], headers={"Content-Type": content_type})
    assert (truncated.status_code, truncated.json()["error"]["code"]) == (400, "invalid_request")
    no_boundary = await post(PATH, content=body, headers={"Content-Type": "multipart/form-data"})
    assert no_boundary.status_code == 400

    timestamp, token = str(int(time.time())), "a" * 50
    signature = mailgun_signature(box.secrets["signing_key"], timestamp, token)
    fields = [
        ("recipient", box.address.encode()),
        ("timestamp", timestamp.encode()),
        ("token", token.encode()),
        ("signature", signature.encode()),
        ("message-headers", b"[[not json"),
    ]
    bad_json, bad_type = multipart(fields)
    broken = await post(PATH, content=bad_json, headers={"Content-Type": bad_type})
    assert (broken.status_code, broken.json()["error"]["message"]) == (400, "The field message-headers is not JSON")
    unaddressed, unaddressed_type = multipart([f for f in fields if f[0] != "recipient"])
    assert (await post(PATH, content=unaddressed, headers={"Content-Type": unaddressed_type})).status_code == 400
    other_type = await post(PATH, content=b"{}", headers={"Content-Type": "text/plain"})
    assert (other_type.status_code, other_type.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert await box.stored() == 0
