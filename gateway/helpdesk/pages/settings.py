"""The agent app's settings (docs/helpdesk.md, "The agent app"), for an organization's admins: the organization (its
name; its plan changed in the payment provider's customer portal, or a paid plan's Checkout), the team (members and
invitations), API keys (made with the key shown once, with a copy button; revoked) and outgoing webhooks (made,
tested with a signed delivery, deleted). Each form calls the operation REST and the procedures call; an agent is
told that only an admin may."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import msgspec
from litestar import Request, get, post
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER
from litestar.types import ControllerRouterHandler

from gateway.helpdesk.pages.signup import PLANS
from gateway.helpdesk.pages.site import Form, Member, Site
from operations.helpdesk import keys, plans, team, webhooks
from operations.helpdesk.keys import CreateKey
from operations.helpdesk.plans import Subscribe
from operations.helpdesk.team import ChangeRole, Deactivate, Invite, RenameOrganization
from operations.helpdesk.webhooks import CreateWebhook, UpdateWebhook
from storage.helpdesk import workspaces
from storage.helpdesk.keys import RESOURCES
from topics.helpdesk import EVENTS

DELIVERIES = 10
"""A subscription's newest deliveries its settings show."""
READ_ONLY = [f"{resource}:read" for resource in RESOURCES]
"""The scopes of a read-only key: every resource's `:read`."""
PAID_PLANS = {plan: PLANS[plan] for plan in workspaces.PAID_PLANS}
"""The paid plans a Checkout sells, as the pages name them."""


def routes(site: Site) -> list[ControllerRouterHandler]:
    desk = site.helpdesk.desk

    async def team_page(who: Member, status: int = 200, **values: Any) -> Template:
        members = await team.members(desk, who.actor)
        pending = [one for one in await team.invitations(desk, who.actor) if one.accepted_at is None]
        return site.page(
            "settings_team.html",
            status=status,
            cookies=who.cookies,
            members=members,
            invitations=pending,
            me=who.actor.user_id,
            **values,
        )

    async def keys_page(who: Member, status: int = 200, **values: Any) -> Template:
        listed = await keys.listing(desk, who.actor)
        return site.page("settings_keys.html", status=status, cookies=who.cookies, keys=listed, **values)

    async def webhooks_page(who: Member, status: int = 200, **values: Any) -> Template:
        listed = await webhooks.listing(desk, who.actor)
        recent = {hook.id: await webhooks.deliveries(desk, who.actor, hook.id, DELIVERIES) for hook in listed}
        return site.page(
            "settings_webhooks.html",
            status=status,
            cookies=who.cookies,
            webhooks=listed,
            deliveries=recent,
            events=EVENTS,
            **values,
        )

    @get("/settings", status_code=HTTP_303_SEE_OTHER)
    async def settings() -> Redirect:
        return site.go("/settings/team")

    @get("/settings/team")
    async def team_settings(request: Request[Any, Any, Any], invited: FromQuery[str] = "") -> Template | Redirect:
        return await site.shown(request, lambda who: team_page(who, invited=invited))

    @post("/settings/team/invitations", status_code=HTTP_303_SEE_OTHER)
    async def invite(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        email = data.get("email", "").strip()

        async def act(who: Member) -> Redirect:
            await team.invite(desk, who.actor, msgspec.convert({"email": email}, Invite))
            return site.go(f"/settings/team?{urlencode({'invited': email})}", who.cookies)

        return await site.submitted(request, act, team_page, email=email)

    @post("/settings/team/{user_id:str}/role", status_code=HTTP_303_SEE_OTHER)
    async def change_role(request: Request[Any, Any, Any], user_id: FromPath[str], data: Form) -> Template | Redirect:
        given = {"role": data.get("role", "")}

        async def act(who: Member) -> Redirect:
            await team.change_role(desk, who.actor, user_id, msgspec.convert(given, ChangeRole))
            return site.go("/settings/team", who.cookies)

        return await site.submitted(request, act, team_page)

    @post("/settings/team/{user_id:str}/deactivate", status_code=HTTP_303_SEE_OTHER)
    async def deactivate(request: Request[Any, Any, Any], user_id: FromPath[str], data: Form) -> Template | Redirect:
        """The member signed out everywhere and kept out; their open and pending tickets go to `reassign_to`
        (empty: nobody)."""
        given = {"reassign_to": data.get("reassign_to") or None}

        async def act(who: Member) -> Redirect:
            await team.deactivate(desk, who.actor, user_id, msgspec.convert(given, Deactivate))
            return site.go("/settings/team", who.cookies)

        return await site.submitted(request, act, team_page)

    @post("/settings/team/{user_id:str}/reactivate", status_code=HTTP_303_SEE_OTHER)
    async def reactivate(request: Request[Any, Any, Any], user_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Member) -> Redirect:
            await team.reactivate(desk, who.actor, user_id)
            return site.go("/settings/team", who.cookies)

        return await site.submitted(request, act, team_page)

    async def organization_page(who: Member, status: int = 200, **values: Any) -> Template:
        found = await team.organization(desk, who.actor)
        return site.page(
            "settings_organization.html",
            status=status,
            cookies=who.cookies,
            organization=found,
            offer=plans.offer(desk, found),
            paid_plans=PAID_PLANS,
            **values,
        )

    @get("/settings/organization")
    async def organization_settings(
        request: Request[Any, Any, Any], renamed: FromQuery[str] = "", checkout: FromQuery[str] = ""
    ) -> Template | Redirect:
        """`renamed`: a rename just saved; `checkout`: back from a paid plan's Checkout (`success`, `cancelled`)."""
        back = checkout if checkout in ("success", "cancelled") else ""
        return await site.shown(request, lambda who: organization_page(who, renamed=renamed == "1", checkout=back))

    @post("/settings/organization/billing", status_code=200)
    async def billing_portal(request: Request[Any, Any, Any]) -> Template | Redirect:
        """A customer portal session, answered by the page with a link to it: a form's answer may not redirect to
        another site (the pages' `form-action 'self'` applies to a form's redirects too), and a GET that made sessions
        could be triggered from another site."""

        async def act(who: Member) -> Template:
            portal = await plans.billing_portal(desk, who.actor)
            return await organization_page(who, portal_url=portal.url)

        async def again(who: Member, status: int, error: str) -> Template:
            return await organization_page(who, status, billing_error=error)

        return await site.submitted(request, act, again)

    @post("/settings/organization/subscribe", status_code=200)
    async def subscribe(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        """A paid plan's Checkout for an organization without a subscription, answered by the page with a link to it
        (as the portal's)."""
        plan = data.get("plan", "")

        async def act(who: Member) -> Template:
            made = await plans.subscribe(desk, who.actor, msgspec.convert({"plan": plan}, Subscribe))
            return await organization_page(who, checkout_url=made.url, chosen_plan=plan)

        async def again(who: Member, status: int, error: str) -> Template:
            return await organization_page(who, status, billing_error=error, chosen_plan=plan)

        return await site.submitted(request, act, again)

    @post("/settings/organization", status_code=HTTP_303_SEE_OTHER)
    async def rename_organization(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        """The organization's new name (its address stays)."""
        name = data.get("name", "")

        async def act(who: Member) -> Redirect:
            await team.rename_organization(desk, who.actor, msgspec.convert({"name": name}, RenameOrganization))
            return site.go("/settings/organization?renamed=1", who.cookies)

        return await site.submitted(request, act, organization_page, name=name)

    @get("/settings/keys")
    async def key_settings(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, keys_page)

    @post("/settings/keys", status_code=200)
    async def create_key(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        """The new key, shown on this answer only (never in a URL, never again)."""
        name = data.get("name", "").strip()
        scopes = ["*"] if data.get("access") != "read" else READ_ONLY

        async def act(who: Member) -> Template:
            made, secret = await keys.create(
                desk, who.actor, msgspec.convert({"name": name, "scopes": scopes}, CreateKey)
            )
            return await keys_page(who, created=made, secret=secret)

        return await site.submitted(request, act, keys_page, name=name)

    @post("/settings/keys/{key_id:str}/revoke", status_code=HTTP_303_SEE_OTHER)
    async def revoke_key(request: Request[Any, Any, Any], key_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Member) -> Redirect:
            await keys.revoke(desk, who.actor, key_id)
            return site.go("/settings/keys", who.cookies)

        return await site.submitted(request, act, keys_page)

    @get("/settings/webhooks")
    async def webhook_settings(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, webhooks_page)

    @post("/settings/webhooks", status_code=HTTP_303_SEE_OTHER)
    async def create_webhook(request: Request[Any, Any, Any]) -> Template | Redirect:
        form = await request.form()
        given = {"url": form.get("url", "").strip(), "events": form.getall("events", [])}
        if form.get("secret"):
            given["secret"] = form.get("secret")

        async def act(who: Member) -> Redirect:
            await webhooks.create(desk, who.actor, msgspec.convert(given, CreateWebhook))
            return site.go("/settings/webhooks", who.cookies)

        return await site.submitted(request, act, webhooks_page, url=given["url"], chosen=given["events"])

    @post("/settings/webhooks/{webhook_id:str}/test", status_code=200)
    async def test_webhook(request: Request[Any, Any, Any], webhook_id: FromPath[str]) -> Template | Redirect:
        """A signed `webhook.test` delivery, and how the receiver answered it."""

        async def act(who: Member) -> Template:
            trial = await webhooks.test(desk, who.actor, webhook_id)
            return await webhooks_page(who, tested=webhook_id, trial=trial)

        return await site.submitted(request, act, webhooks_page)

    @post("/settings/webhooks/{webhook_id:str}/enable", status_code=HTTP_303_SEE_OTHER)
    async def enable_webhook(request: Request[Any, Any, Any], webhook_id: FromPath[str]) -> Template | Redirect:
        """A subscription that failed (or was turned off) turned on again: its deliveries start anew."""

        async def act(who: Member) -> Redirect:
            await webhooks.update(desk, who.actor, webhook_id, UpdateWebhook(enabled=True))
            return site.go("/settings/webhooks", who.cookies)

        return await site.submitted(request, act, webhooks_page)

    @post("/settings/webhooks/{webhook_id:str}/delete", status_code=HTTP_303_SEE_OTHER)
    async def delete_webhook(request: Request[Any, Any, Any], webhook_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Member) -> Redirect:
            await webhooks.delete(desk, who.actor, webhook_id)
            return site.go("/settings/webhooks", who.cookies)

        return await site.submitted(request, act, webhooks_page)

    return [
        settings,
        team_settings,
        organization_settings,
        rename_organization,
        billing_portal,
        subscribe,
        invite,
        change_role,
        deactivate,
        reactivate,
        key_settings,
        create_key,
        revoke_key,
        webhook_settings,
        create_webhook,
        test_webhook,
        enable_webhook,
        delete_webhook,
    ]
