"""The phone gateway app: `POST /v1/verify`, `GET /v1/requests/{id}`, `GET /v1/usage`."""

from __future__ import annotations

from litestar.types import ASGIApp

from gateway.common.app import GatewayApp, Readiness
from gateway.phone import docs
from gateway.phone.auth import PhoneAuthenticator
from gateway.phone.deps import PhoneGateway
from gateway.phone.errors import EXCEPTION_HANDLERS
from gateway.phone.requests import RequestsController
from gateway.phone.usage import UsageController
from gateway.phone.verify import MAX_BODY_BYTES, VerifyController

APP = GatewayApp(
    "phone", [VerifyController, RequestsController, UsageController], docs.DOCUMENT, EXCEPTION_HANDLERS, MAX_BODY_BYTES
)


def create_phone_app(gateway: PhoneGateway, authenticator: PhoneAuthenticator, readiness: Readiness) -> ASGIApp:
    return APP.build(given={"phone": gateway}, authenticator=authenticator, readiness=readiness)
