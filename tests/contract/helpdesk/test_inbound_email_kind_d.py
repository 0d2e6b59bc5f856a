"""Inbound email kind D (the email-to-HTTP forwarder, `message/rfc822` with `x-forwarder-secret`) beyond
test_inbound_forwarder.py: a mail in ISO-2022-JP becomes a ticket in Japanese with its attachments in the blob store,
the recipient comes from Delivered-To without `x-envelope-to`, and a mail that names no recipient is 400 and stores
nothing."""

from __future__ import annotations

from pathlib import Path

from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.peers.inbound_mail import PATH, Mailbox, parts_of, retitled

FIXTURES = Path(__file__).parents[2] / "fixtures" / "mail"


async def test_a_japanese_mail_becomes_a_ticket_as_written(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = (FIXTURES / "inbound_iso2022jp.eml").read_bytes()
    answer = await box.forward(raw, **{"x-envelope-to": box.address})
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    [ticket] = await until(box.tickets, "the mail's ticket")
    assert (ticket["subject"], ticket["customer_email"]) == ("プリンター故障の件について", "takahashi@example.co.jp")
    [conversation] = await box.conversations(ticket["id"])
    assert conversation["body"] == "お世話になっております。\n①番のプリンターが故障しました。\n㈱アクメ 髙橋"
    customer = await box.customer("takahashi@example.co.jp")
    assert customer is not None
    assert customer["name"] == "髙橋 一郎"


async def test_the_recipient_comes_from_delivered_to_and_attachments_reach_the_blob_store(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = retitled((FIXTURES / "inbound_attachments.eml").read_bytes(), Delivered_To=box.address)
    assert (await box.forward(raw)).json() == {"status": "accepted"}
    [ticket] = await until(box.tickets, "the mail's ticket")
    [conversation] = await box.stored_conversations(ticket["id"])
    sent = parts_of(raw).attachments
    assert [a["name"] for a in conversation.attachments] == [name for name, _, _ in sent]
    blobs = box.blobs()
    try:
        assert await blobs.get(conversation.attachments[0]["blob"]) == sent[0][2]
    finally:
        await blobs.close()


async def test_a_mail_that_names_no_recipient_is_400_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    box = await Mailbox.open(helpdesk_stack)
    headless = b"Subject: no one\n\nHello"
    answer = await box.forward(headless)
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "invalid_request")
    wrong_type = await helpdesk_stack.client.post(
        PATH, content=headless, headers={"Content-Type": "text/plain", "x-forwarder-secret": "x"}
    )
    assert wrong_type.status_code == 415
    assert await box.stored() == 0
