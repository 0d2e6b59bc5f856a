"""An agent's reply reaches the customer through the running stack (docs/helpdesk.md, "Replies to customers"): with no
SMTP server configured, as on the embedded default, the reply sender keeps the mail in the outbox `signalyard
helpdesk mails` prints, and the reply shows as sent with that note, through REST and the procedures; the customer's
answer, forwarded back, lands on the same ticket. (tests/integration/test_helpdesk_replies.py sends through a
local SMTP server.)"""

from __future__ import annotations

from typing import Any

from storage.common import mail as mail_store
from tests.contract.helpdesk.inbound_desk import desk, unique_number
from tests.contract.helpdesk.test_inbound_forwarder import mailbox, message
from tests.contract.helpdesk.test_inbound_messaging import app, business_call, contact, text, wa_id
from tests.contract.helpdesk.test_inbound_sms import Line
from tests.helpdesk_stack import GRAPH_TOKEN, SMS_ACCOUNT, SMS_AUTH_TOKEN, HelpdeskStack
from tests.helpers import until
from tests.peers.graph import GraphPeer, business_status
from tests.peers.sms import SmsPeer


async def test_a_reply_is_sent_kept_locally_and_the_customer_s_answer_lands_on_its_ticket(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await mailbox(helpdesk_stack)
    asked = message(box.address, "Where is my parcel?", "It has not arrived.")
    assert (await box.forward(asked.as_bytes())).status_code == 200
    [ticket] = await until(box.tickets, "the mail made a ticket")
    path = f"/tickets/{ticket['id']}/conversations"
    made = await helpdesk_stack.rest(box.key, "POST", path, json={"body": "It left our depot today."})
    assert made.status_code == 201, made.text
    assert made.json()["delivery"]["state"] == "queued"
    assert made.json()["delivery"]["recipient"] == "grace@example.com"

    async def sent() -> dict[str, Any] | None:
        listed = (await helpdesk_stack.rest(box.key, "GET", path)).json()["data"]
        reply = next(item for item in listed if item["id"] == made.json()["id"])
        return reply if reply["delivery"]["state"] == "sent" else None

    reply = await until(sent, "the reply sent")
    delivery = reply["delivery"]
    assert (delivery["medium"], delivery["attempts"], delivery["last_error"]) == ("email", 1, None)
    assert delivery["note"].startswith("kept locally")
    again = await helpdesk_stack.rest(box.key, "POST", f"/conversations/{reply['id']}/resend")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "conflict"), "only a failed reply is resent"
    [kept, *_] = await helpdesk_stack.db.read(mail_store.kept_mails, "helpdesk", "grace@example.com")
    assert kept.subject == f"Re: Where is my parcel? [Ticket #{ticket['number']}]"
    assert kept.body.strip() == "It left our depot today."

    answer = message(
        box.address,
        kept.subject,
        "Thanks!",
        In_Reply_To=f"<{delivery['provider_message_id']}>",
    )
    assert (await box.forward(answer.as_bytes())).status_code == 200

    async def answered() -> list[dict[str, Any]]:
        listed = (await helpdesk_stack.rest(box.key, "GET", path)).json()["data"]
        return [item for item in listed if item["body"].strip() == "Thanks!"]

    await until(answered, "the answer threaded onto the ticket")
    assert [t["id"] for t in await box.tickets()] == [ticket["id"]], "no new ticket"


async def test_a_reply_to_a_text_is_sent_by_sms_and_the_provider_s_signed_reports_move_its_state(
    helpdesk_stack: HelpdeskStack, sms_provider: SmsPeer
) -> None:
    line = Line(await desk(helpdesk_stack), unique_number(), SMS_AUTH_TOKEN)
    await line.desk.open_channel(
        "sms", [("sms_number", line.number)], {"auth_token": SMS_AUTH_TOKEN, "account_sid": SMS_ACCOUNT}
    )
    customer = unique_number()
    assert (await line.send(line.message(customer, "Do you ship to Canada?"))).status_code == 200

    async def ticket() -> list[dict[str, Any]]:
        return (await helpdesk_stack.rest(line.desk.key, "GET", "/tickets")).json()["data"]

    [asked] = await until(ticket, "the text made a ticket")
    path = f"/tickets/{asked['id']}/conversations"
    made = await helpdesk_stack.rest(line.desk.key, "POST", path, json={"body": "We do, in 5 days."})
    assert made.status_code == 201, made.text
    assert (made.json()["delivery"]["medium"], made.json()["delivery"]["recipient"]) == ("sms", customer)

    async def state(wanted: str) -> dict[str, Any] | None:
        listed = (await helpdesk_stack.rest(line.desk.key, "GET", path)).json()["data"]
        delivery = next(item for item in listed if item["id"] == made.json()["id"])["delivery"]
        return delivery if delivery["state"] == wanted else None

    sent = await until(lambda: state("sent"), "the reply sent")
    [text] = [message for message in sms_provider.messages if message["sid"] == sent["provider_message_id"]]
    assert (text["To"], text["From"], text["Body"]) == (customer, line.number, "We do, in 5 days.")
    assert text["StatusCallback"] == line.url + "/status"

    forged = await helpdesk_stack.client.post(
        "/api/webhooks/sms/status",
        data={"MessageSid": text["sid"], "MessageStatus": "failed", "From": line.number},
        headers={"x-twilio-signature": "Zm9yZ2Vk"},
    )
    assert forged.status_code == 401
    assert await sms_provider.report(text["sid"], "delivered") == 204
    delivered = await until(lambda: state("delivered"), "the provider's report applied")
    assert delivered["last_error"] is None


async def test_a_reply_to_a_whatsapp_message_goes_back_on_it_and_the_provider_s_signed_statuses_move_its_state(
    helpdesk_stack: HelpdeskStack, graph_provider: GraphPeer
) -> None:
    channel = await app(helpdesk_stack, "business_messaging")
    customer = wa_id()
    asked = business_call(channel, contacts=[contact(customer, "Ada")], messages=[text(customer, "Is it in stock?")])
    assert (await channel.post(asked)).status_code == 200

    async def tickets() -> list[dict[str, Any]]:
        return (await helpdesk_stack.rest(channel.desk.key, "GET", "/tickets")).json()["data"]

    [ticket] = await until(tickets, "the message made a ticket")
    path = f"/tickets/{ticket['id']}/conversations"
    no_token = await helpdesk_stack.rest(channel.desk.key, "POST", path, json={"body": "Yes."})
    assert no_token.status_code == 409
    assert "has no send credentials (access_token)" in no_token.json()["error"]["message"]
    changed = await helpdesk_stack.rest(
        channel.desk.key,
        "PATCH",
        f"/channels/{channel.desk.channel_id}",
        json={"kind": "business_messaging", "secrets": {"access_token": GRAPH_TOKEN}},
    )
    assert changed.status_code == 200, changed.text
    made = await helpdesk_stack.rest(channel.desk.key, "POST", path, json={"body": "Yes, 12 left."})
    assert made.status_code == 201, made.text
    assert (made.json()["delivery"]["medium"], made.json()["delivery"]["recipient"]) == ("business_messaging", customer)

    async def state(wanted: str) -> dict[str, Any] | None:
        listed = (await helpdesk_stack.rest(channel.desk.key, "GET", path)).json()["data"]
        delivery = next(item for item in listed if item["id"] == made.json()["id"])["delivery"]
        return delivery if delivery["state"] == wanted else None

    sent = await until(lambda: state("sent"), "the reply sent")
    [message] = [found for found in graph_provider.messages if found["sent_id"] == sent["provider_message_id"]]
    assert (message["id"], message["json"]["to"], message["json"]["text"]["body"]) == (
        channel.address,
        customer,
        "Yes, 12 left.",
    )
    read = business_status(channel.address, message["sent_id"], "read", customer)
    assert (await channel.post(read)).status_code == 200
    await until(lambda: state("read"), "the provider's signed status applied")
