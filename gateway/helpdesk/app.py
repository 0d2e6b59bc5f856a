"""The helpdesk gateway app: the REST API (`/api/v1/...`, bearer keys), the procedures (`/api/trpc/...`, session
cookies) and the mailed links' and social sign-in's routes, each error in the envelope of its path."""

from __future__ import annotations

from collections.abc import Mapping

from litestar.types import ASGIApp, ControllerRouterHandler

from gateway.common.app import GatewayApp, Readiness
from gateway.helpdesk import channels, docs, events, keys, signin, signup, webhooks
from gateway.helpdesk.auth import HelpdeskAuthenticator
from gateway.helpdesk.customers import CustomersController
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.errors import EXCEPTION_HANDLERS
from gateway.helpdesk.inbound import routes as inbound_routes
from gateway.helpdesk.members import Members
from gateway.helpdesk.tickets import TicketsController
from gateway.helpdesk.trpc import Procedure, trpc_route

MAX_BODY_BYTES = 1024 * 1024
INBOUND_ROUTES: list[ControllerRouterHandler] = inbound_routes.ROUTES
"""The inbound provider webhooks (section 4.6): signed by their providers, not by keys; described in docs/helpdesk.md,
not in the OpenAPI document (they speak each provider's format)."""
REST_ROUTES: list[ControllerRouterHandler] = [
    TicketsController,
    CustomersController,
    events.EventsController,
    webhooks.WEBHOOK_ROUTES,
    channels.ChannelsController,
    channels.InboundMessagesController,
]


def procedures(helpdesk: HelpdeskGateway) -> Mapping[str, Procedure]:
    """Every procedure, by name."""
    identity = helpdesk.identity
    members = Members(identity)
    return {
        **signin.procedures(identity),
        **signup.procedures(identity, helpdesk.billing),
        **events.procedures(identity),
        **webhooks.procedures(members, helpdesk.webhooks),
        **keys.procedures(members, helpdesk.db),
        **channels.procedures(members, helpdesk),
    }


def create_helpdesk_app(
    helpdesk: HelpdeskGateway, authenticator: HelpdeskAuthenticator, readiness: Readiness
) -> ASGIApp:
    app = GatewayApp(
        "helpdesk",
        [*REST_ROUTES, *INBOUND_ROUTES, trpc_route(procedures(helpdesk)), *signin.link_routes(helpdesk.identity)],
        docs.DOCUMENT,
        EXCEPTION_HANDLERS,
        MAX_BODY_BYTES,
    )
    return app.build(
        given={"helpdesk": helpdesk, "webhook_store": helpdesk.webhooks, "inbound": helpdesk.inbound},
        authenticator=authenticator,
        readiness=readiness,
        on_shutdown=[
            authenticator.last_used.flush,
            helpdesk.inbound.aclose,
            *([helpdesk.billing.aclose] if helpdesk.billing else []),
        ],
    )
