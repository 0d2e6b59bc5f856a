"""The helpdesk gateway app: the REST API (`/api/v1/...`, bearer keys), the procedures (`/api/trpc/...`, session
cookies) and the mailed links' and social sign-in's routes, each error in the envelope of its path."""

from __future__ import annotations

from collections.abc import Mapping

from litestar.types import ASGIApp, ControllerRouterHandler

from gateway.common.app import GatewayApp, Readiness
from gateway.helpdesk import docs, pages
from gateway.helpdesk.accounts import signin, signup
from gateway.helpdesk.auth import HelpdeskAuthenticator
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.errors import EXCEPTION_HANDLERS
from gateway.helpdesk.inbound import routes as inbound_routes
from gateway.helpdesk.procedures import channels as channel_procedures
from gateway.helpdesk.procedures import customers as customer_procedures
from gateway.helpdesk.procedures import events as event_procedures
from gateway.helpdesk.procedures import keys as key_procedures
from gateway.helpdesk.procedures import search as search_procedures
from gateway.helpdesk.procedures import team as team_procedures
from gateway.helpdesk.procedures import tickets as ticket_procedures
from gateway.helpdesk.procedures import webhooks as webhook_procedures
from gateway.helpdesk.procedures.access import Admission
from gateway.helpdesk.procedures.uploads import upload_route
from gateway.helpdesk.procedures.wire import Procedure, trpc_route
from gateway.helpdesk.rest.attachments import AttachmentsController, UploadsController
from gateway.helpdesk.rest.channels import ChannelsController, InboundMessagesController
from gateway.helpdesk.rest.customers import CustomersController
from gateway.helpdesk.rest.events import EventsController
from gateway.helpdesk.rest.search import SearchController
from gateway.helpdesk.rest.tickets import ConversationsController, TicketsController
from gateway.helpdesk.rest.users import InvitationsController, UsersController
from gateway.helpdesk.rest.webhooks import WEBHOOK_ROUTES

MAX_BODY_BYTES = 1024 * 1024
INBOUND_ROUTES: list[ControllerRouterHandler] = inbound_routes.ROUTES
"""The inbound provider webhooks (section 4.6): signed by their providers, not by keys; described in docs/helpdesk.md,
not in the OpenAPI document (they speak each provider's format)."""
REST_ROUTES: list[ControllerRouterHandler] = [
    TicketsController,
    ConversationsController,
    CustomersController,
    UsersController,
    InvitationsController,
    AttachmentsController,
    UploadsController,
    SearchController,
    EventsController,
    WEBHOOK_ROUTES,
    ChannelsController,
    InboundMessagesController,
]


def procedures(helpdesk: HelpdeskGateway) -> Mapping[str, Procedure]:
    """Every procedure, by name."""
    desk = helpdesk.desk
    return {
        **signin.procedures(helpdesk.accounts),
        **signup.procedures(helpdesk.accounts, desk.billing),
        **event_procedures.procedures(desk),
        **ticket_procedures.procedures(desk),
        **customer_procedures.procedures(desk),
        **webhook_procedures.procedures(desk),
        **key_procedures.procedures(desk),
        **channel_procedures.procedures(desk),
        **team_procedures.procedures(desk),
        **search_procedures.procedures(desk),
    }


def create_helpdesk_app(
    helpdesk: HelpdeskGateway, authenticator: HelpdeskAuthenticator, readiness: Readiness
) -> ASGIApp:
    accounts = helpdesk.accounts
    admit = Admission(accounts.db, accounts.sessions)
    app = GatewayApp(
        "helpdesk",
        [
            *REST_ROUTES,
            *INBOUND_ROUTES,
            trpc_route(procedures(helpdesk), admit),
            upload_route(admit, helpdesk.desk),
            *signin.link_routes(accounts, helpdesk.desk),
            *pages.routes(helpdesk),
        ],
        docs.DOCUMENT,
        EXCEPTION_HANDLERS,
        MAX_BODY_BYTES,
        templates=pages.TEMPLATES,
    )
    return app.build(
        given={"desk": helpdesk.desk, "webhook_endpoints": helpdesk.desk.webhooks, "inbound": helpdesk.inbound},
        authenticator=authenticator,
        readiness=readiness,
        on_shutdown=[
            authenticator.last_used.flush,
            helpdesk.inbound.aclose,
            *([helpdesk.desk.billing.aclose] if helpdesk.desk.billing else []),
        ],
    )
