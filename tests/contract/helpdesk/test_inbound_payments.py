"""Section 4.6, "Payments", through a running gateway whose Stripe endpoints are configured (its events processed by
the shared stack's processors): `payment-signature` in Stripe's `t=...,v1=...` format, checked by the official
library within 300 s; the platform's billing events complete a paid signup and move the organization's billing
state; connected accounts' events route by their account, and a dispute opens a ticket."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import func, select

from signalyard.secrets import kept
from storage.helpdesk import inbound, workspaces
from storage.helpdesk.workspaces import ORGANIZATIONS
from tests.helpdesk_stack import Browser, HelpdeskGatewayOnly, HelpdeskStack, data
from tests.helpers import signed_up, until
from tests.peers.stripe import StripeServer

PATH = "/api/webhooks/payments"
CONNECT_PATH = "/api/webhooks/payments-connect"
SECRET = "whsec_platform_" + "0" * 24
CONNECT_SECRET = "whsec_connect_" + "1" * 24


def signed_header(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """Stripe's `Stripe-Signature` value, as Stripe computes it: HMAC-SHA256 of "{t}.{body}"."""
    t = int(time.time()) if timestamp is None else timestamp
    v1 = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={v1}"


def event(event_type: str, obj: dict[str, Any], *, created: int | None = None, account: str | None = None) -> Any:
    made: dict[str, Any] = {
        "id": f"evt_{uuid.uuid4().hex[:24]}",
        "object": "event",
        "api_version": "2024-06-20",
        "created": int(time.time()) if created is None else created,
        "data": {"object": obj},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }
    if account is not None:
        made["account"] = account
    return made


@pytest.fixture
def stripe() -> Iterator[StripeServer]:
    with StripeServer("sk_test_helpdesk_payments") as server:
        yield server


@pytest.fixture
async def billing(
    helpdesk_stack: HelpdeskStack, helpdesk_gateway_only: HelpdeskGatewayOnly, stripe: StripeServer
) -> AsyncIterator[HelpdeskStack]:
    """A gateway with Stripe configured (checkout and both webhook secrets), publishing to the shared stack's topics,
    whose processors handle what it stores, and opening the channels' secrets it sealed."""
    platform = helpdesk_stack.settings.platform
    async with helpdesk_gateway_only(
        topic_prefix=platform.topic_prefix,
        secret_keys=platform.secret_keys
        or [kept(platform.data_dir, "webhook-secret-key", Fernet.generate_key().decode())],
        helpdesk_stripe_secret_key=stripe.secret_key,
        helpdesk_stripe_api_base=stripe.base_url,
        helpdesk_stripe_webhook_secret=SECRET,
        helpdesk_stripe_connect_webhook_secret=CONNECT_SECRET,
    ) as alone:
        yield alone


async def send(
    stack: HelpdeskStack, body: Any, *, path: str = PATH, secret: str = SECRET, timestamp: int | None = None
) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "payment-signature": signed_header(raw, secret, timestamp)}
    return await stack.client.post(path, content=raw, headers=headers)


async def organization_row(stack: HelpdeskStack, organization_id: str) -> Any:
    statement = select(ORGANIZATIONS).where(ORGANIZATIONS.c.id == organization_id)
    return await stack.db.read(lambda connection: connection.execute(statement).one())


async def stored(stack: HelpdeskStack, dedup_key: str) -> list[Any]:
    statement = select(inbound.EVENTS).where(inbound.EVENTS.c.dedup_key == dedup_key)
    return await stack.db.read(lambda connection: list(connection.execute(statement)))


async def processed(stack: HelpdeskStack, dedup_key: str) -> Any:
    async def done() -> Any:
        rows = await stored(stack, dedup_key)
        return rows[0] if rows and rows[0].state == "processed" else None

    return await until(done, f"event {dedup_key} processed")


async def paid_signup(stack: HelpdeskStack, browser: Browser, stripe: StripeServer) -> tuple[str, dict[str, Any]]:
    """A pro workspace whose checkout has not completed: its id and its Checkout Session."""
    await browser.sign_in()
    made = data(
        await browser.call(
            "auth.completeSignup",
            {"name": "Pat Payer", "organizationName": f"Paying {uuid.uuid4().hex[:6]}", "planTier": "pro"},
        )
    )
    assert made["requiresPayment"] is True
    organization_id = made["organization"]["id"]
    [session] = [s for s in stripe.sessions.values() if s["client_reference_id"] == organization_id]
    return organization_id, session


async def test_a_paid_checkout_makes_the_workspace_active_and_completes_the_signup(
    billing: HelpdeskStack, stripe: StripeServer
) -> None:
    async with billing.browser() as browser:
        organization_id, session = await paid_signup(billing, browser, stripe)
        completed = event(
            "checkout.session.completed",
            session | {"status": "complete", "payment_status": "paid", "subscription": "sub_123"},
        )
        answer = await send(billing, completed)
        assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})

        async def no_payment_required() -> bool:
            again = data(
                await browser.call(
                    "auth.completeSignup", {"name": "Pat Payer", "organizationName": "ignored", "planTier": "pro"}
                )
            )
            return again["requiresPayment"] is False and "checkoutUrl" not in again

        await until(no_payment_required, "the signup no longer asks for payment")
    row = await processed(billing, completed["id"])
    assert (row.channel_id, row.organization_id, row.provider) == (
        workspaces.PLATFORM_PAYMENTS_CHANNEL,
        organization_id,
        "payments",
    )
    assert (row.classification, row.outcome) == ("checkout.session.completed", "billing incomplete -> active")
    assert (await organization_row(billing, organization_id)).billing_status == "active"


async def test_invoice_and_subscription_events_move_the_billing_state_found_by_the_stripe_customer(
    billing: HelpdeskStack, stripe: StripeServer
) -> None:
    async with billing.browser() as browser:
        organization_id, session = await paid_signup(billing, browser, stripe)
    customer = session["customer"]
    now = int(time.time())
    steps = [
        (event("invoice.payment_succeeded", {"object": "invoice", "customer": customer}, created=now - 50), "active"),
        (event("invoice.payment_failed", {"object": "invoice", "customer": customer}, created=now - 40), "past_due"),
        (
            event("customer.subscription.updated", {"customer": customer, "status": "active"}, created=now - 30),
            "active",
        ),
        (event("customer.subscription.deleted", {"customer": customer, "status": "canceled"}, created=now), "canceled"),
    ]
    for sent, expected in steps:
        assert (await send(billing, sent)).status_code == 200
        row = await processed(billing, sent["id"])
        assert row.organization_id == organization_id
        assert (await organization_row(billing, organization_id)).billing_status == expected
    # an older event delivered late changes nothing
    late = event("invoice.payment_succeeded", {"object": "invoice", "customer": customer}, created=now - 10)
    assert (await send(billing, late)).status_code == 200
    row = await processed(billing, late["id"])
    assert row.outcome == "billing unchanged: active would undo a later canceled"
    assert (await organization_row(billing, organization_id)).billing_status == "canceled"


async def test_an_event_for_no_known_organization_is_stored_under_the_platform_and_changes_nothing(
    billing: HelpdeskStack,
) -> None:
    stray = event("invoice.payment_failed", {"object": "invoice", "customer": f"cus_{uuid.uuid4().hex[:14]}"})
    assert (await send(billing, stray)).json() == {"status": "accepted"}
    row = await processed(billing, stray["id"])
    assert (row.organization_id, row.outcome) == (
        workspaces.NO_ORGANIZATION,
        "no organization: the event names none the helpdesk knows",
    )


async def test_a_wrong_signature_or_a_replayed_timestamp_is_401_and_stores_nothing(billing: HelpdeskStack) -> None:
    sent = event("invoice.payment_failed", {"object": "invoice", "customer": "cus_x"})
    wrong = await send(billing, sent, secret="whsec_not_it")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    replayed = await send(billing, sent, timestamp=int(time.time()) - 301)
    assert replayed.status_code == 401
    assert "tolerance" in replayed.json()["error"]["message"]
    ahead = await send(billing, sent, timestamp=int(time.time()) + 360)  # signed with the secret, dated ahead
    assert (ahead.status_code, ahead.json()["error"]["message"]) == (
        401,
        "payment-signature's timestamp is more than 300 s ahead of this server's clock",
    )
    unsigned = await billing.client.post(PATH, json=sent)
    assert unsigned.status_code == 401
    connect_secret_on_payments = await send(billing, sent, secret=CONNECT_SECRET)
    assert connect_secret_on_payments.status_code == 401
    assert await stored(billing, sent["id"]) == []


async def test_a_retried_event_is_acknowledged_and_stores_nothing_new(billing: HelpdeskStack) -> None:
    sent = event("invoice.payment_failed", {"object": "invoice", "customer": "cus_retry"})
    assert (await send(billing, sent)).json() == {"status": "accepted"}
    assert (await send(billing, sent)).json() == {"status": "duplicate"}
    assert len(await stored(billing, sent["id"])) == 1


async def test_a_malformed_body_is_400_and_stores_nothing(billing: HelpdeskStack) -> None:
    count = select(func.count()).where(inbound.EVENTS.c.channel_id == workspaces.PLATFORM_PAYMENTS_CHANNEL)
    before = await billing.db.read(lambda connection: connection.scalar(count))
    not_json = await send(billing, b"{not json")
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_request")
    no_type = await send(billing, {"id": "evt_1", "data": {"object": {}}})
    assert no_type.status_code == 400
    no_object = await send(billing, {"id": "evt_2", "type": "invoice.paid", "data": {}})
    assert (no_object.status_code, no_object.json()["error"]["message"]) == (
        400,
        "The body is malformed: Object missing required field `object` - at `$.data`",
    )
    assert await billing.db.read(lambda connection: connection.scalar(count)) == before


async def test_without_a_configured_secret_the_payments_endpoints_receive_nothing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    sent = event("invoice.payment_failed", {"object": "invoice", "customer": "cus_x"})
    for path in (PATH, CONNECT_PATH):
        answer = await send(helpdesk_stack, sent, path=path)
        assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    assert await stored(helpdesk_stack, sent["id"]) == []


async def connected_account(stack: HelpdeskStack) -> tuple[str, str, str]:
    """An organization with a payments channel for a new connected account: (REST key, account, channel id)."""
    account = f"acct_{uuid.uuid4().hex[:16]}"
    async with signed_up(stack) as organization:
        made = await organization.rest(
            "POST", "/channels", json={"kind": "payments", "name": "Shop", "addresses": [account]}
        )
    assert made.status_code == 201, made.text
    return organization.key, account, made.json()["id"]


def dispute(dispute_id: str, status: str) -> dict[str, Any]:
    return {
        "id": dispute_id,
        "object": "dispute",
        "amount": 4990,
        "currency": "eur",
        "charge": "ch_3Pdispute",
        "payment_intent": "pi_3Pdispute",
        "reason": "product_not_received",
        "status": status,
        "evidence": {"customer_email_address": "buyer@example.com", "customer_name": "Bea Buyer"},
        "evidence_details": {"due_by": 1790000000},
    }


async def test_a_connected_accounts_dispute_opens_a_ticket_and_its_closing_is_noted(
    helpdesk_stack: HelpdeskStack, billing: HelpdeskStack
) -> None:
    key, account, channel_id = await connected_account(helpdesk_stack)
    dispute_id = f"dp_{uuid.uuid4().hex[:16]}"
    opened = event("charge.dispute.created", dispute(dispute_id, "needs_response"), account=account)
    answer = await send(billing, opened, path=CONNECT_PATH, secret=CONNECT_SECRET)
    assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
    row = await processed(billing, opened["id"])
    assert (row.channel_id, row.provider, row.outcome) == (channel_id, "payments_connect", "new ticket")
    ticket = (await helpdesk_stack.rest(key, "GET", f"/tickets/{row.ticket_id}")).json()
    assert ticket["subject"] == f"Payment dispute {dispute_id}: 49.90 EUR (product_not_received)"
    assert (ticket["channel"], ticket["priority"], ticket["tags"]) == ("commerce", "high", ["dispute"])
    assert ticket["customer_email"] == "buyer@example.com"

    closed = event("charge.dispute.closed", dispute(dispute_id, "won"), account=account)
    assert (await send(billing, closed, path=CONNECT_PATH, secret=CONNECT_SECRET)).status_code == 200
    row = await processed(billing, closed["id"])
    assert (row.ticket_id, row.outcome) == (ticket["id"], "noted on its dispute's ticket")
    notes = (await helpdesk_stack.rest(key, "GET", f"/tickets/{ticket['id']}/conversations")).json()["data"]
    assert [note["internal"] for note in notes] == [True, True]
    assert "status: won" in notes[0]["body"]

    other = event("payout.paid", {"id": "po_1", "object": "payout"}, account=account)
    assert (await send(billing, other, path=CONNECT_PATH, secret=CONNECT_SECRET)).status_code == 200
    assert (await processed(billing, other["id"])).outcome == "recorded: payout.paid makes no ticket"


async def test_a_connected_event_routes_by_its_account_and_is_verified_with_the_connect_secret(
    helpdesk_stack: HelpdeskStack, billing: HelpdeskStack
) -> None:
    _, account, _ = await connected_account(helpdesk_stack)
    sent = event("charge.dispute.created", dispute("dp_x", "needs_response"), account=account)
    platform_secret = await send(billing, sent, path=CONNECT_PATH, secret=SECRET)
    assert platform_secret.status_code == 401
    stale = await send(billing, sent, path=CONNECT_PATH, secret=CONNECT_SECRET, timestamp=int(time.time()) - 600)
    assert stale.status_code == 401
    elsewhere = event("charge.dispute.created", dispute("dp_y", "needs_response"), account="acct_unknown")
    unknown = await send(billing, elsewhere, path=CONNECT_PATH, secret=CONNECT_SECRET)
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    no_account = event("charge.dispute.created", dispute("dp_z", "needs_response"))
    assert (await send(billing, no_account, path=CONNECT_PATH, secret=CONNECT_SECRET)).status_code == 400
    assert (await send(billing, sent, path=CONNECT_PATH, secret=CONNECT_SECRET)).json() == {"status": "accepted"}
    assert (await send(billing, sent, path=CONNECT_PATH, secret=CONNECT_SECRET)).json() == {"status": "duplicate"}
    for ident in (sent["id"], elsewhere["id"], no_account["id"]):
        assert len(await stored(billing, ident)) == (1 if ident == sent["id"] else 0)
