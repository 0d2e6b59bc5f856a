"""Inbound channels for an organization's admins: `channels.list`, `channels.create` and `channels.update` (the
secrets made for the channel in its answer only) and `channels.delete`."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.helpdesk.procedures.webhooks import Deleted
from gateway.helpdesk.procedures.wire import Call, Procedure
from gateway.helpdesk.schemas import ChannelCreated, ChannelObject
from operations.helpdesk import channels
from operations.helpdesk.channels import ChannelChange, ChannelId, CreateChannel
from operations.helpdesk.desk import Helpdesk


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_channels(call: Call, _: None) -> list[ChannelObject]:
        return [ChannelObject.of(channel) for channel in await channels.listing(desk, call.actor)]

    async def create(call: Call, given: CreateChannel) -> ChannelCreated:
        channel, generated = await channels.open_channel(desk, call.actor, given)
        return ChannelCreated.made(channel, generated)

    async def update(call: Call, given: ChannelChange) -> ChannelCreated:
        return ChannelCreated.made(*await channels.change(desk, call.actor, given.id, given))

    async def remove(call: Call, given: ChannelId) -> Deleted:
        await channels.remove(desk, call.actor, given.id)
        return Deleted(given.id)

    return {
        "channels.list": Procedure("query", None, list_channels, "admin"),
        "channels.create": Procedure("mutation", CreateChannel, create, "admin"),
        "channels.update": Procedure("mutation", ChannelChange, update, "admin"),
        "channels.delete": Procedure("mutation", ChannelId, remove, "admin"),
    }
