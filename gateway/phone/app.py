"""The phone gateway app: `POST /v1/verify`, `GET /v1/requests/{id}`, `GET /v1/usage`."""

from __future__ import annotations

from litestar.types import ASGIApp, ControllerRouterHandler

from gateway.common.app import Readiness, service_app
from gateway.phone import docs
from gateway.phone.auth import PhoneAuthenticator
from gateway.phone.deps import PhoneGateway
from gateway.phone.errors import EXCEPTION_HANDLERS
from gateway.phone.requests import RequestsController
from gateway.phone.usage import UsageController
from gateway.phone.verify import MAX_BODY_BYTES, VerifyController

ROUTES: list[ControllerRouterHandler] = [VerifyController, RequestsController, UsageController]
"""Every route of the API (health, metrics and the docs page are the platform's)."""


def create_phone_app(gateway: PhoneGateway, authenticator: PhoneAuthenticator, readiness: Readiness) -> ASGIApp:
    return service_app(
        "phone",
        ROUTES,
        docs.DOCUMENT,
        EXCEPTION_HANDLERS,
        given={"phone": gateway},
        authenticator=authenticator,
        readiness=readiness,
        max_body_bytes=MAX_BODY_BYTES,
    )
