"""The outgoing webhook procedures (section 4.4) for an organization's admins: `webhooks.list`, `webhooks.create`,
`webhooks.update`, `webhooks.delete`, `webhooks.test`; a subscription never shows its secret."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import msgspec

from gateway.helpdesk.procedures.wire import Call, Procedure
from gateway.helpdesk.schemas import WebhookTested
from operations.helpdesk import webhooks
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.webhooks import CreateWebhook, UpdateWebhookById, WebhookId
from storage.common.webhooks.endpoints import Endpoint


class Subscription(msgspec.Struct):
    """A subscription as the procedures show it (section 2.4, never the secret)."""

    id: str
    url: str
    events: list[str]
    enabled: bool
    status: str
    created_at: datetime

    @classmethod
    def of(cls, endpoint: Endpoint) -> Subscription:
        return cls(endpoint.id, endpoint.url, endpoint.events, endpoint.enabled, endpoint.status, endpoint.created_at)


class Deleted(msgspec.Struct):
    id: str
    success: bool = True


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_webhooks(call: Call, _: None) -> list[Subscription]:
        return [Subscription.of(endpoint) for endpoint in await webhooks.listing(desk, call.actor)]

    async def create(call: Call, given: CreateWebhook) -> Subscription:
        return Subscription.of(await webhooks.create(desk, call.actor, given))

    async def update(call: Call, given: UpdateWebhookById) -> Subscription:
        return Subscription.of(await webhooks.update(desk, call.actor, given.id, given))

    async def remove(call: Call, given: WebhookId) -> Deleted:
        await webhooks.delete(desk, call.actor, given.id)
        return Deleted(given.id)

    async def test(call: Call, given: WebhookId) -> WebhookTested:
        return WebhookTested.of(await webhooks.test(desk, call.actor, given.id))

    return {
        "webhooks.list": Procedure("query", None, list_webhooks, "admin"),
        "webhooks.create": Procedure("mutation", CreateWebhook, create, "admin"),
        "webhooks.update": Procedure("mutation", UpdateWebhookById, update, "admin"),
        "webhooks.delete": Procedure("mutation", WebhookId, remove, "admin"),
        "webhooks.test": Procedure("mutation", WebhookId, test, "admin"),
    }
