"""The helpdesk's webhook event types and webhook profile (its topics and messages come with the service)."""

from __future__ import annotations

from wire.webhooks import FIVE_RETRIES_OVER_A_DAY, WebhookProfile, event_timestamp

EVENTS = (
    "ticket.created",
    "ticket.updated",
    "ticket.status_changed",
    "ticket.assigned",
    "ticket.priority_changed",
    "conversation.created",
    "customer.created",
    "customer.updated",
)
"""Event types a webhook subscription may subscribe to."""
TEST_EVENT = "webhook.test"
"""What the test operation sends one subscription, whatever it subscribed to."""

WEBHOOKS = WebhookProfile(
    service="helpdesk",
    events=EVENTS,
    envelope=event_timestamp,
    signature_header="x-helpdesk-signature",
    timestamp_header=None,
    delivery_id_header="x-helpdesk-delivery-id",
    schedule=FIVE_RETRIES_OVER_A_DAY,
    secret="optional",
    id_prefix="hook",
    disabled_status="failed",
    spare_recently_delivered=False,
    timeout_s=30.0,
    url_schemes=("http", "https"),
    max_endpoints=16,
    operations=frozenset({"create", "list", "update", "delete", "test"}),
    test_event=TEST_EVENT,
)
"""The helpdesk's webhooks: `{event, timestamp, data}`; `x-helpdesk-signature` (lowercase hex HMAC-SHA256 of the raw
body keyed by the subscription's secret) only when the user gave a secret; `x-helpdesk-delivery-id` (the event id,
the same on every retry) to de-duplicate on; the first attempt and 5 retries 1 min, 5 min, 30 min, 2 h and 24 h
apart, after which the subscription is `failed` and disabled whatever succeeded meanwhile; 30 s per attempt; http or
https; every operation: create, list, update (events, enabled), delete, test."""
