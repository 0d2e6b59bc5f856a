"""The webhook endpoint routes every service's API offers: create, list, update (events, enabled), delete and a test
delivery to one endpoint, each an adapter over the service's `Endpoints` (operations.common.webhooks, the app's
`webhook_endpoints` dependency). The service's profile decides which of them exist (a path without an operation
answers 405); the service gives its bodies, its answers and its scopes, and its exception handlers word what an
operation refuses. Deliveries are the engine's work (processors.common.webhooks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Request, Response, Router, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import Operation
from litestar.params import FromPath

from gateway.common.auth import requires
from gateway.common.errors import ErrorStyle, ServiceError, decode_body
from gateway.common.openapi import documented_body, response
from operations.common.webhooks import Endpoints, Trial
from storage.common.webhooks.endpoints import Endpoint
from wire.webhooks import WebhookProfile


@dataclass(frozen=True)
class EndpointRoutes:
    """One service's endpoint API."""

    profile: WebhookProfile
    path: str
    read_scope: str
    write_scope: str
    create_body: type[msgspec.Struct]
    """Has `url` and `events`, and `secret` and `enabled` where the profile takes them."""
    update_body: type[msgspec.Struct] | None
    """Has `events` and `enabled` (None or absent: unchanged), where the profile offers `update`."""
    shown: Callable[[Endpoint], msgspec.Struct]
    """An endpoint as list, update and test show it (never its secret)."""
    created: Callable[[Endpoint, str | None], msgspec.Struct]
    """The answer to a create: the endpoint and the secret (a generated one is shown this once)."""
    listed: Callable[[list[Endpoint]], msgspec.Struct]
    deleted: Callable[[str], msgspec.Struct]
    tested: Callable[[Trial], msgspec.Struct] | None
    """The answer to a test delivery: how the receiver answered (operations.common.webhooks.Trial)."""
    types: Mapping[str, Any]
    """The documented type of each answer: `created`, `listed`, `shown`, `deleted`, `tested`."""
    style: ErrorStyle
    explain: Callable[[str], ServiceError] | None
    """How the service words what a body got wrong (None: its ErrorStyle's `invalid_body`)."""
    error_responses: Callable[..., dict[int, ResponseSpec]]
    """statuses -> the service's documented error responses."""
    management: Sequence[int]
    """What every route may answer besides its own (401, 403, 429, 500, 503...)."""
    documented: type[Operation] = Operation
    """`operation_class` of the routes without a body (the headers of their answers)."""
    documented_with_body: type[Operation] = Operation


def endpoint_routes(api: EndpointRoutes) -> Router:
    """The routes of the profile's operations under `api.path`."""
    profile = api.profile
    decode_create = msgspec.json.Decoder(api.create_body).decode
    handlers: list[HTTPRouteHandler] = []

    def errors(*statuses: int) -> dict[int, ResponseSpec]:
        return api.error_responses(*statuses, *api.management)

    if "create" in profile.operations:

        @post(
            "/",
            operation_id="createWebhook",
            summary="Create a webhook endpoint"
            + ("; its signing secret is shown once" if profile.secret == "generated" else ""),
            guards=[requires(api.write_scope)],
            dependencies=documented_body(api.create_body),
            operation_class=api.documented_with_body,
            responses={201: response(api.types["created"], "The new endpoint"), **errors(400, 409)},
        )
        async def create_webhook(
            request: Request[Any, Any, Any], webhook_endpoints: NamedDependency[Endpoints]
        ) -> Response[Any]:
            body: Any = decode_body(decode_create, await request.body(), api.style, api.explain)
            endpoint, secret = await webhook_endpoints.create(
                request.user.owner_id,
                url=body.url,
                events=body.events,
                secret=getattr(body, "secret", None),
                enabled=getattr(body, "enabled", True),
            )
            return Response(api.created(endpoint, secret), status_code=201)

        handlers.append(create_webhook)

    if "list" in profile.operations:

        @get(
            "/",
            operation_id="listWebhooks",
            summary="List this account's webhook endpoints (without secrets)",
            guards=[requires(api.read_scope)],
            operation_class=api.documented,
            responses={200: response(api.types["listed"], "The account's endpoints"), **errors()},
        )
        async def list_webhooks(request: Request[Any, Any, Any], webhook_endpoints: NamedDependency[Endpoints]) -> Any:
            return api.listed(await webhook_endpoints.listing(request.user.owner_id))

        handlers.append(list_webhooks)

    if "update" in profile.operations and api.update_body is not None:
        decode_update = msgspec.json.Decoder(api.update_body).decode

        @patch(
            "/{webhook_id:str}",
            operation_id="updateWebhook",
            summary="Change an endpoint's events, or enable or disable it",
            status_code=200,
            guards=[requires(api.write_scope)],
            dependencies=documented_body(api.update_body),
            operation_class=api.documented_with_body,
            responses={200: response(api.types["shown"], "The endpoint as it now is"), **errors(400, 404)},
        )
        async def update_webhook(
            request: Request[Any, Any, Any], webhook_endpoints: NamedDependency[Endpoints], webhook_id: FromPath[str]
        ) -> Any:
            body: Any = decode_body(decode_update, await request.body(), api.style, api.explain)
            endpoint = await webhook_endpoints.update(
                request.user.owner_id,
                webhook_id,
                events=getattr(body, "events", None),
                enabled=getattr(body, "enabled", None),
            )
            return api.shown(endpoint)

        handlers.append(update_webhook)

    if "delete" in profile.operations:

        @delete(
            "/{webhook_id:str}",
            operation_id="deleteWebhook",
            summary="Delete an endpoint: its deliveries stop at once and pending retries are dropped",
            status_code=200,
            guards=[requires(api.write_scope)],
            operation_class=api.documented,
            responses={200: response(api.types["deleted"], "Deleted"), **errors(400, 404)},
        )
        async def delete_webhook(
            request: Request[Any, Any, Any], webhook_endpoints: NamedDependency[Endpoints], webhook_id: FromPath[str]
        ) -> Any:
            await webhook_endpoints.delete(request.user.owner_id, webhook_id)
            return api.deleted(webhook_id)

        handlers.append(delete_webhook)

    if "test" in profile.operations and api.tested is not None:
        tested = api.tested

        @post(
            "/{webhook_id:str}/test",
            operation_id="testWebhook",
            summary=f"Send the endpoint a `{profile.test_event}` event, whatever it subscribed to",
            status_code=200,
            guards=[requires(api.write_scope)],
            operation_class=api.documented,
            responses={200: response(api.types["tested"], "How the endpoint answered"), **errors(400, 404, 409)},
        )
        async def test_webhook(
            request: Request[Any, Any, Any], webhook_endpoints: NamedDependency[Endpoints], webhook_id: FromPath[str]
        ) -> Response[Any]:
            return Response(tested(await webhook_endpoints.test(request.user.owner_id, webhook_id)), status_code=200)

        handlers.append(test_webhook)

    return Router(path=api.path, route_handlers=handlers, tags=["webhooks"])
