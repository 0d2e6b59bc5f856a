"""A shop's events (gateway/helpdesk/inbound/commerce.py): orders and customers upsert the customer (known by the shop's
customer id, identity `shop` `<shop domain>:<id>`, and by address) and attach the order's facts (storage
helpdesk_orders); no ticket. The privacy topics: `customers/data_request` exports everything held about the customer
to the blob store (its key in the event's outcome), `customers/redact` and `shop/redact` erase the personal data
(storage/helpdesk/orders.py `erase`), the blobs first."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.service import Apply, Context, failed, put_blob
from storage.helpdesk import customers, orders
from storage.helpdesk.customers import CustomerRecord
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import SHOP_EVENTS, SHOP_PRIVACY_EVENTS, ShopCustomer, ShopOrder, ShopPrivacyRequest

IDENTITY = "shop"
_ORDER_FIELDS = (
    "name",
    "order_number",
    "total_price",
    "subtotal_price",
    "total_tax",
    "currency",
    "financial_status",
    "fulfillment_status",
    "cancelled_at",
    "cancel_reason",
    "closed_at",
    "created_at",
    "updated_at",
)
"""An order's facts kept: what an agent needs to answer about it, and nothing personal (addresses, notes and the
customer's details live on the customer, or nowhere)."""


def _text(value: str | None, limit: int) -> str | None:
    return str(value).strip()[:limit] or None if value is not None else None


def instant(value: Any) -> datetime | None:
    """An ISO 8601 time with its offset (Shopify's `2024-05-01T10:00:00-04:00`), as UTC; None when unreadable."""
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)


def order_facts(order: ShopOrder, topic: str) -> dict[str, Any]:
    given = msgspec.to_builtins(order)
    facts = {name: given[name] for name in _ORDER_FIELDS if given[name] is not None}
    facts["line_items"] = given["line_items"]
    facts["source"] = "commerce"
    facts["topic"] = topic
    return facts


def newer_or_same(stored: dict[str, Any], incoming: dict[str, Any]) -> bool:
    """Whether an order's incoming facts are as new as the stored ones (by `updated_at`; unknown: yes)."""
    before, after = instant(stored.get("updated_at")), instant(incoming.get("updated_at"))
    return before is None or after is None or after >= before


def upsert_customer(
    connection: Connection,
    organization_id: str,
    shop: str,
    who: ShopCustomer,
    *,
    now: datetime,
    recorded: list[str],
) -> CustomerRecord | None:
    """The organization's customer the shop names, made or brought up to date (name, phone, and address unless
    another customer has it); None when the shop gave neither an id nor an address."""
    shop_id = who.id
    email = _text(who.email, 320)
    email = email.lower() if email else None
    name = " ".join(part for part in (_text(who.first_name, 120), _text(who.last_name, 120)) if part)
    phone = _text(who.phone, 32)
    if shop_id is not None:
        customer = customers.find_or_create_by_identity(
            connection,
            organization_id,
            kind=IDENTITY,
            value=f"{shop}:{shop_id}",
            name=name or email or f"Shop customer {shop_id}",
            email=email,
            phone=phone,
            now=now,
            recorded=recorded,
        )
    elif email:
        customer = customers.find_or_create(
            connection, organization_id, email=email, name=name or None, now=now, recorded=recorded
        )
    else:
        return None
    changes: dict[str, Any] = {}
    if name and name != customer.name:
        changes["name"] = name[:255]
    if phone and phone != customer.phone:
        changes["phone"] = phone
    if email and email != customer.email and customers.by_email(connection, organization_id, email) is None:
        changes["email"] = email
    if changes:
        updated = customers.update_customer(
            connection, organization_id, customer.id, changes, now=now, recorded=recorded
        )
        customer = updated or customer
    return customer


def _order_customer(order: ShopOrder) -> ShopCustomer:
    who = order.customer or ShopCustomer()
    return msgspec.structs.replace(
        who, email=who.email or order.email or order.contact_email, phone=who.phone or order.phone
    )


async def handle(context: Context, event: Any) -> Apply:
    details = event.details or {}
    topic, shop = details.get("topic"), details.get("shop")
    if not isinstance(topic, str) or not isinstance(shop, str):
        return failed("not a shop's event")
    decoder = (SHOP_PRIVACY_EVENTS if event.provider == "commerce_privacy" else SHOP_EVENTS).get(topic)
    if decoder is None:
        return failed(f"topic {topic} is not handled")
    payload = decoder.decode(event.body)
    if isinstance(payload, ShopPrivacyRequest):
        return await _privacy(context, event, topic, shop, payload)
    organization_id = event.organization_id

    if isinstance(payload, ShopCustomer):

        def apply_customer(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
            customer = upsert_customer(connection, organization_id, shop, payload, now=now, recorded=recorded)
            if customer is None:
                return Outcome("no customer: the shop named neither an id nor an address", classification="customer")
            return Outcome(f"customer {topic.split('/')[1]}d", classification="customer")

        return apply_customer

    if payload.id is None:
        return failed("the order has no id")
    order_id = str(payload.id)
    facts = order_facts(payload, topic)

    def apply_order(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        customer = upsert_customer(
            connection, organization_id, shop, _order_customer(payload), now=now, recorded=recorded
        )
        stored = orders.get(connection, event.channel_id, order_id)
        label = facts.get("name") or order_id
        if stored is not None and not newer_or_same(stored.details, facts):
            return Outcome(f"order {label} unchanged: an older update", classification="order")
        orders.save(
            connection,
            organization_id=organization_id,
            channel_id=event.channel_id,
            order_id=order_id,
            customer_id=customer.id if customer else None,
            details=facts,
            now=now,
        )
        attached = "attached to its customer" if customer else "kept without a customer"
        return Outcome(f"order {label} {attached}", classification="order")

    return apply_order


def _customer_ids(connection: Connection, organization_id: str, shop: str, who: ShopCustomer) -> list[str]:
    found = []
    if who.id is not None:
        by_id = customers.by_identity(connection, organization_id, IDENTITY, f"{shop}:{who.id}")
        if by_id is not None:
            found.append(by_id.id)
    if who.email and who.email.strip():
        by_email = customers.by_email(connection, organization_id, who.email.strip())
        if by_email is not None:
            found.append(by_email.id)
    return list(dict.fromkeys(found))


def _shop_customers(connection: Connection, organization_id: str, shop: str) -> list[str]:
    return orders.shop_customers(connection, organization_id, IDENTITY, f"{shop}:")


async def _privacy(context: Context, event: Any, topic: str, shop: str, payload: ShopPrivacyRequest) -> Apply:
    organization_id = event.organization_id
    who = payload.customer or ShopCustomer()

    if topic == "customers/data_request":
        found = await context.db.read(_customer_ids, organization_id, shop, who)
        exports = []
        for customer_id in found:
            data = await context.db.read(orders.customer_data, organization_id, customer_id)
            if data is None:
                continue
            data["request"] = {
                "shop": shop,
                "data_request_id": payload.data_request.id if payload.data_request else None,
                "orders_requested": payload.orders_requested,
                "exported_at": context.clock().isoformat().replace("+00:00", "Z"),
            }
            key = orders.export_key(organization_id, customer_id, event.id)
            await put_blob(context, key, json.dumps(data, indent=2, ensure_ascii=False).encode(), "application/json")
            exports.append(key)

        def apply_export(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
            if not exports:
                return Outcome("data request: no data held about this customer", classification=orders.DATA_REQUEST)
            return Outcome(orders.EXPORT_OUTCOME + " ".join(exports), classification=orders.DATA_REQUEST)

        return apply_export

    whole_shop = topic == "shop/redact"
    if whole_shop:
        ids = await context.db.read(_shop_customers, organization_id, shop)
    else:
        ids = await context.db.read(_customer_ids, organization_id, shop, who)
    for key in await context.db.read(orders.erasure_blobs, organization_id, ids):
        await context.blobs.delete(key)
    needles = [value for value in (who.email, who.phone) if value is not None]
    order_ids = [str(order_id) for order_id in payload.orders_to_redact]

    def apply_erasure(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        # read again in the transaction: a customer made between the read above and now is erased too
        current = (
            _shop_customers(connection, organization_id, shop)
            if whole_shop
            else _customer_ids(connection, organization_id, shop, who)
        )
        erased = orders.erase(
            connection,
            organization_id,
            customer_ids=list(dict.fromkeys([*ids, *current])),
            needles=needles,
            channel_id=event.channel_id,
            order_ids=order_ids,
            whole_channel=whole_shop,
            now=now,
            recorded=recorded,
        )
        return Outcome(
            f"erased: {erased.customers} customer(s), {erased.tickets} ticket(s), {erased.orders} order(s), "
            f"{erased.inbound_events} inbound event(s), {erased.webhook_events} webhook event(s)",
            classification="redact",
        )

    return apply_erasure
