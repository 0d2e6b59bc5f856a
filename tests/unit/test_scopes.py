"""Principals' scopes and the guards routes declare them with: wildcards, write implies read, and every route of
both gateways either declares the scopes it needs or serves without a key on purpose."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from litestar import Litestar
from litestar.di import Provide
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute
from litestar.types import ControllerRouterHandler

from gateway.common.auth import NO_AUTHENTICATION, Scopes
from gateway.phone import app as phone_app
from gateway.photo import app as photo_app


@pytest.mark.parametrize(
    ("granted", "required", "grants"),
    [
        (["tickets:read"], "tickets:read", True),
        (["tickets:read"], "tickets:write", False),
        (["tickets:write"], "tickets:read", True),  # a write scope implies the matching read
        (["tickets:write"], "customers:read", False),
        (["tickets:*"], "tickets:write", True),
        (["tickets:*"], "tickets:read", True),
        (["tickets:*"], "customers:read", False),
        (["*"], "customers:write", True),
        (["*"], "verify", True),
        (["verify"], "verify", True),
        (["verify"], "keys:read", False),
        (["requests:read"], "requests:write", False),
        (["sku:core_phone"], "sku:core_phone", True),
        (["sku:core_phone"], "sku:other", False),
        ([], "verify", False),
        (["tickets:write"], "tickets", False),  # a bare resource is not its read
    ],
)
def test_scopes_grant_by_name_wildcard_and_write_implies_read(granted: list[str], required: str, grants: bool) -> None:
    assert Scopes(granted).grant(required) is grants


def handlers(routes: Sequence[ControllerRouterHandler]) -> list[HTTPRouteHandler]:
    """The route handlers of an app of these routes (their dependencies given as nothing: nothing is served), but
    the OPTIONS handlers Litestar adds to every path."""
    names = ("phone", "photo", "desk", "webhook_endpoints", "inbound")
    given = {name: Provide(lambda: None, sync_to_thread=False) for name in names}
    app = Litestar(route_handlers=routes, dependencies=given, openapi_config=None)
    return [
        handler
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
        if handler.http_methods != {"OPTIONS"}
    ]


@pytest.mark.parametrize("routes", [phone_app.APP.routes, photo_app.APP.routes], ids=["phone", "photo"])
def test_every_route_declares_the_scopes_it_needs_or_serves_without_a_key_on_purpose(
    routes: Sequence[ControllerRouterHandler],
) -> None:
    keyless = []
    for handler in handlers(routes):
        guards = [getattr(guard, "func", guard).__qualname__ for guard in handler.resolve_guards()]
        if handler.opt.get("exclude_from_auth") == NO_AUTHENTICATION["exclude_from_auth"]:
            keyless.append(handler.operation_id)
        else:
            assert any(guard.startswith("requires(") for guard in guards), (handler.paths, guards)
    assert keyless == ([] if routes is phone_app.APP.routes else ["getImage"])
