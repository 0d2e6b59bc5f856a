"""Every gateway's app, assembled one way: the service's routes behind its authentication step, health and metrics,
its error envelope, its OpenAPI document with the offline docs page, and the observing layer outside Litestar (whose
own middleware never sees a request that matches no route: those too get a request id, a metric and a log line)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ASGIApp, ControllerRouterHandler, Receive, Scope, Send

from gateway.common import pages
from gateway.common.auth import AUTHENTICATOR, Authenticator, authentication
from gateway.common.http import ReadinessCheck, complete_allow, health_routes, observe, request_ids
from gateway.common.openapi import MsgspecSchemaPlugin, docs_assets, docs_render_plugins

Readiness = Mapping[str, ReadinessCheck]
DRAINING = "draining"
"""The app state's `asyncio.Event`, set when the server stops: long-lived answers (server-sent events) end then."""


class Gateway:
    """A gateway's ASGI app, and `drain`, which its server calls as it stops accepting connections: answers that
    would otherwise stay open (a page's server-sent events) end, so that stopping waits only for real requests."""

    def __init__(self, app: ASGIApp, draining: asyncio.Event) -> None:
        self.app = app
        self.draining = draining

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    def drain(self) -> None:
        self.draining.set()


@dataclass(frozen=True, slots=True)
class ApiDocument:
    """What a service's OpenAPI document says of itself (`/docs/openapi.json`, browsable at `/docs`)."""

    title: str
    version: str
    description: str
    security: tuple[str, SecurityScheme]
    """The scheme every route needs unless it says otherwise, and its name."""


@dataclass(frozen=True, slots=True)
class GatewayApp:
    """What a service's gateway app is made of, known before anything runs: `build` adds what a running process
    gives it."""

    service: str
    routes: Sequence[ControllerRouterHandler]
    """Every route of the API (health, metrics and the docs page are the platform's)."""
    document: ApiDocument
    exception_handlers: Mapping[Any, Any]
    max_body_bytes: int
    request_id_prefix: str = ""
    templates: Path | None = None
    """The service's page templates (gateway/common/pages.py), when it has pages."""

    def build(
        self,
        *,
        given: Mapping[str, Any],
        authenticator: Authenticator[Any],
        readiness: Readiness,
        on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> ASGIApp:
        """The gateway as an ASGI app; `given` are the objects its routes take by name (dependencies)."""
        document = self.document
        draining = asyncio.Event()
        app = Litestar(
            route_handlers=[*self.routes, *health_routes(readiness), docs_assets()],
            dependencies={
                name: Provide(_value(value), use_cache=True, sync_to_thread=False) for name, value in given.items()
            },
            middleware=[authentication(authenticator)],
            state=State({AUTHENTICATOR: authenticator, DRAINING: draining}),
            exception_handlers=dict(self.exception_handlers),
            request_max_body_size=self.max_body_bytes,
            plugins=[MsgspecSchemaPlugin()],
            on_shutdown=list(on_shutdown),
            openapi_config=OpenAPIConfig(
                title=document.title,
                version=document.version,
                description=document.description,
                path="/docs",
                render_plugins=docs_render_plugins(),
                components=Components(security_schemes=dict([document.security])),
                security=[{document.security[0]: []}],
            ),
            logging_config=None,  # the launcher configures logging (JSON lines) for the whole process
            template_config=pages.templates(self.templates) if self.templates is not None else None,
        )
        return Gateway(observe(self.service, request_ids(self.request_id_prefix))(complete_allow(app)), draining)


def _value(value: Any) -> Callable[[], Any]:
    return lambda: value
