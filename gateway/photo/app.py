"""The photo gateway app, at the host root: `POST /v1/verify`, signed image URLs, key, webhook and verification
management under `/api/v1`, and the dashboard under `/dashboard`."""

from __future__ import annotations

import dataclasses

from litestar.types import ASGIApp

from gateway.common.app import GatewayApp, Readiness
from gateway.photo import docs, pages
from gateway.photo.auth import PhotoAuthenticator
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import EXCEPTION_HANDLERS
from gateway.photo.images import ImagesController
from gateway.photo.inspections import InspectionsController
from gateway.photo.keys import KeysController
from gateway.photo.submissions import MAX_JSON_BODY
from gateway.photo.verifications import VerificationsController
from gateway.photo.verify import VerifyController
from gateway.photo.webhooks import WEBHOOK_ROUTES

APP = GatewayApp(
    "photo",
    [
        VerifyController,
        ImagesController,
        KeysController,
        WEBHOOK_ROUTES,
        VerificationsController,
        InspectionsController,
    ],
    docs.DOCUMENT,
    EXCEPTION_HANDLERS,
    MAX_JSON_BODY,
    request_id_prefix="req_",
)


def create_photo_app(gateway: PhotoGateway, authenticator: PhotoAuthenticator, readiness: Readiness) -> ASGIApp:
    """The API's routes and the dashboard's pages (gateway/photo/pages)."""
    app = dataclasses.replace(APP, routes=[*APP.routes, *pages.routes(gateway)], templates=pages.TEMPLATES)
    return app.build(
        given={"photo": gateway, "webhook_endpoints": gateway.webhooks},
        authenticator=authenticator,
        readiness=readiness,
        on_shutdown=[authenticator.last_used.flush],
    )
