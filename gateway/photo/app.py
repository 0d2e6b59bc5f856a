"""The photo gateway app, at the host root: `POST /v1/verify`, signed image URLs, and key, webhook and verification
management under `/api/v1`."""

from __future__ import annotations

from litestar.types import ASGIApp

from gateway.common.app import GatewayApp, Readiness
from gateway.photo import docs
from gateway.photo.auth import PhotoAuthenticator
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import EXCEPTION_HANDLERS
from gateway.photo.images import ImagesController
from gateway.photo.keys import KeysController
from gateway.photo.submissions import MAX_JSON_BODY
from gateway.photo.verifications import VerificationsController
from gateway.photo.verify import VerifyController
from gateway.photo.webhooks import WEBHOOK_ROUTES

APP = GatewayApp(
    "photo",
    [VerifyController, ImagesController, KeysController, WEBHOOK_ROUTES, VerificationsController],
    docs.DOCUMENT,
    EXCEPTION_HANDLERS,
    MAX_JSON_BODY,
    request_id_prefix="req_",
)


def create_photo_app(gateway: PhotoGateway, authenticator: PhotoAuthenticator, readiness: Readiness) -> ASGIApp:
    return APP.build(
        given={"photo": gateway, "webhook_endpoints": gateway.webhooks},
        authenticator=authenticator,
        readiness=readiness,
        on_shutdown=[authenticator.last_used.flush],
    )
