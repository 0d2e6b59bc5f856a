"""Connecting a commerce store by the platform's app install (docs/helpdesk.md, "Commerce"): an admin names the shop,
is sent to the platform's authorize page with a single-use `state` bound to their session, and comes back to the
callback, which checks the platform's `hmac`, the state and the shop, exchanges the code for the shop's access token,
registers the four subscriptions, and only then saves the shop's commerce channel (made, or updated when the
organization has it already). A failure at any step saves nothing: the admin connects again."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.engine import Connection

from operations.common.actors import Actor
from operations.common.errors import Conflict, Forbidden, Invalid, Precondition
from operations.helpdesk.channels import MANAGE
from operations.helpdesk.commerce_app import AGAIN, CommerceApp, open_client
from operations.helpdesk.desk import Helpdesk
from storage.common.secrets import Cipher
from storage.helpdesk import channels, stores
from storage.helpdesk.channels import ChannelRecord

CALLBACK_PATH = "/settings/channels/commerce/callback"
"""Where the platform sends the admin's browser back: register PUBLIC_URL + this as the app's redirect URL."""
EVENTS_PATH = "/api/webhooks/commerce"
"""The endpoint the shop's subscriptions deliver to (spec 4.6)."""
TOPICS = ("orders/create", "orders/updated", "customers/create", "customers/update")
"""The subscriptions registered when a store is connected (spec 4.6, "Commerce")."""
FLOW_LIFETIME = timedelta(minutes=10)
"""How long an admin has, from naming the shop, to come back to the callback."""
SHOP = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}\.myshopify\.com$")
"""A shop's domain: its name, lower case, then `.myshopify.com`."""
NOT_CONFIGURED = (
    "Connecting a store by its app install is not configured here: the operator sets "
    "SIGNALYARD_HELPDESK_COMMERCE_CLIENT_ID and SIGNALYARD_HELPDESK_COMMERCE_CLIENT_SECRET (the app's credentials). "
    "Until then, add a commerce channel by hand"
)


@dataclass(frozen=True, slots=True)
class Connected:
    """A store connected: its channel, and whether it was made now (else: the one it had, updated)."""

    channel: ChannelRecord
    created: bool
    topics: tuple[str, ...] = TOPICS


def shop_domain(given: str) -> str:
    """The shop's domain as the admin typed it (surrounding spaces and case aside), or Invalid saying what it
    should look like."""
    shop = given.strip().lower()
    if not SHOP.match(shop):
        raise Invalid(
            "Give the shop's domain as the platform names it: its name then .myshopify.com, such as "
            "tea-shop.myshopify.com (letters, digits and hyphens)"
        )
    return shop


def signed_by_platform(secret: str, query: Mapping[str, str]) -> bool:
    """The platform's `hmac` of a callback: hex HMAC-SHA256, keyed by the app's secret, of every other parameter,
    sorted by name, as `name=value` joined by `&`; compared in constant time."""
    given = query.get("hmac", "")
    message = "&".join(f"{name}={value}" for name, value in sorted(query.items()) if name != "hmac")
    expected = hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), given.encode())


def _configured(desk: Helpdesk) -> CommerceApp:
    if desk.commerce is None:
        raise Precondition(NOT_CONFIGURED)
    return desk.commerce


def _person(actor: Actor) -> str:
    actor.require_admin(MANAGE)
    if actor.user_id is None:
        raise Forbidden("Only a signed-in admin connects a store, in a browser")
    return actor.user_id


async def start(desk: Helpdesk, actor: Actor, session_id: str, given_shop: str) -> tuple[str, str]:
    """The shop (its domain) and the platform's authorize URL to send the admin's browser to, with a new state bound
    to this session and shop (kept hashed, for FLOW_LIFETIME)."""
    user_id = _person(actor)
    app = _configured(desk)
    shop = shop_domain(given_shop)
    state = secrets.token_urlsafe(32)
    await desk.db.write(
        stores.begin,
        state,
        organization_id=actor.organization_id,
        user_id=user_id,
        session_id=session_id,
        shop=shop,
        now=desk.clock(),
        lifetime=FLOW_LIFETIME,
    )
    return shop, app.authorize_url(shop, state, f"{desk.public_url.rstrip('/')}{CALLBACK_PATH}")


async def finish(
    desk: Helpdesk, actor: Actor, session_id: str, query: Mapping[str, str], *, http: httpx.AsyncClient | None = None
) -> Connected:
    """The platform's answer (the callback's query) checked, the code exchanged, the subscriptions registered, and
    then the shop's commerce channel saved with the access token; or a refusal that saved nothing."""
    user_id = _person(actor)
    app = _configured(desk)
    if not signed_by_platform(app.client_secret, query):
        raise Invalid(f"This answer is not signed by the commerce platform (its hmac does not match): {AGAIN}")
    state, shop, code = query.get("state", ""), query.get("shop", ""), query.get("code", "")
    found = await desk.db.read(stores.find, state) if state else None
    if found is None or (found.organization_id, found.user_id, found.session_id) != (
        actor.organization_id,
        user_id,
        session_id,
    ):
        raise Invalid(f"This answer belongs to no connection this browser started: {AGAIN}")
    now = desk.clock()
    if found.used_at is not None:
        raise Invalid(f"This answer was used already: {AGAIN}")
    if found.expires_at <= now:
        raise Invalid(f"This connection took over {FLOW_LIFETIME.seconds // 60} minutes: {AGAIN}")
    if shop != found.shop:
        raise Invalid(f"The platform answered for {shop or 'no shop'}, not {found.shop}: {AGAIN}")
    if not code:
        raise Invalid(f"The platform sent no authorization code: {AGAIN}")
    if not await desk.db.write(stores.spend, state, now):
        raise Invalid(f"This answer was used already: {AGAIN}")
    routed = await desk.db.read(channels.route, desk.cipher, "shop", shop)
    if routed is not None and routed.organization_id != actor.organization_id:
        raise Conflict(f"{shop} is connected to another organization: it must be removed there first")
    async with open_client(http) as client:
        token = await app.exchange(client, shop, code)
        address = f"{desk.public_url.rstrip('/')}{EVENTS_PATH}"
        for topic in TOPICS:
            await app.subscribe(client, shop, token, topic, address)
    given = {"webhook_secret": app.client_secret, "api_secret": app.client_secret, "access_token": token}
    try:
        return await desk.db.write(_save, desk.cipher, actor.organization_id, shop, given, now=now)
    except channels.AddressTaken:
        raise Conflict(f"{shop} is connected to another organization: it must be removed there first") from None


def _save(
    connection: Connection, cipher: Cipher, organization_id: str, shop: str, given: dict[str, str], *, now: Any
) -> Connected:
    """The organization's commerce channel of `shop` with the install's secrets: updated when it has one, else made."""
    routed = channels.route(connection, cipher, "shop", shop)
    if routed is not None and routed.organization_id == organization_id and routed.kind == "commerce":
        changed = channels.change(
            connection,
            cipher,
            organization_id,
            routed.channel_id,
            kind="commerce",
            given=given,
            rotate=[],
            settings={},
            now=now,
        )
        assert changed is not None
        return Connected(changed[0], created=False)
    made, _ = channels.open_channel(
        connection,
        cipher,
        organization_id,
        kind="commerce",
        name=shop,
        addresses=[shop],
        given=given,
        settings={},
        now=now,
    )
    return Connected(made, created=True)
