"""The signed-in person's profile (their name and avatar) and password in the agent app (docs/helpdesk.md, "The agent
app"): set a first password (an account made by a link, or one whose password was reset: the mailed reset link lands
here), or change it given the current one (the account's other sessions end); and, from the sign-in page, a reset
link mailed. The procedures' rules (gateway/helpdesk/accounts/signin.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.datastructures import Cookie
from litestar.params import FromQuery
from litestar.response import Redirect, Template
from litestar.types import ControllerRouterHandler

from gateway.helpdesk.accounts.sessions import SignedIn
from gateway.helpdesk.accounts.signin import (
    ChangePassword,
    SendPasswordReset,
    SetPassword,
    UpdateProfile,
    change_profile,
    replace_password,
    send_reset_link,
    set_first_password,
)
from gateway.helpdesk.pages.site import SIGN_IN, Form, Site, readable
from gateway.helpdesk.procedures.wire import ProcedureError
from storage.helpdesk import accounts

PASSWORD = "/account/password"
PROFILE = "/account/profile"
TOO_SHORT = "A password has at least 8 characters"


@dataclass(frozen=True, slots=True)
class Person:
    """The signed-in person, their session, and the cookies a page sets (a session renewed on the way)."""

    user: accounts.UserRecord
    signed_in: SignedIn
    cookies: Sequence[Cookie]


def routes(site: Site) -> list[ControllerRouterHandler]:
    deps = site.helpdesk.accounts

    async def person(request: Request[Any, Any, Any]) -> Person | Redirect:
        """Whoever the request's session signs in (member or not yet), or where the browser goes to sign in."""
        signed = await site.session(request)
        if isinstance(signed, Redirect):
            return signed
        who, cookies = signed
        user = await deps.db.read(accounts.user_by_id, who.user_id)
        return Person(user, who, cookies) if user is not None else site.go(SIGN_IN)

    async def shown(request: Request[Any, Any, Any], status: int = 200, **values: Any) -> Template | Redirect:
        found = await person(request)
        if isinstance(found, Redirect):
            return found
        has = found.user.password_hash is not None
        return site.page("password.html", status=status, cookies=found.cookies, has_password=has, **values)

    async def profile_page(request: Request[Any, Any, Any], status: int = 200, **values: Any) -> Template | Redirect:
        found = await person(request)
        if isinstance(found, Redirect):
            return found
        return site.page("profile.html", status=status, cookies=found.cookies, user=found.user, **values)

    @get(PROFILE)
    async def profile(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await profile_page(request)

    @post(PROFILE, status_code=200)
    async def save_profile(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        found = await person(request)
        if isinstance(found, Redirect):
            return found
        user = found.user
        given = {"name": data.get("name", "").strip(), "avatar_url": data.get("avatar_url", "").strip() or None}
        try:
            await change_profile(deps, user, msgspec.convert(given, UpdateProfile))
        except msgspec.ValidationError as wrong:
            return await profile_page(request, 400, error=readable(str(wrong)))
        except ProcedureError as refused:
            return await profile_page(request, refused.status, error=refused.message)
        return await profile_page(request, notice="Your profile is saved.")

    @get(PASSWORD)
    async def password_page(request: Request[Any, Any, Any], reset: FromQuery[str] = "") -> Template | Redirect:
        return await shown(request, notice="Choose a new password." if reset else None)

    @post(PASSWORD, status_code=200)
    async def save_password(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        found = await person(request)
        if isinstance(found, Redirect):
            return found
        user, who = found.user, found.signed_in
        new = data.get("new_password", "")
        try:
            if user.password_hash is None:
                await set_first_password(deps, user, msgspec.convert({"password": new}, SetPassword))
            else:
                given = {"currentPassword": data.get("current_password", ""), "newPassword": new}
                await replace_password(deps, user, msgspec.convert(given, ChangePassword), keep=who.session_id)
        except msgspec.ValidationError:
            return await shown(request, status=400, error=TOO_SHORT)
        except ProcedureError as refused:
            return await shown(request, status=refused.status, error=refused.message)
        return await shown(request, notice="Your password is saved.")

    @post(f"{SIGN_IN}/reset", status_code=200)
    async def mail_reset_link(data: Form) -> Template:
        email = data.get("email", "").strip()
        try:
            await send_reset_link(deps, msgspec.convert({"email": email}, SendPasswordReset).email)
        except msgspec.ValidationError:
            error = "Give the address you sign in with, such as ada@example.com"
            return site.sign_in(400, next="/", reset_email=email, error=error)
        except ProcedureError as refused:
            return site.sign_in(refused.status, next="/", reset_email=email, error=refused.message)
        return site.page("reset_sent.html", email=email)

    return [profile, save_profile, password_page, save_password, mail_reset_link]
