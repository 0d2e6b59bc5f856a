"""Outgoing webhook subscriptions over REST (`/api/v1/webhooks`, scopes `webhooks:read` and `webhooks:write`): the
platform's shared endpoint routes with the helpdesk's bodies; a subscription never shows its secret."""

from __future__ import annotations

from gateway.common.webhooks import EndpointRoutes, endpoint_routes
from gateway.helpdesk import docs
from gateway.helpdesk.errors import ERRORS, HelpdeskError
from gateway.helpdesk.schemas import Deleted, Webhook, WebhookList, WebhookTested
from operations.helpdesk.webhooks import CreateWebhook, UpdateWebhook
from topics.helpdesk import EVENTS, WEBHOOKS


def _explain(message: str) -> HelpdeskError:
    if "events" in message and "Expected `array`" not in message and "length" not in message:
        return HelpdeskError(400, "events must name some of: " + ", ".join(EVENTS))
    return ERRORS.invalid_body(message)


WEBHOOK_ROUTES = endpoint_routes(
    EndpointRoutes(
        profile=WEBHOOKS,
        path="/api/v1/webhooks",
        read_scope="webhooks:read",
        write_scope="webhooks:write",
        create_body=CreateWebhook,
        update_body=UpdateWebhook,
        shown=Webhook.of,
        created=lambda endpoint, _secret: Webhook.of(endpoint),
        listed=lambda endpoints: WebhookList(data=[Webhook.of(endpoint) for endpoint in endpoints]),
        deleted=lambda endpoint_id: Deleted(id=endpoint_id, deleted=True),
        tested=WebhookTested.of,
        types={
            "created": Webhook,
            "listed": WebhookList,
            "shown": Webhook,
            "deleted": Deleted,
            "tested": WebhookTested,
        },
        style=ERRORS,
        explain=_explain,
        error_responses=docs.errors,
        management=docs.MANAGEMENT,
        documented=docs.READ,
        documented_with_body=docs.WRITE,
    )
)
