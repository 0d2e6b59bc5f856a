"""The agent app's channel settings (admins; docs/helpdesk.md, "Inbound channels"): the organization's channels with
the URLs to give each provider, a channel of any kind added (its addresses, the secrets its provider issued, its
settings; the secrets the helpdesk makes shown once), and one removed. Through the operations the procedures and
REST call (operations/helpdesk/channels.py). And a commerce store connected by the platform's app install
(operations/helpdesk/stores.py): the admin names the shop, follows a link to the platform (a link, as the pages' forms
may only lead to this site), and comes back to the callback, which saves the store's channel."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import msgspec
from litestar import Request, get, post
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER
from litestar.types import ControllerRouterHandler

from gateway.common.errors import REFUSED
from gateway.helpdesk.inbound.routes import REGISTER
from gateway.helpdesk.pages.site import Member, Site
from operations.common.errors import OperationError
from operations.helpdesk import channels, stores
from operations.helpdesk.channels import ChangeChannel, CreateChannel
from operations.helpdesk.commerce_app import SCOPES
from storage.helpdesk.channels import KINDS
from topics.helpdesk.inbound import CHANNEL_KINDS

LABELS = {
    "email": "Email (inbound mail)",
    "sms": "SMS",
    "business_messaging": "Business messaging",
    "page_messaging": "Page messaging",
    "voice": "Voice",
    "commerce": "Commerce store",
    "payments": "Payments",
    "chat": "Team chat",
    "email_provider": "Email provider events",
    "marketplace": "Marketplace",
}


def routes(site: Site) -> list[ControllerRouterHandler]:
    desk = site.helpdesk.desk

    async def channels_page(who: Member, status: int = 200, **values: Any) -> Template:
        listed = await channels.listing(desk, who.actor)
        return site.page(
            "settings_channels.html",
            status=status,
            cookies=who.cookies,
            channels=listed,
            specs=KINDS,
            kinds=[(kind, LABELS[kind], KINDS[kind]) for kind in CHANNEL_KINDS],
            labels=LABELS,
            register=REGISTER,
            public_url=desk.public_url.rstrip("/"),
            commerce=desk.commerce is not None,
            commerce_topics=stores.TOPICS,
            commerce_scopes=SCOPES,
            **values,
        )

    @get("/settings/channels")
    async def channel_settings(request: Request[Any, Any, Any], connected: FromQuery[str] = "") -> Template | Redirect:
        """`connected`: the shop a callback just connected, said on the page."""
        return await site.shown(request, lambda who: channels_page(who, connected=connected))

    @post("/settings/channels/commerce/connect", status_code=200)
    async def connect_store(request: Request[Any, Any, Any]) -> Template | Redirect:
        """The shop named: the page again with the link to the platform's authorize page (a form's answer may not
        redirect to another site: the pages' `form-action 'self'` applies to a form's redirects too)."""
        form = await request.form()
        shop = str(form.get("shop", ""))

        async def act(who: Member) -> Template:
            named, url = await stores.start(desk, who.actor, who.session_id, shop)
            return await channels_page(who, connect_url=url, connect_shop=named)

        async def again(who: Member, status: int, error: str) -> Template:
            return await channels_page(who, status, commerce_error=error, shop=shop)

        return await site.submitted(request, act, again)

    @get(stores.CALLBACK_PATH)
    async def store_connected(request: Request[Any, Any, Any]) -> Template | Redirect:
        """Where the platform sends the admin back: the store's channel saved, then the channels page saying so; or
        the page with what failed, nothing saved."""
        who = await site.signed_in(request)
        if isinstance(who, Redirect):
            return who
        query = {name: str(value) for name, value in request.query_params.items()}
        try:
            made = await stores.finish(desk, who.actor, who.session_id, query)
        except OperationError as refusal:
            try:
                return await channels_page(who, REFUSED[refusal.kind], commerce_error=refusal.message)
            except OperationError as shown:
                return site.refused(who, shown)
        return site.go(f"/settings/channels?{urlencode({'connected': made.channel.name})}", who.cookies)

    @post("/settings/channels", status_code=200)
    async def add_channel(request: Request[Any, Any, Any]) -> Template | Redirect:
        form = await request.form()
        kind = str(form.get("kind", ""))
        spec = KINDS.get(kind)  # type: ignore[call-overload]
        given: dict[str, Any] = {
            "kind": kind,
            "name": str(form.get("name", "")).strip(),
            "addresses": [part.strip() for part in str(form.get("addresses", "")).replace(",", "\n").splitlines()],
        }
        given["addresses"] = [address for address in given["addresses"] if address]
        if spec is not None:
            given["secrets"] = {name: str(form[f"secret_{name}"]) for name in spec.given if form.get(f"secret_{name}")}
            given["settings"] = {
                name: str(form[f"setting_{name}"]) for name in spec.settings if form.get(f"setting_{name}")
            }

        async def act(who: Member) -> Template:
            made, secrets = await channels.open_channel(desk, who.actor, msgspec.convert(given, CreateChannel))
            return await channels_page(who, made=made, secrets=secrets)

        async def again(who: Member, status: int, error: str) -> Template:
            return await channels_page(who, status, error=error, chosen=kind)

        return await site.submitted(request, act, again)

    @post("/settings/channels/{channel_id:str}", status_code=200)
    async def change_channel(request: Request[Any, Any, Any], channel_id: FromPath[str]) -> Template | Redirect:
        """New provider secrets (a field left empty keeps its secret), settings (an empty one is removed), and secrets
        the helpdesk made for it made anew (`rotate`), shown once."""
        form = await request.form()
        kind = str(form.get("kind", ""))
        spec = KINDS.get(kind)  # type: ignore[call-overload]
        given: dict[str, Any] = {"kind": kind, "rotate": [str(name) for name in form.getall("rotate", [])]}
        if spec is not None:
            given["secrets"] = {name: str(form[f"secret_{name}"]) for name in spec.given if form.get(f"secret_{name}")}
            given["settings"] = {name: str(form.get(f"setting_{name}", "")) for name in spec.settings}

        async def act(who: Member) -> Template:
            changed, secrets = await channels.change(desk, who.actor, channel_id, msgspec.convert(given, ChangeChannel))
            return await channels_page(who, changed=changed, secrets=secrets)

        return await site.submitted(request, act, channels_page)

    @post("/settings/channels/{channel_id:str}/remove", status_code=HTTP_303_SEE_OTHER)
    async def remove_channel(request: Request[Any, Any, Any], channel_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Member) -> Redirect:
            await channels.remove(desk, who.actor, channel_id)
            return site.go("/settings/channels", who.cookies)

        return await site.submitted(request, act, channels_page)

    return [channel_settings, connect_store, store_connected, add_channel, change_channel, remove_channel]
