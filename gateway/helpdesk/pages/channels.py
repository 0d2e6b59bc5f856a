"""The agent app's channel settings (admins; docs/helpdesk.md, "Inbound channels"): the organization's channels with
the URLs to give each provider, a channel of any kind added (its addresses, the secrets its provider issued, its
settings; the secrets the helpdesk makes shown once), and one removed. Through the operations the procedures and
REST call (operations/helpdesk/channels.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.params import FromPath
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER
from litestar.types import ControllerRouterHandler

from gateway.helpdesk.inbound.routes import REGISTER
from gateway.helpdesk.pages.site import Member, Site
from operations.helpdesk import channels
from operations.helpdesk.channels import ChangeChannel, CreateChannel
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
            **values,
        )

    @get("/settings/channels")
    async def channel_settings(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, channels_page)

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

    return [channel_settings, add_channel, change_channel, remove_channel]
