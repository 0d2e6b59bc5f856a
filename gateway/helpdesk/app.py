"""The helpdesk gateway's app, as far as it is built: the procedures (`/api/trpc/...`) and the mailed links' routes."""

from __future__ import annotations

from collections.abc import Mapping

from limits import RateLimitItem
from litestar import Litestar

from gateway.helpdesk import auth, events, signup
from gateway.helpdesk.trpc import Procedure, ProcedureError, trpc_route

MAX_BODY_BYTES = 1024 * 1024


def sign_in_limited(_: RateLimitItem, retry_after_s: int) -> ProcedureError:
    return ProcedureError(
        "TOO_MANY_REQUESTS",
        f"Too many attempts for this address: retry in {retry_after_s} seconds",
        {"Retry-After": str(retry_after_s)},
    )


def limits_unavailable() -> ProcedureError:
    return ProcedureError("INTERNAL_SERVER_ERROR", "Sign-in is unavailable for a moment: retry shortly")


def create_helpdesk_app(deps: auth.Identity) -> Litestar:
    procedures: Mapping[str, Procedure] = {
        **auth.procedures(deps),
        **signup.procedures(deps),
        **events.procedures(deps),
    }
    return Litestar(
        route_handlers=[trpc_route(procedures), *auth.link_routes(deps)],
        request_max_body_size=MAX_BODY_BYTES,
        logging_config=None,
    )
