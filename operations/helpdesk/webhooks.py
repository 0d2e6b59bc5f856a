"""Outgoing webhook subscriptions (sections 2.4, 4.4, 6.1): an organization's admins manage them, as do keys with
`webhooks:*`. Never shown with their secret."""

from __future__ import annotations

from typing import Annotated

import msgspec

from operations.common.actors import Actor
from operations.common.webhooks import Trial
from operations.helpdesk.desk import Helpdesk
from storage.common.webhooks.deliveries import DeliveryRecord
from storage.common.webhooks.endpoints import Endpoint
from topics.helpdesk import EventType
from wire.text import LINE

MANAGE = "manage webhook subscriptions"
Url = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[!-~]*)?$",
        description="An http or https URL on a public host",
        examples=["https://hooks.example.com/helpdesk"],
    ),
]
Events = Annotated[list[EventType], msgspec.Meta(min_length=1, max_length=8)]
Secret = Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=LINE, examples=["s3cr3t-signing-key"])]
HookId = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=LINE)]


class CreateWebhook(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: Url
    events: Events
    secret: Secret | None = None
    """Deliveries carry `x-helpdesk-signature` only when a secret was given."""
    enabled: bool = True


class UpdateWebhook(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Absent fields stay as they are."""

    events: Events | None = None
    enabled: bool | None = None


class WebhookId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: HookId


class UpdateWebhookById(UpdateWebhook, kw_only=True):
    id: HookId


async def create(desk: Helpdesk, actor: Actor, given: CreateWebhook) -> Endpoint:
    actor.require_admin(MANAGE)
    endpoint, _ = await desk.webhooks.create(
        actor.organization_id, url=given.url, events=given.events, secret=given.secret, enabled=given.enabled
    )
    return endpoint


async def listing(desk: Helpdesk, actor: Actor) -> list[Endpoint]:
    actor.require_admin(MANAGE)
    return await desk.webhooks.listing(actor.organization_id)


async def update(desk: Helpdesk, actor: Actor, webhook_id: str, given: UpdateWebhook) -> Endpoint:
    actor.require_admin(MANAGE)
    return await desk.webhooks.update(actor.organization_id, webhook_id, events=given.events, enabled=given.enabled)


async def delete(desk: Helpdesk, actor: Actor, webhook_id: str) -> None:
    actor.require_admin(MANAGE)
    await desk.webhooks.delete(actor.organization_id, webhook_id)


async def deliveries(desk: Helpdesk, actor: Actor, webhook_id: str, limit: int = 10) -> list[DeliveryRecord]:
    """The subscription's newest deliveries, each with its last attempt's answer."""
    actor.require_admin(MANAGE)
    return await desk.webhooks.deliveries(actor.organization_id, webhook_id, limit)


async def test(desk: Helpdesk, actor: Actor, webhook_id: str) -> Trial:
    """A signed `webhook.test` delivery to the subscription alone, and how its receiver answered."""
    actor.require_admin(MANAGE)
    return await desk.webhooks.test(actor.organization_id, webhook_id)
