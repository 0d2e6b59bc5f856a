"""Webhook endpoint management (section 4.2, `full` scope): create (the signing secret shown once), list, delete.
Deliveries are the shared engine's work (processors/common/webhooks.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.common.openapi import documented_body, response
from gateway.photo import docs
from gateway.photo.auth import WEBHOOKS_READ, WEBHOOKS_WRITE, PhotoPrincipal
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import ERRORS, PhotoError
from gateway.photo.schemas import CreateWebhookRequest, WebhookCreated, WebhookDeleted, WebhookEndpoint, WebhookList
from storage.common import webhooks
from storage.photo.verifications import iso
from topics.photo import EVENTS
from wire.addresses import TargetUrlRefused, check_target_url

SERVICE = "photo"
MAX_ENDPOINTS = 16
"""Endpoints per account: enough for every environment and team, few enough that one event's fan-out stays small."""

_decode_create = msgspec.json.Decoder(CreateWebhookRequest).decode


def endpoint_object(endpoint: webhooks.Endpoint) -> WebhookEndpoint:
    return WebhookEndpoint(
        id=endpoint.id,
        url=endpoint.url,
        events=endpoint.events,  # type: ignore[arg-type]
        status=endpoint.status,  # type: ignore[arg-type]
        created_at=iso(endpoint.created_at),
    )


def checked_url(url: str, *, allow_private: bool) -> str:
    """An HTTPS URL with a host, not a literal address the address policy refuses."""
    try:
        return check_target_url(url, schemes=("https",), allow_private=allow_private)
    except TargetUrlRefused as refused:
        raise PhotoError(400, str(refused)) from None


def _explain(message: str) -> PhotoError:
    """What a create body got wrong, in the contract's words for `url` and `events`."""
    if "`$.url`" in message and "missing" not in message:
        return PhotoError(400, "url must be an HTTPS URL with a host name")
    if "events" in message and "Expected" not in message and "length" not in message:
        return PhotoError(400, "events must name known event types: " + ", ".join(EVENTS))
    return ERRORS.invalid_body(message)


class WebhooksController(Controller):
    path = "/api/v1/webhooks"
    tags = ["webhooks"]

    @post(
        "/",
        operation_id="createWebhook",
        summary="Create a webhook endpoint; its signing secret is shown once",
        guards=[requires(WEBHOOKS_WRITE)],
        dependencies=documented_body(CreateWebhookRequest),
        operation_class=docs.MANAGED_WITH_BODY,
        responses={
            201: response(WebhookCreated, "The new endpoint, with `signing_secret` shown this once"),
            **docs.errors(400, 409, *docs.MANAGEMENT),
        },
    )
    async def create_webhook(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> Response[WebhookCreated]:
        owner = request.user.account
        body = decode_body(_decode_create, await request.body(), ERRORS, _explain)
        url = checked_url(body.url, allow_private=photo.allow_private_targets)

        def create(connection: Any) -> tuple[webhooks.Endpoint, str] | None:
            if len(webhooks.list_endpoints(connection, SERVICE, owner.customer_id)) >= MAX_ENDPOINTS:
                return None
            return webhooks.create_endpoint(
                connection, photo.cipher, service=SERVICE, owner_id=owner.customer_id, url=url, events=body.events
            )

        created = await photo.db.write(create)
        if created is None:
            raise PhotoError(409, f"An account can have at most {MAX_ENDPOINTS} webhook endpoints; delete one first")
        endpoint, secret = created
        shown = endpoint_object(endpoint)
        return Response(
            WebhookCreated(
                id=shown.id,
                url=shown.url,
                events=shown.events,
                status=shown.status,
                created_at=shown.created_at,
                signing_secret=secret,
            ),
            status_code=201,
        )

    @get(
        "/",
        operation_id="listWebhooks",
        summary="List this account's webhook endpoints (without secrets)",
        guards=[requires(WEBHOOKS_READ)],
        operation_class=docs.MANAGED,
        responses={200: response(WebhookList, "The account's endpoints"), **docs.errors(*docs.MANAGEMENT)},
    )
    async def list_webhooks(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> WebhookList:
        endpoints = await photo.db.read(webhooks.list_endpoints, SERVICE, request.user.owner_id)
        return WebhookList([endpoint_object(endpoint) for endpoint in endpoints])

    @delete(
        "/{webhook_id:str}",
        operation_id="deleteWebhook",
        summary="Delete an endpoint: its deliveries stop at once and pending retries are dropped",
        guards=[requires(WEBHOOKS_WRITE)],
        status_code=200,
        operation_class=docs.MANAGED,
        responses={200: response(WebhookDeleted, "Deleted"), **docs.errors(404, *docs.MANAGEMENT)},
    )
    async def delete_webhook(
        self, request: Request[PhotoPrincipal, Any, Any], photo: NamedDependency[PhotoGateway], webhook_id: str
    ) -> WebhookDeleted:
        deleted = await photo.db.write(webhooks.delete_endpoint, SERVICE, request.user.owner_id, webhook_id)
        if not deleted:
            raise PhotoError(404, "No webhook endpoint with that id on this account")
        return WebhookDeleted(id=webhook_id, deleted=True)
