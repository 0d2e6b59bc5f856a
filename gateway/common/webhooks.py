"""The webhook endpoint routes every service's API offers: create, list, update (events, enabled), delete and a test
delivery to one endpoint. The service's profile decides which of them exist (a path without an operation answers 405),
what a target URL may be and whether secrets are generated; the service gives its bodies, its answers, its errors and
its scopes. Deliveries are the engine's work (processors.common.webhooks)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
from cryptography.fernet import MultiFernet
from litestar import Request, Response, Router, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import Operation
from litestar.params import FromPath

from gateway.common.auth import requires
from gateway.common.errors import ErrorStyle, ServiceError, decode_body
from gateway.common.openapi import documented_body, response
from storage.common import webhooks
from storage.common.db import Database
from storage.common.webhooks import Endpoint, FirstAttempt
from wire.addresses import TargetUrlRefused
from wire.webhooks import WebhookProfile


@dataclass(frozen=True, slots=True)
class WebhookStore:
    """What the routes are given at run time: the app's `webhook_store` dependency."""

    db: Database
    cipher: MultiFernet
    """Encrypts signing secrets: they are stored encrypted, beside their SHA-256."""
    allow_private_targets: bool
    """Target URLs may name private, loopback or link-local addresses (development and tests only)."""


class EndpointErrors(Protocol):
    """A service's answers for what the routes refuse."""

    def invalid(self, message: str) -> ServiceError:
        """A body, URL, event type or secret the profile does not accept (400); `message` says which."""
        ...

    def not_found(self) -> ServiceError:
        """No such endpoint on the caller's account (404)."""
        ...

    def limit_reached(self, limit: int) -> ServiceError:
        """The account has the profile's most endpoints (409)."""
        ...

    def inactive(self) -> ServiceError:
        """A test delivery to an endpoint that gets no deliveries (409)."""
        ...


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
    tested: Callable[[str, str, FirstAttempt | None], msgspec.Struct] | None
    """The answer to a test delivery: (endpoint id, the id of the event its delivery carries, how the receiver
    answered, or None when it had not within the profile's timeout)."""
    types: Mapping[str, Any]
    """The documented type of each answer: `created`, `listed`, `shown`, `deleted`, `tested`."""
    errors: EndpointErrors
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


TEST_GRACE_S = 5.0
"""How much longer than one attempt's timeout a test waits for the engine to take it up."""


async def await_test_delivery(
    db: Database, event_id: str, within_s: float, every_s: float = 0.05
) -> FirstAttempt | None:
    """How the receiver answered the test delivery of `event_id`, once the engine (in a processors process) recorded
    its attempt; None when it has not within `within_s`."""
    deadline = asyncio.get_running_loop().time() + within_s
    while (outcome := await db.read(webhooks.first_attempt, event_id)) is None:
        if asyncio.get_running_loop().time() >= deadline:
            return None
        await asyncio.sleep(every_s)
    return outcome


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
            request: Request[Any, Any, Any], webhook_store: NamedDependency[WebhookStore]
        ) -> Response[Any]:
            body: Any = decode_body(decode_create, await request.body(), api.style, api.explain)
            try:
                url = profile.check_url(body.url, allow_private=webhook_store.allow_private_targets)
                endpoint, secret = await webhook_store.db.write(
                    webhooks.create_endpoint,
                    profile,
                    webhook_store.cipher,
                    owner_id=request.user.owner_id,
                    url=url,
                    events=body.events,
                    secret=getattr(body, "secret", None),
                    enabled=getattr(body, "enabled", True),
                )
            except webhooks.EndpointLimitReached:
                raise api.errors.limit_reached(profile.max_endpoints) from None
            except (TargetUrlRefused, ValueError) as refused:
                raise api.errors.invalid(str(refused)) from None
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
        async def list_webhooks(request: Request[Any, Any, Any], webhook_store: NamedDependency[WebhookStore]) -> Any:
            return api.listed(await webhook_store.db.read(webhooks.list_endpoints, profile, request.user.owner_id))

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
            request: Request[Any, Any, Any], webhook_store: NamedDependency[WebhookStore], webhook_id: FromPath[str]
        ) -> Any:
            body: Any = decode_body(decode_update, await request.body(), api.style, api.explain)
            try:
                endpoint = await webhook_store.db.write(
                    webhooks.update_endpoint,
                    profile,
                    request.user.owner_id,
                    webhook_id,
                    events=getattr(body, "events", None),
                    enabled=getattr(body, "enabled", None),
                )
            except ValueError as refused:
                raise api.errors.invalid(str(refused)) from None
            if endpoint is None:
                raise api.errors.not_found()
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
            responses={200: response(api.types["deleted"], "Deleted"), **errors(404)},
        )
        async def delete_webhook(
            request: Request[Any, Any, Any], webhook_store: NamedDependency[WebhookStore], webhook_id: FromPath[str]
        ) -> Any:
            if not await webhook_store.db.write(webhooks.delete_endpoint, profile, request.user.owner_id, webhook_id):
                raise api.errors.not_found()
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
            responses={200: response(api.types["tested"], "How the endpoint answered"), **errors(404, 409)},
        )
        async def test_webhook(
            request: Request[Any, Any, Any], webhook_store: NamedDependency[WebhookStore], webhook_id: FromPath[str]
        ) -> Response[Any]:
            owner_id = request.user.owner_id
            try:
                event_id = await webhook_store.db.write(webhooks.send_test_event, profile, owner_id, webhook_id)
            except webhooks.EndpointInactive:
                raise api.errors.inactive() from None
            if event_id is None:
                raise api.errors.not_found()
            outcome = await await_test_delivery(webhook_store.db, event_id, profile.timeout_s + TEST_GRACE_S)
            return Response(tested(webhook_id, event_id, outcome), status_code=200)

        handlers.append(test_webhook)

    return Router(path=api.path, route_handlers=handlers, tags=["webhooks"])
