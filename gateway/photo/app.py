"""The photo gateway app: `POST /v1/verify`, signed image URLs, and key, webhook and verification management under
`/api/v1`, assembled from its controllers, its authentication step and its OpenAPI document."""

from __future__ import annotations

from collections.abc import Mapping

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ASGIApp

from gateway.common.auth import AUTHENTICATOR, authentication
from gateway.common.http import ReadinessCheck, complete_allow, health_routes, observe, request_ids
from gateway.common.openapi import MsgspecSchemaPlugin, docs_assets, docs_render_plugins
from gateway.photo.auth import PhotoAuthenticator
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import EXCEPTION_HANDLERS
from gateway.photo.images import ImagesController
from gateway.photo.keys import KeysController
from gateway.photo.submissions import MAX_JSON_BODY
from gateway.photo.verifications import VerificationsController
from gateway.photo.verify import VerifyController
from gateway.photo.webhooks import WEBHOOK_ROUTES

API_VERSION = "2026-11"


def create_photo_app(
    gateway: PhotoGateway,
    authenticator: PhotoAuthenticator,
    readiness: Mapping[str, ReadinessCheck],
    *,
    debug: bool = False,
) -> ASGIApp:
    """The photo gateway as an ASGI app, at the host root: `/v1/...` and `/api/v1/...`."""
    app = Litestar(
        route_handlers=[
            VerifyController,
            ImagesController,
            KeysController,
            WEBHOOK_ROUTES,
            VerificationsController,
            *health_routes(readiness),
            docs_assets(),
        ],
        dependencies={
            "photo": Provide(lambda: gateway, use_cache=True, sync_to_thread=False),
            "webhook_store": Provide(lambda: gateway.webhooks, use_cache=True, sync_to_thread=False),
        },
        middleware=[authentication(authenticator)],
        state=State({AUTHENTICATOR: authenticator}),
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=MAX_JSON_BODY,
        plugins=[MsgspecSchemaPlugin()],
        on_shutdown=[authenticator.last_used.flush],
        openapi_config=OpenAPIConfig(
            title="signalyard photo compliance",
            version=API_VERSION,
            description="An image and a policy in; a compliance verdict, its confidence, category, violation reasons "
            "and feedback out. Sandbox keys (`pc_test_...`) are free and never billed; live keys (`pc_live_...`) "
            "count against the account's monthly cap.",
            path="/docs",
            render_plugins=docs_render_plugins(),
            components=Components(
                security_schemes={
                    "apiKey": SecurityScheme(
                        type="apiKey",
                        name="X-API-Key",
                        security_scheme_in="header",
                        description="`X-API-Key: pc_test_...` (sandbox) or `pc_live_...`",
                    )
                }
            ),
            security=[{"apiKey": []}],
        ),
        logging_config=None,
        debug=debug,
    )
    return observe("photo", request_ids("req_"))(complete_allow(app))
