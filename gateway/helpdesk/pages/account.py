"""The signed-in person's password in the agent app (docs/helpdesk.md, "The agent app"): set a first one (an account
made by a link, or one whose password was reset: the mailed reset link lands here), or change it given the current
one (the account's other sessions end); and, from the sign-in page, a reset link mailed. The procedures' rules
(gateway/helpdesk/accounts/signin.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.params import FromQuery
from litestar.response import Redirect, Template
from litestar.types import ControllerRouterHandler

from gateway.helpdesk.accounts.signin import (
    ChangePassword,
    SendPasswordReset,
    SetPassword,
    replace_password,
    send_reset_link,
    set_first_password,
)
from gateway.helpdesk.pages.site import SIGN_IN, Form, Site
from gateway.helpdesk.procedures.wire import ProcedureError
from storage.helpdesk import accounts

PASSWORD = "/account/password"
TOO_SHORT = "A password has at least 8 characters"


def routes(site: Site) -> list[ControllerRouterHandler]:
    deps = site.helpdesk.accounts

    async def shown(request: Request[Any, Any, Any], status: int = 200, **values: Any) -> Template | Redirect:
        signed = await site.session(request)
        if isinstance(signed, Redirect):
            return signed
        who, cookies = signed
        user = await deps.db.read(accounts.user_by_id, who.user_id)
        has = user is not None and user.password_hash is not None
        return site.page("password.html", status=status, cookies=cookies, has_password=has, **values)

    @get(PASSWORD)
    async def password_page(request: Request[Any, Any, Any], reset: FromQuery[str] = "") -> Template | Redirect:
        return await shown(request, notice="Choose a new password." if reset else None)

    @post(PASSWORD, status_code=200)
    async def save_password(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        signed = await site.session(request)
        if isinstance(signed, Redirect):
            return signed
        who, _ = signed
        user = await deps.db.read(accounts.user_by_id, who.user_id)
        if user is None:
            return site.go(SIGN_IN)
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

    return [password_page, save_password, mail_reset_link]
