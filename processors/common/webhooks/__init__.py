"""The webhook delivery engine every service's outgoing webhooks use: fan-out, signed deliveries, retries, SSRF guard.
What differs between services is their `WebhookProfile` (wire/webhooks.py), kept beside their event types
(`topics/<service>.py`, `WEBHOOKS`); nothing here branches on a service's name.

Wiring, in a service's `processors(p, settings)`: `*webhook_engine(p, WEBHOOKS)` (signalyard/bootstrap.py), which is

    deliverer = WebhookDeliverer(p.db, WEBHOOKS, cipher, allow_private_targets=..., ca_bundle=...)
    p.broker.include_router(fanout_router(p.db, WEBHOOKS.service, prefix=..., on_fanned_out=deliverer.wake))
    Sweeper(p.db, events_outbox(WEBHOOKS.service, prefix), p.publish, after=...)

and where the service changes something a webhook reports (storage.common.webhooks.events), announced once
committed (operations.common.changes):

    event_id = record_event(connection, WEBHOOKS, owner_id, "verification.completed", data)  # in its transaction
    if event_id is not None:  # None: no endpoint subscribes to it, it is recorded fanned out
        await announce(publish_event, owner_id, [event_id])  # after the commit
"""

from net.guard import TargetRefused, guarded_client, system_resolve
from processors.common.webhooks.deliverer import WebhookDeliverer, utc_now
from processors.common.webhooks.fanout import events_outbox, fanout_router

__all__ = [
    "TargetRefused",
    "WebhookDeliverer",
    "events_outbox",
    "fanout_router",
    "guarded_client",
    "system_resolve",
    "utc_now",
]
