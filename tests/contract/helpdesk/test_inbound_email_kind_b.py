"""Inbound email kind B (SendGrid Inbound Parse-shaped multipart/form-data, signed like SendGrid's Event Webhook:
`x-vendor-email-event-webhook-signature`, base64 DER ECDSA P-256 / SHA-256 over the timestamp header + the raw body,
checked with the channel's public key) through the running stack: a signed post becomes a ticket, its text read in
the charset SendGrid names and its attachment in the blob store; a signature by another key, over another body, or
none, and a stale timestamp are 401 and store nothing; a retry is acknowledged and stores nothing new; a body that is
not a whole form, or whose envelope is not JSON, is 400."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.inbound_mail import PATH, Mailbox, SendgridKey, multipart, parts_of, retitled, sendgrid_form

FIXTURES = Path(__file__).parents[2] / "fixtures" / "mail"


def fixture(name: str, **headers: str) -> bytes:
    return retitled((FIXTURES / name).read_bytes(), **headers)


async def test_a_signed_post_becomes_a_ticket_in_its_charset_with_its_attachment_in_the_blob_store(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = fixture("inbound_shift_jis.eml")
    answer = await box.sendgrid_mail(raw)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})

    [ticket] = await until(box.tickets, "the mail's ticket")
    assert (ticket["subject"], ticket["customer_email"]) == ("見積書（髙﨑）", "takasaki@docomo.example.ne.jp")  # noqa: RUF001
    [conversation] = await box.stored_conversations(ticket["id"])
    assert conversation.body.startswith("見積書を添付します。①")
    [attachment] = conversation.attachments
    assert (attachment["name"], attachment["content_type"]) == ("見積書.pdf", "application/pdf")
    [(_, _, pdf)] = parts_of(raw).attachments
    blobs = box.blobs()
    try:
        assert await blobs.get(attachment["blob"]) == pdf
    finally:
        await blobs.close()
    customer = await box.customer("takasaki@docomo.example.ne.jp")
    assert customer is not None
    assert customer["name"] == "髙﨑"


async def test_the_raw_mail_sendgrid_can_send_instead_becomes_a_ticket(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    assert (await box.sendgrid_mail(fixture("inbound_ks_c_5601.eml"), raw_mode=True)).json() == {"status": "accepted"}
    [ticket] = await until(box.tickets, "the mail's ticket")
    assert ticket["subject"] == "배송 문의 뷁"


async def test_a_signature_by_another_key_over_another_body_or_none_is_401_and_stores_nothing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body, content_type = sendgrid_form(fixture("inbound_gmail_utf8.eml"), envelope_to=[box.address])
    timestamp = str(int(time.time()))
    other_key = await box.sendgrid_post(body, content_type, signature=SendgridKey().sign(timestamp, body))
    assert (other_key.status_code, other_key.json()["error"]["code"]) == (401, "unauthorized")
    tampered = await box.sendgrid_post(
        body.replace(b"on fire", b"in fire"),
        content_type,
        timestamp=timestamp,
        signature=box.sendgrid.sign(timestamp, body),
    )
    assert tampered.status_code == 401
    unsigned = await helpdesk_stack.client.post(PATH, content=body, headers={"Content-Type": content_type})
    assert unsigned.status_code == 401
    not_base64 = await box.sendgrid_post(body, content_type, signature="%%%")
    assert not_base64.status_code == 401
    assert await box.stored() == 0


async def test_a_timestamp_outside_the_replay_window_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body, content_type = sendgrid_form(fixture("inbound_gmail_utf8.eml"), envelope_to=[box.address])
    stale = await box.sendgrid_post(body, content_type, timestamp=str(int(time.time()) - 301))
    assert stale.status_code == 401
    assert "timestamp" in stale.json()["error"]["message"]
    ahead = await box.sendgrid_post(body, content_type, timestamp=str(int(time.time()) + 330))
    assert ahead.status_code == 401
    assert await box.stored() == 0


async def test_a_retry_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = fixture("inbound_gmail_utf8.eml")
    assert (await box.sendgrid_mail(raw)).json() == {"status": "accepted"}
    retry = await box.sendgrid_mail(raw)  # a new boundary and a new timestamp: the same mail
    assert (retry.status_code, retry.json()) == (200, {"status": "duplicate"})
    assert await box.stored() == 1
    [message] = await box.outcomes(1)
    assert (message["provider"], message["classification"], message["outcome"]) == ("email_b", "inbound", "new ticket")


async def test_the_envelopes_first_recipient_that_routes_is_the_channel(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body, content_type = sendgrid_form(
        fixture("inbound_gmail_utf8.eml"), envelope_to=["someone@elsewhere.example", box.address]
    )
    assert (await box.sendgrid_post(body, content_type)).json() == {"status": "accepted"}
    nowhere, nowhere_type = sendgrid_form(fixture("inbound_html_only.eml"), envelope_to=["someone@elsewhere.example"])
    missing = await box.sendgrid_post(nowhere, nowhere_type)
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert await box.stored() == 1


async def test_a_malformed_body_is_400_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body, content_type = sendgrid_form(fixture("inbound_gmail_utf8.eml"), envelope_to=[box.address])
    truncated = await box.sendgrid_post(body[: len(body) // 2], content_type)
    assert (truncated.status_code, truncated.json()["error"]["code"]) == (400, "invalid_request")
    for envelope, message in (
        (b"{not json", "The field envelope is not JSON"),
        (json.dumps({"to": []}).encode(), "The envelope names no recipient"),
        (json.dumps(["a@b.c"]).encode(), "The field envelope is malformed: Expected `object`, got `array`"),
    ):
        broken, broken_type = multipart([("envelope", envelope), ("text", b"hello")])
        answer = await box.sendgrid_post(broken, broken_type)
        assert (answer.status_code, answer.json()["error"]["message"]) == (400, message), answer.text
    assert await box.stored() == 0
