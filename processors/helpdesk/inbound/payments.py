"""Stripe's events (gateway/helpdesk/inbound/payments.py).

- **The platform's billing events** set their organization's billing state (storage/helpdesk/workspaces.py
  `change_billing`): a completed checkout that is paid, a subscription that is active or trialing, and a paid invoice
  make it `active` (which completes the paid signup: `auth.completeSignup` answers `requiresPayment: false`); a
  failed invoice, or a subscription `past_due`, `unpaid` or `paused`, `past_due`; a deleted subscription, or one
  `canceled` or `incomplete_expired`, `canceled`. An event older than the one that set the state changes nothing,
  and nothing goes back to `incomplete`.
- **Connected accounts' events:** a dispute (`charge.dispute.created`) opens a ticket (channel `commerce`, tag
  `dispute`, priority high) for the cardholder, with the dispute's facts as an internal note; the dispute's later
  events (`updated`, `closed`, `funds_withdrawn`, `funds_reinstated`) are notes on that ticket. Other events are
  recorded, and make nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.service import Apply, Context, failed
from storage.helpdesk import customers, tickets, workspaces
from storage.helpdesk.customers import CustomerRecord
from storage.helpdesk.inbound import Outcome

BILLING_EVENTS = (
    "checkout.session.completed",
    "customer.subscription.created",
    "customer.subscription.updated",
    "customer.subscription.deleted",
    "invoice.payment_succeeded",
    "invoice.payment_failed",
)
SUBSCRIPTION_STATES = {
    "active": workspaces.BILLING_ACTIVE,
    "trialing": workspaces.BILLING_ACTIVE,
    "past_due": workspaces.BILLING_PAST_DUE,
    "unpaid": workspaces.BILLING_PAST_DUE,
    "paused": workspaces.BILLING_PAST_DUE,
    "canceled": workspaces.BILLING_CANCELED,
    "incomplete_expired": workspaces.BILLING_CANCELED,
    "incomplete": workspaces.BILLING_INCOMPLETE,
}
"""A Stripe subscription's `status` -> the organization's billing state."""
DISPUTE = "charge.dispute."
IDENTITY = "payments"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def billing_status(event_type: str, obj: dict[str, Any]) -> str | None:
    """The billing state a billing event means; None: it changes nothing (a checkout still awaiting its payment)."""
    if event_type == "checkout.session.completed":
        paid = obj.get("payment_status") in ("paid", "no_payment_required")
        return workspaces.BILLING_ACTIVE if paid else None
    if event_type in ("customer.subscription.created", "customer.subscription.updated"):
        return SUBSCRIPTION_STATES.get(str(obj.get("status")))
    if event_type == "customer.subscription.deleted":
        return workspaces.BILLING_CANCELED
    if event_type == "invoice.payment_succeeded":
        return workspaces.BILLING_ACTIVE
    if event_type == "invoice.payment_failed":
        return workspaces.BILLING_PAST_DUE
    return None


def customer_of(obj: dict[str, Any]) -> str | None:
    customer = obj.get("customer")
    customer = customer.get("id") if isinstance(customer, dict) else customer
    return customer if isinstance(customer, str) and customer else None


def _happened(payload: dict[str, Any], now: datetime) -> datetime:
    created = payload.get("created")
    return datetime.fromtimestamp(created, UTC) if isinstance(created, int | float) else now


async def handle(_context: Context, event: Any) -> Apply:
    payload = json.loads(event.body)
    if not isinstance(payload, dict):
        return failed("not a Stripe event")
    event_type = str(payload.get("type"))
    obj = _object(_object(payload.get("data")).get("object"))
    if event.provider == "payments_connect":
        return _connected(event, payload, event_type, obj)
    classification = event_type[:32]
    organization_id = event.organization_id
    status = billing_status(event_type, obj)

    def apply(connection: Connection, now: datetime, _recorded: list[str]) -> Outcome:
        if event_type not in BILLING_EVENTS:
            return Outcome(f"recorded: {event_type} changes no billing state", classification=classification)
        if organization_id == workspaces.NO_ORGANIZATION:
            return Outcome("no organization: the event names none the helpdesk knows", classification=classification)
        if status is None:
            return Outcome(
                f"billing unchanged: payment status {obj.get('payment_status')}", classification=classification
            )
        change = workspaces.change_billing(
            connection,
            organization_id,
            status,
            event_at=_happened(payload, now),
            customer_id=customer_of(obj),
            reason=event_type,
            now=now,
        )
        if change is None:
            return Outcome("no organization: it no longer exists", classification=classification)
        if not change.applied:
            return Outcome(
                f"billing unchanged: {status} would undo a later {change.old_status}", classification=classification
            )
        return Outcome(f"billing {change.old_status} -> {change.new_status}", classification=classification)

    return apply


def _amount(obj: dict[str, Any]) -> str:
    amount, currency = obj.get("amount"), str(obj.get("currency") or "").upper()
    return f"{amount / 100:.2f} {currency}".strip() if isinstance(amount, int | float) else "an unknown amount"


def _facts(event_type: str, obj: dict[str, Any]) -> str:
    evidence = _object(obj.get("evidence_details"))
    lines = [
        f"Stripe {event_type}: dispute {obj.get('id')} of {_amount(obj)}",
        f"Reason: {obj.get('reason') or 'not given'}; status: {obj.get('status') or 'unknown'}",
        f"Charge: {obj.get('charge') or '-'}; payment intent: {obj.get('payment_intent') or '-'}",
    ]
    if isinstance(evidence.get("due_by"), int):
        due = datetime.fromtimestamp(evidence["due_by"], UTC).isoformat().replace("+00:00", "Z")
        lines.append(f"Evidence due by {due}")
    return "\n".join(lines)


def _cardholder(
    connection: Connection, event: Any, account: str, obj: dict[str, Any], *, now: datetime, recorded: list[str]
) -> CustomerRecord:
    evidence = _object(obj.get("evidence"))
    email = evidence.get("customer_email_address")
    name = evidence.get("customer_name")
    name = name.strip()[:255] if isinstance(name, str) and name.strip() else None
    if isinstance(email, str) and "@" in email:
        return customers.find_or_create(
            connection, event.organization_id, email=email.strip(), name=name, now=now, recorded=recorded
        )
    charge = str(obj.get("charge") or obj.get("id"))
    return customers.find_or_create_by_identity(
        connection,
        event.organization_id,
        kind=IDENTITY,
        value=f"{account}:{customer_of(obj) or charge}",
        name=name or f"Cardholder of {charge}",
        now=now,
        recorded=recorded,
    )


def _connected(event: Any, payload: dict[str, Any], event_type: str, obj: dict[str, Any]) -> Apply:
    classification = event_type[:32]
    account = str((event.details or {}).get("account") or payload.get("account"))
    if not event_type.startswith(DISPUTE) or not obj.get("id"):

        def recorded_only(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
            return Outcome(f"recorded: {event_type} makes no ticket", classification=classification)

        return recorded_only
    thread_key = f"dispute:{event.channel_id}:{obj['id']}"

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        organization_id = event.organization_id
        ticket = tickets.latest_of_thread(connection, organization_id, thread_key)
        outcome = "noted on its dispute's ticket"
        if ticket is None:
            cardholder = _cardholder(connection, event, account, obj, now=now, recorded=recorded)
            ticket = tickets.create(
                connection,
                organization_id,
                subject=f"Payment dispute {obj['id']}: {_amount(obj)} ({obj.get('reason') or 'no reason given'})"[:255],
                customer=cardholder,
                channel="commerce",
                priority="high",
                tags=["dispute"],
                thread_key=thread_key,
                actor_id=None,
                now=now,
                recorded=recorded,
            )
            outcome = "new ticket"
        note = tickets.add_conversation(
            connection,
            ticket,
            author_type="agent",
            author_id=None,
            body=_facts(event_type, obj),
            internal=True,
            now=now,
            recorded=recorded,
        )
        return Outcome(outcome, classification=classification, ticket_id=ticket.id, conversation_id=note.id)

    return apply
