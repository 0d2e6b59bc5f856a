"""The helpdesk's topics and the message types that cross them; its webhook event types and webhook profile."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec

from topics.common.asyncapi import Channel
from wire.webhooks import FIVE_RETRIES_OVER_A_DAY, WebhookProfile, event_timestamp

ACTIVITY_RECORDED = "helpdesk.activity.recorded"
"""An activity-log event (section 2.3) was committed; stream consumers may subscribe."""
INBOUND_RECEIVED = "helpdesk.inbound.received"
"""A provider's call (a mail, an SMS, a message, a call event, ...) was stored; the inbound processors make it a ticket,
a reply, a call record or a billing change."""
INBOUND_GROUP = "signalyard-helpdesk-inbound"
"""The consumer group of the inbound processors (under the topic prefix): add members to scale out."""

EventType = Literal[
    "ticket.created",
    "ticket.updated",
    "ticket.status_changed",
    "ticket.assigned",
    "ticket.priority_changed",
    "conversation.created",
    "customer.created",
    "customer.updated",
]
"""An event type a webhook subscription may subscribe to (section 6.1)."""
EVENTS: tuple[str, ...] = get_args(EventType)
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

Uuid = Annotated[str, msgspec.Meta(extra_json_schema={"examples": ["3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c"]})]
Timestamp = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "date-time", "examples": ["2026-11-24T10:15:02.118Z"]})
]


class ActivityRecorded(msgspec.Struct, frozen=True, kw_only=True):
    """One activity-log event (section 2.3) of an organization, once the change it describes has committed. Delivered
    at least once: de-duplicate on `id`."""

    id: Uuid
    organization_id: Uuid
    aggregate_type: Literal["ticket", "conversation", "user", "organization"]
    aggregate_id: Uuid
    event_type: str
    """Section 6.2: `created`, `status_changed`, ..."""
    event_data: dict[str, Any]
    actor_id: Uuid | None
    created_at: Timestamp


class InboundReceived(msgspec.Struct, frozen=True, kw_only=True):
    """A stored inbound event to process (its raw call is in storage: `helpdesk_inbound_events`). Delivered at least
    once: processing is conditional on the event still being pending."""

    event_id: Uuid
    organization_id: str
    channel_id: str
    provider: str
    """A `topics.helpdesk.inbound.Provider`, kept a string on the wire: a member that does not know a newer provider
    still reads the message (and records its event as one it has no handler for)."""

    @classmethod
    def of(cls, event: Any) -> InboundReceived:
        """The message of a stored event (the gateway's `Received`, or its row in `helpdesk_inbound_events`)."""
        return cls(
            event_id=event.id,
            organization_id=event.organization_id,
            channel_id=event.channel_id,
            provider=event.provider,
        )


class HelpdeskTopics(msgspec.Struct, frozen=True):
    """The helpdesk topics' names under an optional prefix (one deployment, or one test, per prefix)."""

    prefix: str = ""

    @property
    def activity(self) -> str:
        return self.prefix + ACTIVITY_RECORDED

    @property
    def inbound(self) -> str:
        return self.prefix + INBOUND_RECEIVED


def partition_key(organization_id: str) -> bytes:
    """An organization's activity stays in order on one partition."""
    return organization_id.encode()


def channels(prefix: str = "") -> dict[str, Channel]:
    """Every helpdesk topic of its own under `prefix` (its webhook-events topic is the engine's)."""
    return {
        prefix + ACTIVITY_RECORDED: Channel(
            ActivityRecorded,
            "The activity log: each event once its change has committed; stream consumers may subscribe.",
            "the organization id, so one organization's events stay in order",
        ),
        prefix + INBOUND_RECEIVED: Channel(
            InboundReceived,
            "Inbound provider calls, stored; the inbound processors (a consumer group) process them.",
            "the sender (channel and address or number), so one sender's messages are processed in order",
        ),
    }
