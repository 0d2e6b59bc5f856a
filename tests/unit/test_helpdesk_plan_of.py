"""Which plan a payment event puts its organization on (processors/helpdesk/inbound/payments.py `plan_of`): a
subscription's price first (a configured plan price, or the price's metadata), then its metadata (set by checkout);
a paid checkout's metadata; nothing from a subscription that is not paid for, or from other events."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from processors.helpdesk.inbound.payments import plan_of
from topics.helpdesk.inbound import BillingObject

PRICES = {"price_pro": "pro", "price_business": "business"}


def subscription(price: dict[str, Any] | None, *, status: str = "active", plan: str | None = "pro") -> BillingObject:
    given: dict[str, Any] = {"id": "sub_1", "object": "subscription", "status": status, "customer": "cus_1"}
    given["metadata"] = {"organization_id": "org", **({"plan": plan} if plan else {})}
    given["items"] = {"object": "list", "data": [{"id": "si_1", "price": price}] if price is not None else []}
    return msgspec.convert(given, BillingObject)


@pytest.mark.parametrize(
    ("price", "status", "expected"),
    [
        ({"id": "price_business"}, "active", "business"),  # the portal switched it: the price wins over metadata
        ({"id": "price_other", "metadata": {"plan": "business"}}, "active", "business"),  # the price's metadata
        ({"id": "price_inline"}, "active", "pro"),  # an inline checkout price: the subscription's metadata
        ({"id": "price_other", "metadata": {"plan": "gold"}}, "trialing", "pro"),  # no such plan: metadata
        ({"id": "price_business"}, "past_due", "business"),
        ({"id": "price_business"}, "incomplete", None),  # not paid for: no plan yet
        ({"id": "price_business"}, "canceled", None),
    ],
)
def test_a_subscriptions_plan_is_its_prices_then_its_metadatas(
    price: dict[str, Any], status: str, expected: str | None
) -> None:
    for event_type in ("customer.subscription.created", "customer.subscription.updated"):
        assert plan_of(event_type, subscription(price, status=status), PRICES) == expected


def test_a_subscription_naming_no_plan_changes_none() -> None:
    assert plan_of("customer.subscription.updated", subscription({"id": "price_x"}, plan=None), PRICES) is None
    assert plan_of("customer.subscription.deleted", subscription({"id": "price_business"}), PRICES) is None


def test_a_paid_checkout_sets_the_plan_it_sold() -> None:
    session = {"id": "cs_1", "payment_status": "paid", "metadata": {"organization_id": "org", "plan": "business"}}
    assert plan_of("checkout.session.completed", msgspec.convert(session, BillingObject), PRICES) == "business"
    unpaid = session | {"payment_status": "unpaid"}
    assert plan_of("checkout.session.completed", msgspec.convert(unpaid, BillingObject), PRICES) is None
    invoice = {"id": "in_1", "metadata": {"plan": "business"}}
    assert plan_of("invoice.payment_succeeded", msgspec.convert(invoice, BillingObject), PRICES) is None
