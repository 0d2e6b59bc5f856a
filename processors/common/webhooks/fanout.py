"""The webhook fan-out: a consumer-group member that turns recorded events into one delivery per subscribed endpoint,
and the events outbox that the sweeper publishes again when a publish was lost."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec
from faststream.kafka import KafkaRouter

from processors.common.consumer import batch_consumer
from processors.common.outbox import Outbox
from processors.common.webhooks.deliverer import utc_now
from storage.common.db import Database
from storage.common.webhooks.deliveries import fan_out
from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from topics.common.webhooks import WebhookEventRecorded, event_message, events_topic

FANOUT_WAIT_MS = 100
"""How long the fan-out's fetches wait while events come. No caller waits on it, and a delivery 100 ms later is
nothing to a receiver, while at the platform's 5 ms it would fetch up to 200 times a second."""
FANOUT_IDLE_WAIT_MS = 2000
"""... and once its topic is quiet (topics/common/pacing.py): the first event after a quiet spell is fanned out up to
a second later, and the idle fan-out fetches once every 2 s."""


def fanout_router(
    db: Database,
    service: str,
    *,
    prefix: str = "",
    on_fanned_out: Callable[[], None] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> KafkaRouter:
    """Subscribes `<prefix><service>.webhook.events` as a member of the group `<prefix>signalyard-<service>-webhook-
    fanout`; each batch becomes deliveries in one transaction. A redelivered
    message creates nothing (deliveries are unique per event and endpoint; a fanned-out event is not fanned out
    again). `on_fanned_out` (the deliverer's `wake`) runs when deliveries were created."""

    async def handle(batch: list[WebhookEventRecorded]) -> None:
        ids = {message.event_id for message in batch}
        now = clock()
        created = await db.write(fan_out, ids, now=now)
        if created and on_fanned_out is not None:
            on_fanned_out()

    return batch_consumer(
        service,
        events_topic(service, prefix),
        WebhookEventRecorded,
        handle,
        group_id=f"{prefix}signalyard-{service}-webhook-fanout",
        wait_ms=FANOUT_WAIT_MS,
        idle_wait_ms=FANOUT_IDLE_WAIT_MS,
    )


def events_outbox(service: str, prefix: str = "") -> Outbox:
    """webhook_events as an outbox for the shared Sweeper: an event still pending past the deadline is published
    again to its own service's topic. The table is shared, so any service's sweeper may re-publish another's event;
    it goes to that service's topic all the same."""
    columns = [WEBHOOK_EVENTS.c.id, WEBHOOK_EVENTS.c.service, WEBHOOK_EVENTS.c.owner_id]

    def message(row: Any) -> tuple[msgspec.Struct, str, bytes]:
        return event_message(row.service, row.owner_id, row.id, prefix)

    return Outbox(f"{service}-webhooks", WEBHOOK_EVENTS, columns, message)
