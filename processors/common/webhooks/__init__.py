"""The webhook delivery engine every service's outgoing webhooks use: fan-out, signed deliveries, retries, SSRF guard.

Wiring, in a service's `processors(p, settings)`:

    deliverer = WebhookDeliverer(p.db, PROFILE, cipher, allow_private_targets=..., ca_bundle=...)
    p.broker.include_router(fanout_router(p.db, "photo", prefix=p.settings.topic_prefix, on_fanned_out=deliverer.wake))
    deliverer.start()
    p.closers.append(deliverer.aclose)
    sweepers.append(Sweeper(p.db, events_outbox("photo", p.settings.topic_prefix), p.publish, after=...))

and where the service changes something a webhook reports (storage.common.webhooks):

    event_id = record_event(connection, "photo", owner_id, "verification.completed", data)   # in its transaction
    await p.publish(*event_message("photo", owner_id, event_id, p.settings.topic_prefix))  # after the commit
"""

from processors.common.webhooks.deliverer import WebhookDeliverer, utc_now
from processors.common.webhooks.fanout import events_outbox, fanout_router
from processors.common.webhooks.guard import TargetRefused, guarded_client, system_resolve
from processors.common.webhooks.profile import (
    BACKOFF_OVER_3_DAYS,
    FIVE_RETRIES_OVER_A_DAY,
    WebhookProfile,
    hex_hmac_sha256,
)

__all__ = [
    "BACKOFF_OVER_3_DAYS",
    "FIVE_RETRIES_OVER_A_DAY",
    "TargetRefused",
    "WebhookDeliverer",
    "WebhookProfile",
    "events_outbox",
    "fanout_router",
    "guarded_client",
    "hex_hmac_sha256",
    "system_resolve",
    "utc_now",
]
