"""Signup's last step in the agent app (docs/helpdesk.md, "The agent app"; the contract's `auth.completeSignup`):
a signed-in person who belongs to no organization yet names it and picks a plan. A free workspace opens at once; a
paid one waits for the payment provider's Checkout, which returns here (`checkout=success`, or `checkout=cancelled`
with its plan, to resume). The same rule as the procedure (gateway/helpdesk/accounts/signup.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.params import FromQuery
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER
from litestar.types import ControllerRouterHandler

from gateway.helpdesk.accounts.signup import CompleteSignup, complete_signup
from gateway.helpdesk.pages.site import SIGNUP, Form, Site, readable
from gateway.helpdesk.procedures.wire import ProcedureError
from storage.helpdesk import accounts

PLANS = {"free": "Free", "pro": "Pro", "business": "Business"}


def routes(site: Site) -> list[ControllerRouterHandler]:
    deps, billing = site.helpdesk.accounts, site.helpdesk.desk.billing

    @get(SIGNUP)
    async def signup_page(
        request: Request[Any, Any, Any], checkout: FromQuery[str] = "", plan: FromQuery[str] = "free"
    ) -> Template | Redirect:
        signed = await site.session(request)
        if isinstance(signed, Redirect):
            return signed
        who, cookies = signed
        user = await deps.db.read(accounts.user_by_id, who.user_id)
        if checkout == "success":
            return site.page("signup_paid.html", cookies=cookies)
        if user is not None and user.organization_id is not None and checkout != "cancelled":
            return site.go("/", cookies)
        notice = "Checkout was cancelled: your workspace is kept. Continue to payment when you are ready."
        return site.page(
            "signup.html",
            cookies=cookies,
            plans=PLANS,
            plan=plan if plan in PLANS else "free",
            name=user.name if user is not None else "",
            notice=notice if checkout == "cancelled" else None,
        )

    @post(SIGNUP, status_code=HTTP_303_SEE_OTHER)
    async def complete(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        signed = await site.session(request)
        if isinstance(signed, Redirect):
            return signed
        who, cookies = signed
        fields = {
            "name": data.get("name", "").strip(),
            "organizationName": data.get("organization", "").strip(),
            "planTier": data.get("plan", "free"),
            "redirectPath": "/",
        }
        again = {
            "plans": PLANS,
            "plan": fields["planTier"],
            "name": fields["name"],
            "organization": fields["organizationName"],
        }
        try:
            workspace, checkout_url = await complete_signup(
                deps, billing, who.user_id, msgspec.convert(fields, CompleteSignup)
            )
        except msgspec.ValidationError as wrong:
            return site.page("signup.html", status=400, cookies=cookies, error=readable(str(wrong)), **again)
        except ProcedureError as refused:
            return site.page("signup.html", status=refused.status, cookies=cookies, error=refused.message, **again)
        if checkout_url is not None:  # a link, not a redirect: the pages' forms may only lead to this site
            return site.page("signup_pay.html", cookies=cookies, checkout_url=checkout_url, workspace=workspace)
        return site.go("/", cookies)

    return [signup_page, complete]
