"""The topic every service's webhook events are announced on, and its message: a service publishes one per recorded
event once the transaction that recorded it has committed; its fan-out turns it into deliveries."""

from __future__ import annotations

import msgspec

from topics.common.asyncapi import Channel

EVENTS_TOPIC = "webhook.events"
"""Under `<prefix><service>.`: one message per recorded event, which the service's fan-out turns into deliveries."""


class WebhookEventRecorded(msgspec.Struct, frozen=True, kw_only=True):
    """A service recorded a webhook event (stored `pending` in webhook_events); its fan-out must deliver it."""

    event_id: str
    service: str
    owner_id: str


def events_topic(service: str, prefix: str = "") -> str:
    return f"{prefix}{service}.{EVENTS_TOPIC}"


def events_channel(service: str, prefix: str = "") -> dict[str, Channel]:
    """The service's webhook-events topic, for its `channels(prefix)`."""
    return {
        events_topic(service, prefix): Channel(
            WebhookEventRecorded,
            f"A {service} webhook event was recorded; the {service} processors fan it out into deliveries.",
            "the owner id, so one owner's events are fanned out in order",
        )
    }


def event_message(
    service: str, owner_id: str, event_id: str, prefix: str = ""
) -> tuple[WebhookEventRecorded, str, bytes]:
    """(message, topic, partition key) to publish once the transaction that recorded the event has committed:
    `await platform.publish(*event_message(...))`. A lost publish is repeated by the events sweeper."""
    message = WebhookEventRecorded(event_id=event_id, service=service, owner_id=owner_id)
    return message, events_topic(service, prefix), owner_id.encode()
