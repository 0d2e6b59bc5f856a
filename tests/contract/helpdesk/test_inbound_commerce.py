"""Section 4.6, "Commerce", through the running stack: a shop's orders and customer events, signed with
`x-commerce-hmac-sha256` (Base64 HMAC-SHA256 of the raw body under the channel's webhook secret), upsert the
customer and attach the order's facts; the privacy endpoint (signed with the app's API secret) exports a customer's
data to the blob store, and erases it so that nothing of it remains in any table or blob."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import JSON, LargeBinary, String, Text, func, select
from sqlalchemy.engine import Connection

from signalyard.services.helpdesk import BLOB_DIRECTORY, blob_store
from storage.helpdesk import inbound, orders
from storage.tables import METADATA
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until

PATH = "/api/webhooks/commerce"
PRIVACY_PATH = "/api/webhooks/commerce/gdpr"


def sign(secret: str, body: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


@dataclass
class Person:
    """A shop's customer whose every detail is unique to the test, so that a search finds only what is theirs."""

    shop_id: int
    first_name: str
    last_name: str
    email: str
    phone: str

    @classmethod
    def new(cls) -> Person:
        tag = uuid.uuid4().hex[:8]
        return cls(
            random.randint(10**11, 10**12),
            f"Zelda{tag}",
            f"Quartermain{tag}",
            f"zelda.{tag}@shopper.example",
            f"+1555{random.randint(10**6, 10**7 - 1)}",
        )

    def customer(self) -> dict[str, Any]:
        return {
            "id": self.shop_id,
            "email": self.email,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "phone": self.phone,
            "updated_at": "2026-03-01T10:00:00-05:00",
        }

    def order(self, order_id: int, *, updated_at: str = "2026-03-02T09:00:00-05:00", status: str = "paid") -> Any:
        return {
            "id": order_id,
            "name": f"#{order_id % 100000}",
            "email": self.email,
            "phone": self.phone,
            "total_price": "59.90",
            "currency": "EUR",
            "financial_status": status,
            "fulfillment_status": None,
            "created_at": "2026-03-02T08:59:00-05:00",
            "updated_at": updated_at,
            "customer": self.customer(),
            "shipping_address": {"name": f"{self.first_name} {self.last_name}", "address1": "1 Elm St"},
            "line_items": [{"title": "Teapot", "quantity": 2, "price": "29.95", "sku": "TEA-1"}],
        }


@dataclass
class Shop:
    stack: HelpdeskStack
    key: str
    organization_id: str
    domain: str
    webhook_secret: str
    api_secret: str
    channel_id: str

    async def post(
        self,
        topic: str,
        payload: Any,
        *,
        privacy: bool = False,
        webhook_id: str | None = "new",
        secret: str | None = None,
        body: bytes | None = None,
        domain: str | None = None,
    ) -> httpx.Response:
        raw = body if body is not None else json.dumps(payload).encode()
        secret = secret or (self.api_secret if privacy else self.webhook_secret)
        headers = {
            "Content-Type": "application/json",
            "x-commerce-topic": topic,
            "x-commerce-shop-domain": domain or self.domain,
            "x-commerce-hmac-sha256": sign(secret, raw),
            "x-commerce-api-version": "2026-01",
        }
        if webhook_id is not None:
            headers["x-commerce-webhook-id"] = str(uuid.uuid4()) if webhook_id == "new" else webhook_id
        return await self.stack.client.post(PRIVACY_PATH if privacy else PATH, content=raw, headers=headers)

    async def stored(self) -> int:
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == self.channel_id)
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))

    async def processed(self, count: int) -> list[dict[str, Any]]:
        """The channel's inbound messages, newest first, once `count` of them are processed."""

        async def done() -> list[dict[str, Any]]:
            listed = await self.stack.rest(self.key, "GET", "/inbound-messages", params={"channel_id": self.channel_id})
            messages = list(listed.json()["data"])
            return messages if sum(m["state"] == "processed" for m in messages) >= count else []

        return await until(done, f"{count} events of the shop processed")

    async def customer(self, email: str) -> dict[str, Any] | None:
        listed = await self.stack.rest(self.key, "GET", "/customers", params={"email": email})
        data = listed.json()["data"]
        return data[0] if data else None

    async def order(self, order_id: int) -> orders.OrderRecord | None:
        return await self.stack.db.read(orders.get, self.channel_id, str(order_id))


async def shop(stack: HelpdeskStack) -> Shop:
    domain = f"tea-{uuid.uuid4().hex[:8]}.myshop.example"
    secrets = {"webhook_secret": f"whs-{uuid.uuid4().hex}", "api_secret": f"api-{uuid.uuid4().hex}"}
    channel = {"kind": "commerce", "name": "Tea shop", "addresses": [domain], "secrets": secrets}
    async with signed_up(stack) as organization:
        made = await organization.rest("POST", "/channels", json=channel)
    assert made.status_code == 201, made.text
    webhook_secret, api_secret = secrets["webhook_secret"], secrets["api_secret"]
    return Shop(stack, organization.key, organization.id, domain, webhook_secret, api_secret, made.json()["id"])


async def test_an_order_upserts_its_customer_and_attaches_the_order_facts(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    answer = await store.post("customers/create", person.customer())
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    order_id = random.randint(10**11, 10**12)
    assert (await store.post("orders/create", person.order(order_id, status="pending"))).status_code == 200
    assert (await store.post("orders/updated", person.order(order_id, updated_at="2026-03-03T09:00:00Z"))).json() == {
        "status": "accepted"
    }

    messages = await store.processed(3)
    assert [(m["provider"], m["classification"]) for m in messages] == [
        ("commerce", "order"),
        ("commerce", "order"),
        ("commerce", "customer"),
    ]
    assert messages[0]["outcome"] == f"order #{order_id % 100000} attached to its customer"
    customer = await store.customer(person.email)
    assert customer is not None
    assert (customer["name"], customer["phone"]) == (f"{person.first_name} {person.last_name}", person.phone)
    order = await store.order(order_id)
    assert order is not None
    assert order.customer_id == customer["id"]
    assert order.details["financial_status"] == "paid"  # the update replaced the order's facts
    assert order.details["line_items"] == [{"title": "Teapot", "sku": "TEA-1", "quantity": 2, "price": "29.95"}]
    assert "shipping_address" not in order.details  # facts for agents, nothing personal


async def test_an_older_order_update_arriving_late_does_not_replace_newer_facts(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    order_id = random.randint(10**11, 10**12)
    await store.post(
        "orders/updated", person.order(order_id, updated_at="2026-03-05T10:00:00+01:00", status="refunded")
    )
    await store.processed(1)
    await store.post("orders/updated", person.order(order_id, updated_at="2026-03-05T08:30:00Z", status="paid"))
    [latest, _] = await store.processed(2)
    assert latest["outcome"] == f"order #{order_id % 100000} unchanged: an older update"
    order = await store.order(order_id)
    assert order is not None
    assert order.details["financial_status"] == "refunded"


async def test_a_customer_update_changes_the_customers_details(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    await store.post("customers/create", person.customer())
    await store.processed(1)
    changed = person.customer() | {"first_name": "Zora", "phone": "+15550009999"}
    await store.post("customers/update", changed)
    await store.processed(2)
    customer = await store.customer(person.email)
    assert customer is not None
    assert (customer["name"], customer["phone"]) == (f"Zora {person.last_name}", "+15550009999")


async def test_a_wrong_signature_is_401_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    wrong = await store.post("customers/create", person.customer(), secret="not-the-secret")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    # the privacy endpoint is signed with the API secret, not the webhook secret
    swapped = await store.post(
        "customers/redact", {"customer": person.customer()}, privacy=True, secret=store.webhook_secret
    )
    assert swapped.status_code == 401
    raw = json.dumps(person.customer()).encode()
    unsigned = await helpdesk_stack.client.post(
        PATH, content=raw, headers={"x-commerce-topic": "customers/create", "x-commerce-shop-domain": store.domain}
    )
    assert unsigned.status_code == 401
    assert await store.stored() == 0


async def test_a_shop_no_channel_receives_for_is_404_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    store = await shop(helpdesk_stack)
    answer = await store.post("customers/create", Person.new().customer(), domain="elsewhere.myshop.example")
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    assert await store.stored() == 0


async def test_a_retried_delivery_is_acknowledged_and_stores_nothing_new(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    webhook_id = str(uuid.uuid4())
    assert (await store.post("customers/create", person.customer(), webhook_id=webhook_id)).json() == {
        "status": "accepted"
    }
    assert (await store.post("customers/create", person.customer(), webhook_id=webhook_id)).json() == {
        "status": "duplicate"
    }
    # without a webhook id: the topic, the resource's id and its updated_at tell a retry apart
    order = person.order(random.randint(10**11, 10**12))
    assert (await store.post("orders/create", order, webhook_id=None)).json() == {"status": "accepted"}
    assert (await store.post("orders/create", order, webhook_id=None)).json() == {"status": "duplicate"}
    assert await store.stored() == 2
    messages = await store.processed(2)
    assert {m["dedup_key"] for m in messages} == {webhook_id, f"orders/create:{order['id']}:{order['updated_at']}"}


async def test_a_malformed_body_or_an_unknown_topic_is_400_and_stores_nothing(helpdesk_stack: HelpdeskStack) -> None:
    store = await shop(helpdesk_stack)
    not_json = await store.post("orders/create", None, body=b"{not json")
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_request")
    not_object = await store.post("orders/create", [1, 2])
    assert (not_object.status_code, not_object.json()["error"]["message"]) == (
        400,
        "The body is malformed: Expected `object`, got `array`",
    )
    unknown = await store.post("products/create", {"id": 1})
    assert unknown.status_code == 400
    assert "products/create" in unknown.json()["error"]["message"]
    privacy_topic_on_events = await store.post("customers/redact", {"customer": {"id": 1}})
    assert privacy_topic_on_events.status_code == 400
    no_shop = await helpdesk_stack.client.post(PATH, content=b"{}", headers={"x-commerce-topic": "orders/create"})
    assert no_shop.status_code == 400
    assert await store.stored() == 0


async def read_blob(stack: HelpdeskStack, key: str) -> bytes:
    blobs = blob_store(stack.settings.platform, stack.settings.services["helpdesk"])
    try:
        return await blobs.get(key)
    finally:
        await blobs.close()


async def test_a_data_request_exports_everything_held_about_the_customer(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    order_id = random.randint(10**11, 10**12)
    await store.post("orders/create", person.order(order_id))
    made = await helpdesk_stack.rest(
        store.key,
        "POST",
        "/tickets",
        json={"subject": "Where is my teapot?", "customer_email": person.email, "message": "Ordered two."},
    )
    assert made.status_code == 201
    request = {
        "shop_id": 1,
        "shop_domain": store.domain,
        "orders_requested": [order_id],
        "customer": {"id": person.shop_id, "email": person.email, "phone": person.phone},
        "data_request": {"id": 9001},
    }
    assert (await store.post("customers/data_request", request, privacy=True)).json() == {"status": "accepted"}

    [exported, _] = await store.processed(2)
    assert (exported["provider"], exported["classification"]) == ("commerce_privacy", "data_request")
    assert exported["outcome"].startswith("export stored: helpdesk/")
    key = exported["outcome"].removeprefix("export stored: ")
    data = json.loads(await read_blob(helpdesk_stack, key))
    assert data["customer"]["email"] == person.email
    assert data["customer"]["name"] == f"{person.first_name} {person.last_name}"
    assert {"kind": "shop", "value": f"{store.domain}:{person.shop_id}"} in data["identities"]
    assert [order["order_id"] for order in data["orders"]] == [str(order_id)]
    [ticket] = data["tickets"]
    assert ticket["subject"] == "Where is my teapot?"
    assert [c["body"] for c in ticket["conversations"]] == ["Ordered two."]
    assert data["request"]["data_request_id"] == 9001


def _rows_mentioning(connection: Connection, needles: list[str]) -> list[str]:
    """table.column of every row, in every table, whose text (strings, JSON, raw bytes) holds one of `needles`."""
    found = []
    lowered = [needle.lower() for needle in needles]
    for table in METADATA.sorted_tables:
        columns = [c for c in table.columns if isinstance(c.type, String | Text | JSON | LargeBinary)]
        if not columns:
            continue
        for row in connection.execute(select(*columns)):
            for column, value in zip(columns, row, strict=True):
                if value is None:
                    continue
                if isinstance(value, bytes):
                    text = value.decode("utf-8", "replace")
                elif isinstance(value, str):
                    text = value
                else:
                    text = json.dumps(value, ensure_ascii=False)
                hits = [needle for needle in lowered if needle in text.lower()]
                if hits:
                    found.append(f"{table.name}.{column.name}: {hits}")
    return found


def _blobs_mentioning(root: Path, needles: list[str]) -> list[str]:
    lowered = [needle.lower().encode() for needle in needles]
    return [
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and any(needle in path.read_bytes().lower() for needle in lowered)
    ]


async def test_a_customer_redaction_leaves_nothing_of_them_in_any_table_or_blob(helpdesk_stack: HelpdeskStack) -> None:
    store, person = await shop(helpdesk_stack), Person.new()
    needles = [person.email, person.first_name, person.last_name, person.phone]
    order_id = random.randint(10**11, 10**12)
    await store.post("customers/create", person.customer())
    await store.post("orders/create", person.order(order_id))
    made = await helpdesk_stack.rest(
        store.key,
        "POST",
        "/tickets",
        json={
            "subject": f"Teapot for {person.first_name}",
            "customer_email": person.email,
            "message": f"Call me on {person.phone}, {person.first_name} {person.last_name}",
        },
    )
    assert made.status_code == 201
    ticket_id = made.json()["id"]
    reply = await helpdesk_stack.rest(
        store.key, "POST", f"/tickets/{ticket_id}/conversations", json={"body": f"Hi {person.first_name}!"}
    )
    assert reply.status_code == 201, reply.text
    request = {"customer": {"id": person.shop_id, "email": person.email, "phone": person.phone}}
    await store.post("customers/data_request", request | {"data_request": {"id": 1}}, privacy=True)
    await store.processed(3)
    before = await helpdesk_stack.db.read(_rows_mentioning, needles)
    assert any(place.startswith("helpdesk_customers.") for place in before)  # the search finds what is there
    blob_root = Path(helpdesk_stack.settings.platform.data_dir) / BLOB_DIRECTORY
    assert _blobs_mentioning(blob_root, needles)  # the export

    redact = request | {"shop_id": 1, "shop_domain": store.domain, "orders_to_redact": [order_id]}
    assert (await store.post("customers/redact", redact, privacy=True)).json() == {"status": "accepted"}
    [erased, *_] = await store.processed(4)
    assert (erased["classification"], erased["outcome"].split(",")[0]) == ("redact", "erased: 1 customer(s)")

    assert await helpdesk_stack.db.read(_rows_mentioning, needles) == []
    assert _blobs_mentioning(blob_root, needles) == []
    # the organization keeps its records: the ticket and its number, the customer as redacted
    ticket = (await helpdesk_stack.rest(store.key, "GET", f"/tickets/{ticket_id}")).json()
    assert (ticket["subject"], ticket["customer_email"]) == ("(redacted)", None)
    customer = (await helpdesk_stack.rest(store.key, "GET", f"/customers/{ticket['customer_id']}")).json()
    assert (customer["name"], customer["email"], customer["phone"]) == ("Redacted customer", None, None)
    assert await store.order(order_id) is None


async def test_a_shop_redaction_erases_every_customer_the_shop_named(helpdesk_stack: HelpdeskStack) -> None:
    store, first, second = await shop(helpdesk_stack), Person.new(), Person.new()
    await store.post("customers/create", first.customer())
    await store.post("orders/create", second.order(random.randint(10**11, 10**12)))
    await store.processed(2)
    shop_redact = {"shop_id": 1, "shop_domain": store.domain}
    assert (await store.post("shop/redact", shop_redact, privacy=True)).json() == {"status": "accepted"}
    [erased, *_] = await store.processed(3)
    assert erased["outcome"].startswith("erased: 2 customer(s), 0 ticket(s), 1 order(s), 3 inbound event(s)")
    needles = [first.email, first.phone, second.email, second.phone, first.last_name, second.last_name]
    assert await helpdesk_stack.db.read(_rows_mentioning, needles) == []


async def test_the_agent_app_shows_a_customers_orders_beside_their_ticket(helpdesk_stack: HelpdeskStack) -> None:
    """What the shop told of an order, on the customer's page and beside their ticket in the agent app."""
    domain = f"tea-{uuid.uuid4().hex[:8]}.myshop.example"
    secrets = {"webhook_secret": f"whs-{uuid.uuid4().hex}", "api_secret": f"api-{uuid.uuid4().hex}"}
    channel = {"kind": "commerce", "name": "Tea shop", "addresses": [domain], "secrets": secrets}
    async with signed_up(helpdesk_stack) as org:
        made = await org.rest("POST", "/channels", json=channel)
        assert made.status_code == 201, made.text
        store = Shop(
            helpdesk_stack, org.key, org.id, domain, secrets["webhook_secret"], secrets["api_secret"], made.json()["id"]
        )
        person, order_id = Person.new(), random.randint(10**11, 10**12)
        assert (await store.post("orders/create", person.order(order_id, status="pending"))).status_code == 200
        await store.processed(1)
        customer = await store.customer(person.email)
        assert customer is not None
        ticket = await org.rest("POST", "/tickets", json={"subject": "Where is my tea?", "customer_id": customer["id"]})
        assert ticket.status_code == 201, ticket.text
        for path in (f"/customers/{customer['id']}", f"/tickets/{ticket.json()['id']}"):
            page = await org.browser.client.get(path)
            assert page.status_code == 200, path
            listed = re.sub(r"\s+", " ", page.text)
            assert f"Order #{order_id % 100000}</strong>: 59.90 EUR · pending · not shipped" in listed, path
            assert "2 \u00d7 Teapot" in listed, path  # 2 times Teapot
