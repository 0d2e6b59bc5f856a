"""What every page of the agent app does the same way: who it acts for (the session cookies, as the procedures read
them), its template rendered with the product's name, a redirect after a form."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

import msgspec
from litestar import Request
from litestar.datastructures import Cookie
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER

from gateway.common.errors import REFUSED
from gateway.helpdesk.accounts.sessions import SignedIn
from gateway.helpdesk.deps import HelpdeskGateway
from operations.common.actors import Actor
from operations.common.errors import OperationError
from storage.helpdesk import accounts

PRODUCT = "Signalyard Helpdesk"
SIGN_IN = "/sign-in"
SIGNUP = "/signup/complete"
PLACES = {"home": "/", "home_name": "the inbox", "sign_in_path": SIGN_IN}
"""Where the shared templates (gateway/common/templates) link to."""
"""Where a signed-in person who belongs to no organization yet makes their workspace."""
Form = Annotated[dict[str, str], Body(media_type=RequestEncodingType.URL_ENCODED)]
"""A posted form's fields."""


@dataclass(frozen=True, slots=True)
class Member:
    """Who a page acts for, and the cookies its answer sets (a session renewed on the way)."""

    actor: Actor
    cookies: Sequence[Cookie]
    session_id: str = ""
    """The signed-in session (what a commerce store's connection is bound to)."""


class SignInFirst(Exception):
    """No session, or no organization yet: the browser goes to `to`."""

    def __init__(self, to: str, cookies: Sequence[Cookie] = ()) -> None:
        super().__init__(to)
        self.to = to
        self.cookies = cookies


@dataclass(frozen=True, slots=True)
class Site:
    helpdesk: HelpdeskGateway

    async def member(self, request: Request[Any, Any, Any]) -> Member:
        """The member the request's session signs in (SignInFirst when none, or, to SIGNUP, when they belong to no
        organization yet)."""
        deps = self.helpdesk.accounts
        resolved = await deps.sessions.resolve(request.cookies)
        if resolved.signed_in is None:
            raise SignInFirst(f"{SIGN_IN}?{urlencode({'next': request.url.path})}", resolved.cookies)
        found = resolved.signed_in.member
        if found is None:
            user = await deps.db.read(accounts.user_by_id, resolved.signed_in.user_id)
            found = accounts.Member(user.organization_id, user.role) if user is not None else None
        if found is None or found.organization_id is None or found.role is None:
            raise SignInFirst(SIGNUP, resolved.cookies)
        actor = Actor(found.organization_id, resolved.signed_in.user_id, found.role)  # type: ignore[arg-type]
        return Member(actor, resolved.cookies, resolved.signed_in.session_id)

    async def session(self, request: Request[Any, Any, Any]) -> tuple[SignedIn, Sequence[Cookie]] | Redirect:
        """Whoever the request's session signs in, member or not yet, and the cookies to set; or the redirect that
        sends the browser to sign in first."""
        resolved = await self.helpdesk.accounts.sessions.resolve(request.cookies)
        if resolved.signed_in is None:
            return self.go(f"{SIGN_IN}?{urlencode({'next': request.url.path})}", resolved.cookies)
        return resolved.signed_in, resolved.cookies

    async def signed_in(self, request: Request[Any, Any, Any]) -> Member | Redirect:
        """The member, or the redirect that sends the browser to sign in first."""
        try:
            return await self.member(request)
        except SignInFirst as first:
            return self.go(first.to, first.cookies)

    async def shown(
        self, request: Request[Any, Any, Any], render: Callable[[Member], Awaitable[Template]]
    ) -> Template | Redirect:
        """The page `render` makes for the signed-in member; an operation's refusal (another organization's, only an
        admin's) as a page of its own."""
        who = await self.signed_in(request)
        if isinstance(who, Redirect):
            return who
        try:
            return await render(who)
        except OperationError as refusal:
            return self.refused(who, refusal)

    async def submitted(
        self,
        request: Request[Any, Any, Any],
        act: Callable[[Member], Awaitable[Template | Redirect]],
        again: Callable[..., Awaitable[Template]],
        **values: Any,
    ) -> Template | Redirect:
        """A form's operation (`act`, whose answer is the answer); when its input does not fit or the operation
        refuses it, the form's page again (`again(who, status=, error=, **values)`) with what was wrong beside the
        form, or, when that page cannot be shown either, the refusal's page."""
        who = await self.signed_in(request)
        if isinstance(who, Redirect):
            return who
        try:
            return await act(who)
        except msgspec.ValidationError as wrong:
            status, error = 400, readable(str(wrong))
        except OperationError as refusal:
            status, error = REFUSED[refusal.kind], refusal.message
        try:
            return await again(who, status=status, error=error, **values)
        except OperationError as refusal:
            return self.refused(who, refusal)

    def refused(self, who: Member, refusal: OperationError) -> Template:
        """An operation's refusal as a page of its own, with its status (404 for another organization's)."""
        return self.page("problem.html", status=REFUSED[refusal.kind], cookies=who.cookies, message=refusal.message)

    def page(self, template: str, status: int = 200, cookies: Sequence[Cookie] = (), **values: Any) -> Template:
        context = {"product": PRODUCT, **PLACES, **values}
        return Template(template, context=context, status_code=status, cookies=list(cookies))

    def sign_in(self, status: int = 200, **values: Any) -> Template:
        """The sign-in page (with the social sign-in button when a provider is configured)."""
        return self.page("sign_in.html", status=status, social=self.helpdesk.accounts.social is not None, **values)

    def go(self, to: str, cookies: Sequence[Cookie] = ()) -> Redirect:
        return Redirect(path=to, status_code=HTTP_303_SEE_OTHER, cookies=list(cookies))


def readable(message: str) -> str:
    """msgspec's complaint as a sentence for the form (`Expected str of length >= 1 - at $.body`)."""
    what, _, where = message.partition(" - at ")
    field = where.removeprefix("$.").replace("_", " ")
    return f"The {field}: {what[0].lower()}{what[1:]}" if field else message
