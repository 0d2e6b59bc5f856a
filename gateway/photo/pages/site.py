"""What every dashboard page does the same way: who it acts for (the `pc-session` cookie), its template rendered with
the product's name and the account, a redirect after a form, and an operation's refusal beside the form or as a page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from limits import RateLimitItem
from litestar import Request
from litestar.datastructures import Cookie
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER

from gateway.common.errors import REFUSED, ServiceError
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import PhotoError
from operations.common.errors import OperationError
from operations.photo.account import Account
from storage.photo.sessions import SessionRecord

PRODUCT = "Signalyard Photo"
HOME = "/dashboard"
SIGN_IN = "/dashboard/sign-in"
PLACES = {"home": HOME, "home_name": "the overview", "sign_in_path": SIGN_IN}
"""Where the shared templates (gateway/common/templates) link to."""
Form = Annotated[dict[str, str], Body(media_type=RequestEncodingType.URL_ENCODED)]
"""A posted form's fields (a field given twice keeps its last value)."""


@dataclass(frozen=True, slots=True)
class Visitor:
    """Who a page acts for: the signed-in account, in the environment the session shows."""

    session: SessionRecord

    @property
    def account(self) -> Account:
        return Account(self.session.customer_id, self.session.environment)


def sign_in_limited(_: RateLimitItem, retry_after_s: int) -> PhotoError:
    return PhotoError(429, f"Too many attempts: retry in {retry_after_s} seconds")


def limits_unavailable() -> PhotoError:
    return PhotoError(503, "Signing in is unavailable for a moment: retry shortly")


def refusal_of(error: Exception) -> tuple[int, str] | None:
    """An operation's or the API's refusal as the status and message a page shows; None for anything else."""
    if isinstance(error, OperationError):
        return REFUSED[error.kind], error.message
    if isinstance(error, ServiceError):
        return error.status, str(error)
    return None


@dataclass(frozen=True, slots=True)
class Site:
    photo: PhotoGateway

    async def visitor(self, request: Request[Any, Any, Any]) -> Visitor | Redirect:
        """The signed-in account, or the redirect that sends the browser to sign in first (clearing a cookie whose
        session is over)."""
        sessions = self.photo.dashboard.sessions
        found = await sessions.resolve(request.cookies)
        if found is not None:
            return Visitor(found)
        cookies = [sessions.cleared()] if request.cookies.get("pc-session") else []
        return self.go(f"{SIGN_IN}?{urlencode({'next': request.url.path})}", cookies)

    async def shown(
        self, request: Request[Any, Any, Any], render: Callable[[Visitor], Awaitable[Template | Redirect]]
    ) -> Template | Redirect:
        """The page `render` makes for the signed-in account; a refusal (another account's, say) as a page."""
        who = await self.visitor(request)
        if isinstance(who, Redirect):
            return who
        try:
            return await render(who)
        except (OperationError, ServiceError) as error:
            refused = refusal_of(error)
            assert refused is not None
            return self.page(who, "problem.html", status=refused[0], message=refused[1])

    async def submitted(
        self,
        request: Request[Any, Any, Any],
        act: Callable[[Visitor], Awaitable[Template | Redirect]],
        again: Callable[..., Awaitable[Template]],
    ) -> Template | Redirect:
        """A form's operation (`act`, whose answer is the answer); when it is refused, the form's page again
        (`again(who, status=, error=)`) with the refusal beside the form."""
        who = await self.visitor(request)
        if isinstance(who, Redirect):
            return who
        try:
            return await act(who)
        except (OperationError, ServiceError) as error:
            refused = refusal_of(error)
            assert refused is not None
            status, message = refused
        return await again(who, status=status, error=message)

    def page(
        self, who: Visitor | None, template: str, status: int = 200, cookies: Sequence[Cookie] = (), **values: Any
    ) -> Template:
        context = {"product": PRODUCT, **PLACES, "session": who.session if who else None, **values}
        return Template(template, context=context, status_code=status, cookies=list(cookies))

    def go(self, to: str, cookies: Sequence[Cookie] = ()) -> Redirect:
        return Redirect(path=to, status_code=HTTP_303_SEE_OTHER, cookies=list(cookies))
