"""Webhook endpoint management (section 4.2, `full` scope): create (the signing secret shown once), list, delete.
Deliveries are the shared engine's work (processors/common/webhooks.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency

from gateway.common.openapi import documented_body, response
from gateway.photo import docs
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import PhotoError, decode_body, invalid_body
from gateway.photo.schemas import CreateWebhookRequest, WebhookCreated, WebhookDeleted, WebhookEndpoint, WebhookList
from storage.common import webhooks
from storage.photo.verifications import iso
from topics.photo import EVENTS, WEBHOOKS
from wire.addresses import TargetUrlRefused

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
        return WEBHOOKS.check_url(url, allow_private=allow_private)
    except TargetUrlRefused as refused:
        raise PhotoError(400, str(refused)) from None


def _explain(message: str) -> PhotoError:
    """What a create body got wrong, in the contract's words for `url` and `events`."""
    if "`$.url`" in message and "missing" not in message:
        return PhotoError(400, "url must be an HTTPS URL with a host name")
    if "events" in message and "Expected" not in message and "length" not in message:
        return PhotoError(400, "events must name known event types: " + ", ".join(EVENTS))
    return invalid_body(message)


class WebhooksController(Controller):
    path = "/api/v1/webhooks"
    tags = ["webhooks"]

    @post(
        "/",
        operation_id="createWebhook",
        summary="Create a webhook endpoint; its signing secret is shown once",
        dependencies=documented_body(CreateWebhookRequest),
        operation_class=docs.MANAGED_WITH_BODY,
        responses={
            201: response(WebhookCreated, "The new endpoint, with `signing_secret` shown this once"),
            **docs.errors(400, 409, *docs.MANAGEMENT),
        },
    )
    async def create_webhook(
        self, request: Request[Any, Any, Any], photo: NamedDependency[PhotoGateway]
    ) -> Response[WebhookCreated]:
        owner = await photo.auth.owner(request.headers, full_scope=True)
        body = decode_body(_decode_create, await request.body(), _explain)
        url = checked_url(body.url, allow_private=photo.allow_private_targets)

        try:
            endpoint, secret = await photo.db.run(
                lambda connection: webhooks.create_endpoint(
                    connection, WEBHOOKS, photo.cipher, owner_id=owner.customer_id, url=url, events=body.events
                ),
                write=True,
            )
        except webhooks.EndpointLimitReached:
            limit = WEBHOOKS.max_endpoints
            raise PhotoError(409, f"An account can have at most {limit} webhook endpoints; delete one first") from None
        assert secret is not None  # photo's secrets are generated
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
        operation_class=docs.MANAGED,
        responses={200: response(WebhookList, "The account's endpoints"), **docs.errors(*docs.MANAGEMENT)},
    )
    async def list_webhooks(self, request: Request[Any, Any, Any], photo: NamedDependency[PhotoGateway]) -> WebhookList:
        owner = await photo.auth.owner(request.headers, full_scope=True)
        endpoints = await photo.db.run(
            lambda connection: webhooks.list_endpoints(connection, WEBHOOKS, owner.customer_id), write=False
        )
        return WebhookList([endpoint_object(endpoint) for endpoint in endpoints])

    @delete(
        "/{webhook_id:str}",
        operation_id="deleteWebhook",
        summary="Delete an endpoint: its deliveries stop at once and pending retries are dropped",
        status_code=200,
        operation_class=docs.MANAGED,
        responses={200: response(WebhookDeleted, "Deleted"), **docs.errors(404, *docs.MANAGEMENT)},
    )
    async def delete_webhook(
        self, request: Request[Any, Any, Any], photo: NamedDependency[PhotoGateway], webhook_id: str
    ) -> WebhookDeleted:
        owner = await photo.auth.owner(request.headers, full_scope=True)
        deleted = await photo.db.run(
            lambda connection: webhooks.delete_endpoint(connection, WEBHOOKS, owner.customer_id, webhook_id),
            write=True,
        )
        if not deleted:
            raise PhotoError(404, "No webhook endpoint with that id on this account")
        return WebhookDeleted(id=webhook_id, deleted=True)
