"""Inbound channels (docs/helpdesk.md, "Inbound channels"): an organization's admins open and remove them, as do keys
with `integrations:*`; a channel's generated secrets are shown once, when it is opened. And the inbound messages the
channels received, with what each became."""

from __future__ import annotations

from typing import Annotated

import msgspec

from operations.common.actors import Actor
from operations.common.errors import Conflict, Invalid, NotFound, StaleCursor
from operations.common.mail import SmtpServer
from operations.common.pages import Page
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Cursor, Limit, PersonName, Uuid, is_uuid
from storage.common.paging import CursorNotFound
from storage.helpdesk import channels, inbound
from storage.helpdesk.channels import ChannelRecord
from topics.helpdesk.inbound import ChannelKindName
from wire.text import LINE, TEXT

MANAGE = "manage channels"
NOT_FOUND = "No channel with that id in this organization"
Address = Annotated[str, msgspec.Meta(min_length=1, max_length=320, pattern=LINE, examples=["support@acme.example"])]


class CreateChannel(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A channel of one kind: the addresses that route to it (an inbound address, a phone number, an id), the secrets
    its provider issued, and its settings. The secrets the helpdesk makes for it are in the answer, once."""

    kind: ChannelKindName
    name: PersonName
    addresses: Annotated[list[Address], msgspec.Meta(max_length=20)] = msgspec.field(default_factory=list)
    secrets: dict[
        Annotated[str, msgspec.Meta(max_length=64, pattern=LINE)],
        Annotated[str, msgspec.Meta(min_length=1, max_length=4096, pattern=LINE)],
    ] = msgspec.field(default_factory=dict)
    settings: dict[
        Annotated[str, msgspec.Meta(max_length=64, pattern=LINE)],
        Annotated[str, msgspec.Meta(max_length=1600, pattern=TEXT)],
    ] = msgspec.field(default_factory=dict)


SecretName = Annotated[str, msgspec.Meta(max_length=64, pattern=LINE)]


class ChangeChannel(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What changes on a channel of `kind` (its kind, named so that what changes is checked against it: another is
    409); what is not given stays. `secrets`: its provider's secrets set anew (an empty value removes one); `rotate`:
    secrets the helpdesk made for it made anew, shown in the answer once (a URL token or a verify token that routes to
    the channel routes by its new value only); `settings`: set (an empty value removes one)."""

    kind: ChannelKindName
    name: PersonName | msgspec.UnsetType = msgspec.UNSET
    secrets: dict[SecretName, Annotated[str, msgspec.Meta(max_length=4096, pattern=LINE)]] = msgspec.field(
        default_factory=dict
    )
    rotate: Annotated[list[SecretName], msgspec.Meta(max_length=8)] = msgspec.field(default_factory=list)
    settings: dict[SecretName, Annotated[str, msgspec.Meta(max_length=1600, pattern=TEXT)]] = msgspec.field(
        default_factory=dict
    )


class ChannelChange(ChangeChannel, kw_only=True):
    """A change of the channel `id` (the procedures' input: the id beside what changes)."""

    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class ChannelId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class ListInbound(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    channel_id: Uuid | None = None
    classification: Annotated[str, msgspec.Meta(max_length=32, pattern=r"^[a-z_]+$")] | None = None
    limit: Limit = 20
    cursor: Cursor | None = None


_PORT = r"(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
SMTP_URL = (
    r"^(smtp|smtps|smtp\+starttls)://([^@/:\[\]?#\x00-\x20\x7f]+(:[^@/\[\]?#\x00-\x20\x7f]*)?@)?"
    rf"[A-Za-z0-9.-]+(:{_PORT})?$"
)
"""What a channel's `smtp_url` secret looks like (the OpenAPI document says so; `_sound` checks it)."""


def _sound(secrets: dict[str, str]) -> None:
    """A channel's own SMTP server must be one (`smtp://`, `smtp+starttls://` or `smtps://`)."""
    if secrets.get("smtp_url"):
        try:
            SmtpServer.parse(secrets["smtp_url"])
        except ValueError as wrong:
            raise Invalid(f"secrets.smtp_url must be {wrong}") from None


async def open_channel(desk: Helpdesk, actor: Actor, given: CreateChannel) -> tuple[ChannelRecord, dict[str, str]]:
    """The new channel and the secrets made for it (shown this once)."""
    actor.require_admin(MANAGE)
    _sound(given.secrets)
    try:
        return await desk.db.write(
            channels.open_channel,
            desk.cipher,
            actor.organization_id,
            kind=given.kind,
            name=given.name,
            addresses=given.addresses,
            given=given.secrets,
            settings=given.settings,
            now=desk.clock(),
        )
    except channels.InvalidChannel as invalid:
        raise Invalid(str(invalid)) from None
    except channels.AddressTaken as taken:
        raise Conflict(str(taken)) from None


async def listing(desk: Helpdesk, actor: Actor) -> list[ChannelRecord]:
    actor.require_admin(MANAGE)
    return await desk.db.read(channels.listing, desk.cipher, actor.organization_id)


async def get(desk: Helpdesk, actor: Actor, channel_id: str) -> ChannelRecord:
    actor.require_admin(MANAGE)
    found = (
        await desk.db.read(channels.get, desk.cipher, actor.organization_id, channel_id)
        if is_uuid(channel_id)
        else None
    )
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


async def change(
    desk: Helpdesk, actor: Actor, channel_id: str, given: ChangeChannel
) -> tuple[ChannelRecord, dict[str, str]]:
    """The changed channel and the secrets made anew for it (shown this once)."""
    actor.require_admin(MANAGE)
    _sound(given.secrets)
    try:
        changed = (
            await desk.db.write(
                channels.change,
                desk.cipher,
                actor.organization_id,
                channel_id,
                kind=given.kind,
                name=given.name or None,
                given=given.secrets,
                rotate=given.rotate,
                settings=given.settings,
                now=desk.clock(),
            )
            if is_uuid(channel_id)
            else None
        )
    except channels.InvalidChannel as invalid:
        raise Invalid(str(invalid)) from None
    except channels.OtherKind as other:
        raise Conflict(str(other)) from None
    if changed is None:
        raise NotFound(NOT_FOUND)
    return changed


async def remove(desk: Helpdesk, actor: Actor, channel_id: str) -> None:
    """Its addresses route nothing from now on, and are free again."""
    actor.require_admin(MANAGE)
    if not (
        is_uuid(channel_id) and await desk.db.write(channels.remove, actor.organization_id, channel_id, desk.clock())
    ):
        raise NotFound(NOT_FOUND)


async def inbound_messages(desk: Helpdesk, actor: Actor, given: ListInbound) -> Page[inbound.EventRecord]:
    try:
        found, has_more = await desk.db.read(
            inbound.listing,
            actor.organization_id,
            channel_id=given.channel_id,
            classification=given.classification,
            limit=given.limit,
            cursor=given.cursor,
        )
    except CursorNotFound:
        raise StaleCursor("cursor names no inbound message of this listing") from None
    return Page(found, has_more)
