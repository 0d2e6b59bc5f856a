"""The email sending provider's events (section 4.6; the format is docs/helpdesk.md's, "Email sending provider"),
through the running stack, on both paths (`/api/webhooks/email-provider` and the legacy `/api/webhooks/email`): a
JSON array of SendGrid-shaped events, routed by the channel's token in the URL and, when the channel has the
provider's public key, signed with ECDSA over the timestamp and the raw body. A bounce or a complaint marks the
address bouncing and notes it on the ticket of the mail it concerns; a delivery is recorded."""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import func, select

from storage.helpdesk import inbound, tickets
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until

PATH = "/api/webhooks/email-provider"
LEGACY_PATH = "/api/webhooks/email"
SIGNATURE = "x-vendor-email-event-webhook-signature"
TIMESTAMP = "x-vendor-email-event-webhook-timestamp"


def provider_event(kind: str, email: str, message_id: str, **extra: Any) -> dict[str, Any]:
    """One event as SendGrid's Event Webhook sends it."""
    return {
        "email": email,
        "timestamp": int(time.time()),
        "smtp-id": f"<{message_id}>",
        "event": kind,
        "category": ["helpdesk"],
        "sg_event_id": uuid.uuid4().hex,
        "sg_message_id": f"{uuid.uuid4().hex[:22]}.filter0001.16648.5515E0B88.0",
    } | extra


@dataclass
class Provider:
    stack: HelpdeskStack
    key: str
    organization_id: str
    token: str
    channel_id: str
    signing_key: ec.EllipticCurvePrivateKey | None

    async def post(
        self,
        events: Any,
        *,
        path: str = PATH,
        token: str | None = None,
        body: bytes | None = None,
        timestamp: int | None = None,
        signing_key: ec.EllipticCurvePrivateKey | None = None,
    ) -> httpx.Response:
        raw = body if body is not None else json.dumps(events).encode()
        headers = {"Content-Type": "application/json"}
        key = signing_key or self.signing_key
        if key is not None:
            at = str(int(time.time()) if timestamp is None else timestamp)
            signature = key.sign(at.encode() + raw, ec.ECDSA(hashes.SHA256()))
            headers |= {TIMESTAMP: at, SIGNATURE: base64.b64encode(signature).decode()}
        return await self.stack.client.post(path, params={"token": token or self.token}, content=raw, headers=headers)

    async def stored(self) -> int:
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == self.channel_id)
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))

    async def processed(self, count: int) -> list[dict[str, Any]]:
        async def done() -> list[dict[str, Any]]:
            listed = await self.stack.rest(self.key, "GET", "/inbound-messages", params={"channel_id": self.channel_id})
            messages = list(listed.json()["data"])
            return messages if sum(m["state"] == "processed" for m in messages) >= count else []

        return await until(done, f"{count} provider events processed")

    async def mailed_reply(self, email: str) -> tuple[str, str]:
        """A ticket of the customer and the reply the helpdesk mailed on it: (ticket id, the mail's Message-ID)."""
        made = await self.stack.rest(
            self.key, "POST", "/tickets", json={"subject": "Your refund", "customer_email": email, "message": "Hi"}
        )
        ticket_id = made.json()["id"]
        message_id = f"reply-{uuid.uuid4().hex}@helpdesk.example"

        def reply(connection: Any) -> None:
            ticket = tickets.get(connection, self.organization_id, ticket_id)
            assert ticket is not None
            tickets.add_conversation(
                connection,
                ticket,
                author_type="agent",
                author_id=None,
                body="Your refund is on its way.",
                internal=False,
                message_id=message_id,
                now=datetime.now(UTC),
                recorded=[],
            )

        await self.stack.db.write(reply)
        return ticket_id, message_id


async def provider(stack: HelpdeskStack, *, signed: bool = True) -> Provider:
    signing_key = ec.generate_private_key(ec.SECP256R1()) if signed else None
    secrets = {}
    if signing_key is not None:  # as the provider shows it: base64 DER
        der = signing_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        secrets["public_key"] = base64.b64encode(der).decode()
    async with signed_up(stack) as organization:
        made = await organization.rest(
            "POST", "/channels", json={"kind": "email_provider", "name": "Outbound mail", "secrets": secrets}
        )
    assert made.status_code == 201, made.text
    channel = made.json()
    return Provider(stack, organization.key, organization.id, channel["secrets"]["token"], channel["id"], signing_key)


@pytest.mark.parametrize("path", [PATH, LEGACY_PATH])
async def test_a_bounce_marks_the_address_bouncing_and_is_noted_on_the_ticket_of_its_mail(
    helpdesk_stack: HelpdeskStack, path: str
) -> None:
    sender = await provider(helpdesk_stack)
    email = f"gone.{uuid.uuid4().hex[:8]}@example.com"
    ticket_id, message_id = await sender.mailed_reply(email)
    bounce = provider_event(
        "bounce", email, message_id, reason="550 5.1.1 The email account does not exist", status="5.1.1", type="bounce"
    )
    delivered = provider_event("delivered", f"other.{uuid.uuid4().hex[:6]}@example.com", message_id)
    answer = await sender.post([bounce, delivered], path=path)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted", "accepted": 2, "duplicates": 0})

    messages = {m["dedup_key"]: m for m in await sender.processed(2)}
    noted = messages[bounce["sg_event_id"]]
    assert (noted["provider"], noted["classification"], noted["ticket_id"]) == ("email_provider", "bounce", ticket_id)
    assert noted["outcome"] == "bounce noted on its ticket; address marked bouncing"
    recorded = messages[delivered["sg_event_id"]]
    assert (recorded["classification"], recorded["outcome"], recorded["ticket_id"]) == (
        "delivery",
        "delivered",
        ticket_id,
    )
    conversations = (await helpdesk_stack.rest(sender.key, "GET", f"/tickets/{ticket_id}/conversations")).json()
    note = conversations["data"][0]
    assert note["internal"] is True
    assert note["body"].startswith(f"Delivery failed to {email} (5.1.1): 550 5.1.1 The email account does not exist")
    customer = (await helpdesk_stack.rest(sender.key, "GET", "/customers", params={"email": email})).json()["data"][0]
    assert customer["bouncing"] is True


async def test_a_complaint_marks_the_address_and_says_so_on_the_ticket(helpdesk_stack: HelpdeskStack) -> None:
    sender = await provider(helpdesk_stack, signed=False)  # a channel without the provider's key: the token alone
    email = f"annoyed.{uuid.uuid4().hex[:8]}@example.com"
    ticket_id, message_id = await sender.mailed_reply(email)
    assert (await sender.post([provider_event("spamreport", email, message_id)])).status_code == 200
    [complaint] = await sender.processed(1)
    assert (complaint["classification"], complaint["ticket_id"]) == ("complaint", ticket_id)
    conversations = (await helpdesk_stack.rest(sender.key, "GET", f"/tickets/{ticket_id}/conversations")).json()
    assert conversations["data"][0]["body"].startswith(f"Complaint: {email} reported the mail as spam")
    customer = (await helpdesk_stack.rest(sender.key, "GET", "/customers", params={"email": email})).json()["data"][0]
    assert customer["bouncing"] is True


async def test_a_wrong_token_or_signature_is_refused_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    sender = await provider(helpdesk_stack)
    events = [provider_event("delivered", "a@example.com", "m@helpdesk.example")]
    unknown = await sender.post(events, token="not-a-token")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    forged = await sender.post(events, signing_key=ec.generate_private_key(ec.SECP256R1()))
    assert (forged.status_code, forged.json()["error"]["code"]) == (401, "unauthorized")
    unsigned = await helpdesk_stack.client.post(PATH, params={"token": sender.token}, json=events)
    assert unsigned.status_code == 401
    no_token = await helpdesk_stack.client.post(PATH, json=events)
    assert no_token.status_code == 404
    assert await sender.stored() == 0


async def test_a_replayed_timestamp_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    sender = await provider(helpdesk_stack)
    events = [provider_event("delivered", "a@example.com", "m@helpdesk.example")]
    replayed = await sender.post(events, timestamp=int(time.time()) - 301)
    assert (replayed.status_code, replayed.json()["error"]["code"]) == (401, "unauthorized")
    assert await sender.stored() == 0


async def test_a_retried_batch_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    sender = await provider(helpdesk_stack)
    first = provider_event("delivered", "a@example.com", "m1@helpdesk.example")
    second = provider_event("deferred", "b@example.com", "m2@helpdesk.example")
    assert (await sender.post([first, second])).json() == {"status": "accepted", "accepted": 2, "duplicates": 0}
    assert (await sender.post([first, second])).json() == {"status": "duplicate", "accepted": 0, "duplicates": 2}
    # regrouped with a new event, on the legacy path: only the new one is stored
    third = provider_event("open", "a@example.com", "m1@helpdesk.example")
    regrouped = await sender.post([second, third], path=LEGACY_PATH)
    assert regrouped.json() == {"status": "accepted", "accepted": 1, "duplicates": 1}
    assert await sender.stored() == 3


async def test_a_malformed_body_is_400_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    sender = await provider(helpdesk_stack)
    not_json = await sender.post(None, body=b"[{not json")
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_request")
    assert (await sender.post({"event": "delivered", "email": "a@example.com"})).status_code == 400  # not an array
    assert (await sender.post([])).status_code == 400
    no_email = await sender.post([{"event": "delivered", "email": "a@example.com"}, {"event": "delivered"}])
    assert (no_email.status_code, no_email.json()["error"]["message"]) == (
        400,
        "Event 1 is malformed: Object missing required field `email`",
    )
    assert await sender.stored() == 0
