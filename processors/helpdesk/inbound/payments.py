"""Stripe's events (gateway/helpdesk/inbound/payments.py).

- **The platform's billing events** set their organization's billing state (storage/helpdesk/workspaces.py
  `change_billing`): a completed checkout that is paid, a subscription that is active or trialing, and a paid invoice
  make it `active` (which completes the paid signup: `auth.completeSignup` answers `requiresPayment: false`); a
  failed invoice, or a subscription `past_due`, `unpaid` or `paused`, `past_due`; a deleted subscription, or one
  `canceled` or `incomplete_expired`, `canceled`. An event older than the one that set the state changes nothing,
  and nothing goes back to `incomplete`.
- **The plan follows the subscription** (`plan_of`): a subscription that is active (or past due) is on the plan of
  its price (a configured plan price id, `Context.plan_prices`, or a price whose metadata says `plan`), else on the
  plan its metadata names (set by checkout); a paid checkout sets the plan it sold. So a plan changed in the
  payment provider's customer portal (`customer.subscription.updated`) is the organization's plan.
- **Connected accounts' events:** a dispute (`charge.dispute.created`) opens a ticket (channel `commerce`, tag
  `dispute`, priority high) for the cardholder, with the dispute's facts as an internal note; the dispute's later
  events (`updated`, `closed`, `funds_withdrawn`, `funds_reinstated`) are notes on that ticket. Other events are
  recorded, and make nothing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.service import Apply, Context
from storage.helpdesk import customers, tickets, workspaces
from storage.helpdesk.customers import CustomerRecord
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import (
    BILLING_EVENT,
    CONNECTED_EVENT,
    DISPUTE_EVENT,
    BillingObject,
    Dispute,
    DisputeEvidence,
    StripeEvent,
    StripeRef,
)

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


SUBSCRIPTION_CHANGES = ("customer.subscription.created", "customer.subscription.updated")
PLAN_HOLDING = (workspaces.BILLING_ACTIVE, workspaces.BILLING_PAST_DUE)
"""The billing states whose event's plan is the organization's plan (a subscription not yet paid changes none)."""


def _named(metadata: Mapping[str, str] | None) -> str | None:
    named = (metadata or {}).get("plan")
    return named if named in workspaces.PAID_PLANS else None


def plan_of(event_type: str, obj: BillingObject, plan_prices: Mapping[str, str]) -> str | None:
    """The paid plan a billing event puts its organization on; None: it says nothing of the plan. A subscription's
    is its price's (`plan_prices`: price id -> plan; or the price's metadata `plan`), else its metadata's `plan`
    (which checkout set, and which the portal does not change: the price comes first); a checkout's is its metadata's.
    Only an active or past-due subscription, or a paid checkout, has one."""
    status = billing_status(event_type, obj)
    if status not in PLAN_HOLDING:
        return None
    if event_type in SUBSCRIPTION_CHANGES:
        for item in obj.items.data if obj.items else []:
            price = item.price
            if price is None:
                continue
            priced = plan_prices.get(price.id or "")
            if priced in workspaces.PAID_PLANS:
                return priced
            if named := _named(price.metadata):
                return named
        return _named(obj.metadata)
    if event_type == "checkout.session.completed":
        return _named(obj.metadata)
    return None


def billing_status(event_type: str, obj: BillingObject) -> str | None:
    """The billing state a billing event means; None: it changes nothing (a checkout still awaiting its payment)."""
    if event_type == "checkout.session.completed":
        paid = obj.payment_status in ("paid", "no_payment_required")
        return workspaces.BILLING_ACTIVE if paid else None
    if event_type in SUBSCRIPTION_CHANGES:
        return SUBSCRIPTION_STATES.get(obj.status or "")
    if event_type == "customer.subscription.deleted":
        return workspaces.BILLING_CANCELED
    if event_type == "invoice.payment_succeeded":
        return workspaces.BILLING_ACTIVE
    if event_type == "invoice.payment_failed":
        return workspaces.BILLING_PAST_DUE
    return None


async def handle(context: Context, event: Any) -> Apply:
    if event.provider == "payments_connect":
        return _connected(event, CONNECTED_EVENT.decode(event.body))
    payload = BILLING_EVENT.decode(event.body)
    event_type, obj = payload.type, payload.data.object
    classification = event_type[:32]
    organization_id = event.organization_id
    status = billing_status(event_type, obj)
    plan = plan_of(event_type, obj, context.plan_prices)
    happened = datetime.fromtimestamp(payload.created, UTC) if payload.created is not None else None

    def apply(connection: Connection, now: datetime, _recorded: list[str]) -> Outcome:
        if event_type not in BILLING_EVENTS:
            return Outcome(f"recorded: {event_type} changes no billing state", classification=classification)
        if organization_id == workspaces.NO_ORGANIZATION:
            return Outcome("no organization: the event names none the helpdesk knows", classification=classification)
        if status is None:
            return Outcome(f"billing unchanged: payment status {obj.payment_status}", classification=classification)
        change = workspaces.change_billing(
            connection,
            organization_id,
            status,
            event_at=happened or now,
            customer_id=obj.customer_id,
            reason=event_type,
            now=now,
            plan=plan,
        )
        if change is None:
            return Outcome("no organization: it no longer exists", classification=classification)
        if not change.applied:
            return Outcome(
                f"billing unchanged: {status} would undo a later {change.old_status}", classification=classification
            )
        said = f"billing {change.old_status} -> {change.new_status}"
        if change.new_plan != change.old_plan:
            said += f"; plan {change.old_plan} -> {change.new_plan}"
        return Outcome(said, classification=classification)

    return apply


def _amount(dispute: Dispute) -> str:
    currency = (dispute.currency or "").upper()
    return f"{dispute.amount / 100:.2f} {currency}".strip() if dispute.amount is not None else "an unknown amount"


def _facts(event_type: str, dispute: Dispute) -> str:
    lines = [
        f"Stripe {event_type}: dispute {dispute.id} of {_amount(dispute)}",
        f"Reason: {dispute.reason or 'not given'}; status: {dispute.status or 'unknown'}",
        f"Charge: {dispute.charge or '-'}; payment intent: {dispute.payment_intent or '-'}",
    ]
    due_by = dispute.evidence_details.due_by if dispute.evidence_details else None
    if due_by is not None:
        due = datetime.fromtimestamp(due_by, UTC).isoformat().replace("+00:00", "Z")
        lines.append(f"Evidence due by {due}")
    return "\n".join(lines)


def _cardholder(
    connection: Connection, event: Any, account: str, dispute: Dispute, *, now: datetime, recorded: list[str]
) -> CustomerRecord:
    evidence = dispute.evidence or DisputeEvidence()
    email = evidence.customer_email_address
    name = evidence.customer_name.strip()[:255] if evidence.customer_name and evidence.customer_name.strip() else None
    if email and "@" in email:
        return customers.find_or_create(
            connection, event.organization_id, email=email.strip(), name=name, now=now, recorded=recorded
        )
    charge = str(dispute.charge or dispute.id)
    return customers.find_or_create_by_identity(
        connection,
        event.organization_id,
        kind=IDENTITY,
        value=f"{account}:{dispute.customer_id or charge}",
        name=name or f"Cardholder of {charge}",
        now=now,
        recorded=recorded,
    )


def _connected(event: Any, head: StripeEvent[StripeRef]) -> Apply:
    event_type = head.type
    classification = event_type[:32]
    account = str((event.details or {}).get("account") or head.account)
    if not event_type.startswith(DISPUTE) or not head.data.object.id:

        def recorded_only(_connection: Connection, _now: datetime, _recorded: list[str]) -> Outcome:
            return Outcome(f"recorded: {event_type} makes no ticket", classification=classification)

        return recorded_only
    dispute = DISPUTE_EVENT.decode(event.body).data.object
    thread_key = f"dispute:{event.channel_id}:{dispute.id}"
    subject = f"Payment dispute {dispute.id}: {_amount(dispute)} ({dispute.reason or 'no reason given'})"

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        organization_id = event.organization_id
        ticket = tickets.latest_of_thread(connection, organization_id, thread_key)
        outcome = "noted on its dispute's ticket"
        if ticket is None:
            cardholder = _cardholder(connection, event, account, dispute, now=now, recorded=recorded)
            ticket = tickets.create(
                connection,
                organization_id,
                subject=subject[:255],
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
            body=_facts(event_type, dispute),
            internal=True,
            now=now,
            recorded=recorded,
        )
        return Outcome(outcome, classification=classification, ticket_id=ticket.id, conversation_id=note.id)

    return apply
