"""Section 4.6, "Marketplace": notifications in the shape of Amazon SNS's, from a local SNS-shaped peer that signs
them (versions 1 and 2) and serves its signing certificate and its SubscribeURL over HTTPS as
`sns.us-east-1.amazonaws.com`. The helpdesk's gateway app is the real one, given an `SnsClient` that dials that name
to the peer (its resolver and TLS trust are the only things a test changes; the host check is production's); what
it stores is processed by the shared stack's processors."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import httpx
import pytest
from sqlalchemy import func, select

from gateway.common.app import GatewayApp
from gateway.helpdesk import docs
from gateway.helpdesk.app import INBOUND_ROUTES, MAX_BODY_BYTES
from gateway.helpdesk.auth import HelpdeskAuthenticator
from gateway.helpdesk.errors import EXCEPTION_HANDLERS
from gateway.helpdesk.inbound import marketplace
from gateway.helpdesk.inbound.common import Inbound
from gateway.helpdesk.inbound.marketplace import SnsClient, UntrustedUrl, sns_url
from signalyard import secrets
from storage.helpdesk import inbound, orders
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until
from tests.peers.sns import SnsPeer

PATH = "/api/marketplace/webhook"
Gateway = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def sns() -> Iterator[SnsPeer]:
    with SnsPeer() as peer:
        yield peer


@pytest.fixture
def gateway(helpdesk_stack: HelpdeskStack, sns: SnsPeer) -> Gateway:
    """The helpdesk gateway's app (its inbound routes, error envelope and authentication step) on the stack's database
    and topics, its SnsClient dialling the SNS host to the peer: `async with gateway() as client: ...`."""

    @asynccontextmanager
    async def serve(*, allow_private: bool = True) -> AsyncIterator[httpx.AsyncClient]:
        async def publish(messages: Sequence[tuple[Any, bytes]]) -> None:
            topic = helpdesk_stack.topics.inbound
            await helpdesk_stack.platform.publish_together([(message, topic, key) for message, key in messages])

        client = SnsClient(allow_private=allow_private, tls=sns.client_tls, resolve=sns.resolve)
        received = Inbound(
            helpdesk_stack.db,
            secrets.secrets_cipher(helpdesk_stack.settings.platform),
            publish,
            providers={marketplace.PROVIDER: client},
        )
        app = GatewayApp("helpdesk", INBOUND_ROUTES, docs.DOCUMENT, EXCEPTION_HANDLERS, MAX_BODY_BYTES).build(
            given={"inbound": received}, authenticator=HelpdeskAuthenticator(helpdesk_stack.db, None), readiness={}
        )
        transport = httpx.ASGITransport(app=cast(Any, app))
        async with httpx.AsyncClient(transport=transport, base_url="http://helpdesk.test") as http:
            yield http

    return serve


@dataclass
class Marketplace:
    stack: HelpdeskStack
    key: str
    topic_arn: str
    channel_id: str

    async def stored(self) -> int:
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == self.channel_id)
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))

    async def processed(self, count: int) -> list[dict[str, Any]]:
        async def done() -> list[dict[str, Any]]:
            listed = await self.stack.rest(self.key, "GET", "/inbound-messages", params={"channel_id": self.channel_id})
            messages = list(listed.json()["data"])
            return messages if sum(m["state"] == "processed" for m in messages) >= count else []

        return await until(done, f"{count} notifications processed")


async def channel(stack: HelpdeskStack) -> Marketplace:
    topic_arn = f"arn:aws:sns:us-east-1:123456789012:orders-{uuid.uuid4().hex[:8]}"
    async with signed_up(stack) as organization:
        made = await organization.rest(
            "POST", "/channels", json={"kind": "marketplace", "name": "Marketplace", "addresses": [topic_arn]}
        )
    assert made.status_code == 201, made.text
    return Marketplace(stack, organization.key, topic_arn, made.json()["id"])


def order(order_id: str, buyer_id: str, **extra: Any) -> str:
    return json.dumps(
        {
            "type": "order",
            "marketplace": "amazon.com",
            "order_id": order_id,
            "status": "Shipped",
            "buyer": {"id": buyer_id, "email": f"{buyer_id.lower()}@marketplace.example", "name": "Bo Buyer"},
            "items": [{"sku": "TEA-1", "title": "Teapot", "quantity": 1, "price": "29.95"}],
            "total": {"amount": "29.95", "currency": "USD"},
            "updated_at": "2026-03-02T09:00:00Z",
        }
        | extra
    )


def returned(order_id: str, return_id: str, buyer_id: str, status: str = "Requested") -> str:
    return json.dumps(
        {
            "type": "return",
            "marketplace": "amazon.com",
            "order_id": order_id,
            "return_id": return_id,
            "status": status,
            "reason": "Damaged in transit",
            "comment": "The spout arrived broken.",
            "buyer": {"id": buyer_id, "name": "Bo Buyer"},
            "updated_at": "2026-03-04T09:00:00Z",
        }
    )


async def post(http: httpx.AsyncClient, body: bytes, kind: str = "Notification") -> httpx.Response:
    headers = {"Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": kind}
    return await http.post(PATH, content=body, headers=headers)


async def test_a_subscription_confirmation_is_confirmed_through_its_subscribe_url(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    body = sns.confirmation(market.topic_arn, version=1)
    async with gateway() as http:
        answer = await post(http, body, "SubscriptionConfirmation")
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    assert sns.confirmed == [(market.topic_arn, json.loads(body)["Token"])]
    [recorded] = await market.processed(1)
    assert (recorded["classification"], recorded["outcome"]) == ("subscription_confirmation", "subscription confirmed")


@pytest.mark.parametrize("version", [1, 2])
async def test_an_order_notification_attaches_the_order_to_its_buyer(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer, version: int
) -> None:
    market = await channel(helpdesk_stack)
    order_id, buyer_id = f"114-{uuid.uuid4().hex[:7]}", f"A{uuid.uuid4().hex[:10].upper()}"
    async with gateway() as http:
        body = sns.notification(market.topic_arn, order(order_id, buyer_id), subject="Order shipped", version=version)
        answer = await post(http, body)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    [made] = await market.processed(1)
    assert (made["provider"], made["classification"]) == ("marketplace", "order")
    assert made["outcome"] == f"order {order_id} attached to its buyer"
    stored = await helpdesk_stack.db.read(orders.get, market.channel_id, order_id)
    assert stored is not None
    assert (stored.details["status"], stored.details["total"]) == ("Shipped", {"amount": "29.95", "currency": "USD"})
    email = f"{buyer_id.lower()}@marketplace.example"
    [customer] = (await helpdesk_stack.rest(market.key, "GET", "/customers", params={"email": email})).json()["data"]
    assert (customer["id"], customer["name"]) == (stored.customer_id, "Bo Buyer")


async def test_a_return_opens_a_ticket_and_its_later_notifications_are_notes_on_it(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    order_id, return_id, buyer_id = f"114-{uuid.uuid4().hex[:7]}", f"R{uuid.uuid4().hex[:6]}", "ABUYER1"
    async with gateway() as http:
        assert (
            await post(http, sns.notification(market.topic_arn, returned(order_id, return_id, buyer_id)))
        ).json() == {"status": "accepted"}
        [opened] = await market.processed(1)
        received = returned(order_id, return_id, buyer_id, status="Received")
        assert (await post(http, sns.notification(market.topic_arn, received))).status_code == 200
    [noted, _] = await market.processed(2)
    assert (opened["classification"], opened["outcome"]) == ("return", "new ticket")
    ticket = (await helpdesk_stack.rest(market.key, "GET", f"/tickets/{opened['ticket_id']}")).json()
    assert ticket["subject"] == f"Return {return_id} for order {order_id}: Damaged in transit"
    assert (ticket["channel"], ticket["tags"]) == ("marketplace", ["return"])
    assert (noted["ticket_id"], noted["outcome"]) == (ticket["id"], "noted on its return's ticket")
    conversations = (await helpdesk_stack.rest(market.key, "GET", f"/tickets/{ticket['id']}/conversations")).json()
    assert [(c["body"], c["internal"]) for c in conversations["data"]] == [
        (f"Return {return_id} of order {order_id} is now Received: Damaged in transit", True),
        ("The spout arrived broken.", False),
    ]
    stored = await helpdesk_stack.db.read(orders.get, market.channel_id, order_id)
    assert stored is not None
    assert stored.details["returns"][return_id]["status"] == "Received"


async def test_the_signing_certificate_is_fetched_once_and_cached(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    async with gateway() as http:
        bodies = [sns.notification(market.topic_arn, order(f"114-{n}", "ABUYER2")) for n in range(3)]
        answers = await asyncio.gather(*(post(http, body) for body in bodies))
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert sns.certificate_fetches == 1


async def test_a_bad_signature_is_401_and_stores_nothing(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    tampered = json.loads(sns.notification(market.topic_arn, order("114-1", "ABUYER3")))
    tampered["Message"] = order("114-1", "ABUYER3", total={"amount": "0.01", "currency": "USD"})
    with SnsPeer() as impostor:  # signed by another key, claiming the real certificate
        forged = impostor.sign(
            json.loads(sns.notification(market.topic_arn, order("114-2", "ABUYER3"))),
            certificate_url=sns.certificate_url,
        )
    async with gateway() as http:
        for body in (json.dumps(tampered).encode(), forged):
            answer = await post(http, body)
            assert (answer.status_code, answer.json()["error"]["code"]) == (401, "unauthorized")
    assert await market.stored() == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://sns.us-east-1.amazonaws.com/cert.pem",
        "https://sns.us-east-1.amazonaws.com.evil.example/cert.pem",
        "https://evil.example/sns.us-east-1.amazonaws.com/cert.pem",
        "https://sns.us-east-1.amazonaws.com:8443/cert.pem",
        "https://someone@sns.us-east-1.amazonaws.com/cert.pem",
        "https://sqs.us-east-1.amazonaws.com/cert.pem",
        "https://deep.sns.us-east-1.amazonaws.com/cert.pem",
        "https://sns.us-east-1.amazonaws.com./cert.pem",
    ],
)
def test_a_certificate_url_that_is_not_https_on_an_sns_region_host_is_untrusted(url: str) -> None:
    with pytest.raises(UntrustedUrl):
        sns_url(url)
    assert sns_url("https://sns.eu-west-3.amazonaws.com/SimpleNotificationService-abc.pem")


async def test_a_certificate_url_off_sns_is_refused_before_anything_is_fetched(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    message = json.loads(sns.notification(market.topic_arn, order("114-3", "ABUYER4")))
    elsewhere = sns.sign(
        message, certificate_url=f"https://sns.us-east-1.amazonaws.com.evil.example{sns.certificate_path}"
    )
    off_host = sns.confirmation(market.topic_arn, subscribe_url="https://evil.example/?Action=ConfirmSubscription")
    async with gateway() as http:
        refused = await post(http, elsewhere)
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "unauthorized")
        assert (await post(http, off_host, "SubscriptionConfirmation")).status_code == 401
    assert sns.confirmed == []
    assert await market.stored() == 0


async def test_a_replayed_timestamp_is_401_and_stores_nothing(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    old = sns.notification(
        market.topic_arn, order("114-4", "ABUYER5"), timestamp=datetime.now(UTC) - timedelta(hours=2)
    )
    async with gateway() as http:
        answer = await post(http, old)
    assert (answer.status_code, answer.json()["error"]["code"]) == (401, "unauthorized")
    assert "replay" in answer.json()["error"]["message"]
    assert await market.stored() == 0


async def test_a_redelivered_message_is_acknowledged_and_stores_nothing_new(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    body = sns.notification(market.topic_arn, order("114-5", "ABUYER6"))
    async with gateway() as http:
        assert (await post(http, body)).json() == {"status": "accepted"}
        assert (await post(http, body)).json() == {"status": "duplicate"}
    assert await market.stored() == 1


async def test_a_topic_off_the_allow_list_is_404_before_anything_is_fetched(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    stranger = "arn:aws:sns:us-east-1:999999999999:someone-elses-topic"
    async with gateway() as http:
        answer = await post(http, sns.notification(stranger, order("114-6", "ABUYER7")))
        confirmation = await post(http, sns.confirmation(stranger), "SubscriptionConfirmation")
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    assert confirmation.status_code == 404
    assert (sns.certificate_fetches, sns.confirmed) == (0, [])
    assert await market.stored() == 0


async def test_a_malformed_body_is_400_and_stores_nothing(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    async with gateway() as http:
        not_json = await post(http, b"{not json")
        assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_request")
        unknown_type = await post(http, json.dumps({"Type": "Announcement", "TopicArn": market.topic_arn}).encode())
        assert unknown_type.status_code == 400
        unsigned = json.loads(sns.notification(market.topic_arn, order("114-7", "ABUYER8")))
        del unsigned["Signature"]
        refused = await post(http, json.dumps(unsigned).encode())
        assert (refused.status_code, refused.json()["error"]["message"]) == (
            400,
            "The body is malformed: Object missing required field `Signature`",
        )
        not_an_order = await post(http, sns.notification(market.topic_arn, "Hello, world"))  # signed, but not JSON
        assert not_an_order.status_code == 400
        no_order_id = await post(http, sns.notification(market.topic_arn, json.dumps({"type": "order"})))
        assert (no_order_id.status_code, no_order_id.json()["error"]["message"]) == (
            400,
            "The notification's Message is malformed: Object missing required field `order_id`",
        )
        wrong_header = await post(
            http, sns.notification(market.topic_arn, order("114-8", "B")), "SubscriptionConfirmation"
        )
        assert wrong_header.status_code == 400
    assert await market.stored() == 0


async def test_the_address_policy_applies_and_a_failed_fetch_or_confirmation_is_503_and_stores_nothing(
    helpdesk_stack: HelpdeskStack, gateway: Gateway, sns: SnsPeer
) -> None:
    market = await channel(helpdesk_stack)
    body = sns.notification(market.topic_arn, order("114-9", "ABUYER9"))
    async with gateway(allow_private=False) as http:  # production's policy: the peer is on a loopback address
        refused = await post(http, body)
    assert (refused.status_code, refused.json()["error"]["code"]) == (503, "unavailable")
    assert sns.certificate_fetches == 0
    sns.fail_confirmations = 1
    confirmation = sns.confirmation(market.topic_arn)
    async with gateway() as http:
        failed = await post(http, confirmation, "SubscriptionConfirmation")
        assert failed.status_code == 503
        assert await market.stored() == 0
        retried = await post(http, confirmation, "SubscriptionConfirmation")  # SNS retries the delivery
        assert retried.json() == {"status": "accepted"}
    assert len(sns.confirmed) == 1
    assert await market.stored() == 1
