"""Inbound email kind C (Postmark inbound-shaped JSON, the channel's inbound token in `?token=` or `x-inbound-token`)
through the running stack: a post with the token becomes a ticket, its base64 attachment in the blob store; it routes
by OriginalRecipient (Postmark's inbound address, the customer's To being the company's own address); a wrong or
missing token is 401 and stores nothing; a retry is acknowledged and stores nothing new; a body that is not a JSON
object, or names no recipient, is 400."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.inbound_mail import PATH, Mailbox, new_message_id, parts_of, postmark_json, retitled

FIXTURES = Path(__file__).parents[2] / "fixtures" / "mail"


def fixture(name: str, **headers: str) -> bytes:
    return retitled((FIXTURES / name).read_bytes(), **headers)


async def test_a_post_with_the_token_in_the_url_becomes_a_ticket_with_its_attachment_in_the_blob_store(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = fixture("dialpad_voicemail.eml")
    answer = await box.postmark(raw)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})

    [ticket] = await until(box.tickets, "the mail's ticket")
    assert (ticket["subject"], ticket["channel"], ticket["tags"]) == (
        "New voicemail from (415) 555-0134",
        "voice",
        ["voicemail"],
    )
    [conversation] = await box.stored_conversations(ticket["id"])
    assert "the printer on the second floor is on fire again" in conversation.body
    [attachment] = conversation.attachments
    [(name, content_type, audio)] = parts_of(raw).attachments
    assert (attachment["name"], attachment["content_type"], attachment["size"]) == (name, content_type, len(audio))
    blobs = box.blobs()
    try:
        assert await blobs.get(attachment["blob"]) == audio
    finally:
        await blobs.close()
    [message] = await box.outcomes(1)
    assert (message["provider"], message["classification"]) == ("email_c", "dialpad_voicemail")


async def test_the_token_may_come_in_x_inbound_token_and_latin1_text_reads_as_written(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    assert (await box.postmark(fixture("inbound_latin1_outlook.eml"), in_header=True)).json() == {"status": "accepted"}
    [ticket] = await until(box.tickets, "the mail's ticket")
    assert ticket["subject"] == "Réclamation : commande n° 88213"
    [conversation] = await box.conversations(ticket["id"])
    assert "ma commande n’est jamais arrivée" in conversation["body"]  # noqa: RUF001


async def test_a_wrong_or_missing_token_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body = postmark_json(fixture("inbound_gmail_utf8.eml"), original_recipient=box.address)
    wrong = await box.postmark_post(body, token="tok-not-this-channels")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    wrong_header = await box.postmark_post(body, token="tok-not-this-channels", in_header=True)
    assert wrong_header.status_code == 401
    missing = await helpdesk_stack.client.post(PATH, content=body, headers={"Content-Type": "application/json"})
    assert missing.status_code == 401
    # Another organization's token does not open this channel.
    other = await Mailbox.open(helpdesk_stack)
    assert (await other.postmark_post(body)).status_code == 401
    assert await box.stored() == 0


async def test_it_routes_by_original_recipient_and_answers_404_when_nothing_routes(
    helpdesk_stack: HelpdeskStack,
) -> None:
    inbound_address = f"{new_message_id('x')[1:9]}@inbound.postmark.example"
    box = await Mailbox.open(helpdesk_stack, inbound_address)
    body = postmark_json(fixture("inbound_gmail_utf8.eml"), original_recipient=inbound_address)
    assert json.loads(body)["To"] == "Acme Support <support@acme.example>"
    assert (await box.postmark_post(body)).json() == {"status": "accepted"}
    [message] = await box.outcomes(1)
    assert message["outcome"] == "new ticket"
    nowhere = postmark_json(fixture("inbound_html_only.eml"), original_recipient="nobody@elsewhere.example")
    missing = await box.postmark_post(nowhere)
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")


async def test_a_retry_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    body = postmark_json(fixture("inbound_gmail_utf8.eml"), original_recipient=box.address)
    assert (await box.postmark_post(body)).json() == {"status": "accepted"}
    retry = await box.postmark_post(body)
    assert (retry.status_code, retry.json()) == (200, {"status": "duplicate"})
    assert await box.stored() == 1
    assert len(await until(box.tickets, "the mail's ticket")) == 1


async def test_a_malformed_body_is_400_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    for body in (b'{"From": "a@b.c", "To": ', b"[]", json.dumps({"From": "a@b.c", "Subject": "no recipient"}).encode()):
        answer = await box.postmark_post(body)
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, "invalid_request"), body
    no_id = json.dumps({"From": "a@b.c", "OriginalRecipient": box.address, "Headers": []}).encode()
    answer = await box.postmark_post(no_id)
    assert answer.status_code == 400
    assert await box.stored() == 0
