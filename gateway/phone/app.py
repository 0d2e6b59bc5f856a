"""The phone gateway app: `POST /v1/verify`, `GET /v1/requests/{id}`, `GET /v1/usage`, assembled from its
controllers, its authentication step and its OpenAPI document."""

from __future__ import annotations

from collections.abc import Mapping

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ASGIApp

from gateway.common.auth import AUTHENTICATOR, authentication
from gateway.common.http import ReadinessCheck, complete_allow, health_routes, observe
from gateway.common.openapi import MsgspecSchemaPlugin, docs_assets, docs_render_plugins
from gateway.phone.auth import PhoneAuthenticator
from gateway.phone.deps import PhoneGateway
from gateway.phone.errors import EXCEPTION_HANDLERS
from gateway.phone.requests import RequestsController
from gateway.phone.usage import UsageController
from gateway.phone.verify import MAX_BODY_BYTES, VerifyController

API_VERSION = "2026-10-15.2"


def create_phone_app(
    gateway: PhoneGateway,
    authenticator: PhoneAuthenticator,
    readiness: Mapping[str, ReadinessCheck],
    *,
    debug: bool = False,
) -> ASGIApp:
    """The phone gateway as an ASGI app. The observing layer sits outside Litestar, whose own middleware never
    sees requests that match no route (they too get a request id, a metric and a log line)."""
    app = Litestar(
        route_handlers=[
            VerifyController,
            RequestsController,
            UsageController,
            *health_routes(readiness),
            docs_assets(),
        ],
        dependencies={"phone": Provide(lambda: gateway, use_cache=True, sync_to_thread=False)},
        middleware=[authentication(authenticator)],
        state=State({AUTHENTICATOR: authenticator}),
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=MAX_BODY_BYTES,
        plugins=[MsgspecSchemaPlugin()],
        openapi_config=OpenAPIConfig(
            title="signalyard phone verification",
            version=API_VERSION,
            description="A US phone number and a supplied name in; carrier, line type, caller-ID name, name match "
            "and billing out. Test keys (`sy_test_...`) run against a deterministic sandbox that never calls a paid "
            "provider; live keys (`sy_live_...`) perform real lookups and are metered.",
            path="/docs",
            render_plugins=docs_render_plugins(),
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(
                        type="http",
                        scheme="bearer",
                        description="`Authorization: Bearer sy_test_...` (sandbox) or `Bearer sy_live_...`",
                    )
                }
            ),
            security=[{"bearer": []}],
        ),
        logging_config=None,  # the launcher configures logging (JSON lines) for the whole process
        debug=debug,
    )
    return observe("phone")(complete_allow(app))
