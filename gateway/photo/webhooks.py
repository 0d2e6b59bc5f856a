"""Photo's webhook endpoints (section 4.2, `full` scope): the shared routes with photo's bodies and answers: create
(the signing secret shown once), list, delete; no update (a PATCH is 405) and no test delivery."""

from __future__ import annotations

from gateway.common.webhooks import EndpointRoutes, endpoint_routes
from gateway.photo import docs
from gateway.photo.auth import WEBHOOKS_READ, WEBHOOKS_WRITE
from gateway.photo.errors import ERRORS, PhotoError
from gateway.photo.schemas import CreateWebhookRequest, WebhookCreated, WebhookDeleted, WebhookEndpoint, WebhookList
from operations.common.webhooks import Words
from storage.common.webhooks.endpoints import Endpoint
from storage.photo.verifications import iso
from topics.photo import EVENTS, WEBHOOKS


def endpoint_object(endpoint: Endpoint) -> WebhookEndpoint:
    return WebhookEndpoint(
        id=endpoint.id,
        url=endpoint.url,
        events=endpoint.events,  # type: ignore[arg-type]
        status=endpoint.status,  # type: ignore[arg-type]
        created_at=iso(endpoint.created_at),
    )


def _created(endpoint: Endpoint, secret: str | None) -> WebhookCreated:
    shown = endpoint_object(endpoint)
    assert secret is not None  # photo's secrets are generated
    return WebhookCreated(
        id=shown.id,
        url=shown.url,
        events=shown.events,
        status=shown.status,
        created_at=shown.created_at,
        signing_secret=secret,
    )


WORDS = Words(
    not_found="No webhook endpoint with that id on this account",
    limit_reached="An account can have at most {limit} webhook endpoints; delete one first",
    inactive="This webhook endpoint is disabled",
)


def _explain(message: str) -> PhotoError:
    """What a create body got wrong, in the contract's words for `url` and `events`."""
    if "`$.url`" in message and "missing" not in message:
        return PhotoError(400, "url must be an HTTPS URL with a host name")
    if "events" in message and "Expected" not in message and "length" not in message:
        return PhotoError(400, "events must name known event types: " + ", ".join(EVENTS))
    return ERRORS.invalid_body(message)


WEBHOOK_ROUTES = endpoint_routes(
    EndpointRoutes(
        profile=WEBHOOKS,
        path="/api/v1/webhooks",
        read_scope=WEBHOOKS_READ,
        write_scope=WEBHOOKS_WRITE,
        create_body=CreateWebhookRequest,
        update_body=None,
        shown=endpoint_object,
        created=_created,
        listed=lambda endpoints: WebhookList([endpoint_object(endpoint) for endpoint in endpoints]),
        deleted=lambda endpoint_id: WebhookDeleted(id=endpoint_id, deleted=True),
        tested=None,
        types={"created": WebhookCreated, "listed": WebhookList, "shown": WebhookEndpoint, "deleted": WebhookDeleted},
        style=ERRORS,
        explain=_explain,
        error_responses=docs.errors,
        management=docs.MANAGEMENT,
        documented=docs.MANAGED,
        documented_with_body=docs.MANAGED_WITH_BODY,
    )
)
