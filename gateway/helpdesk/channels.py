"""Inbound channels: the procedures `channels.list/create/delete` for an organization's admins, the REST routes
`/api/v1/channels` (scopes `integrations:read` and `integrations:write`), and `GET /api/v1/inbound-messages` (scope
`tickets:read`), the stored provider calls and what each became. A channel's secrets are shown once, when it is made
(the ones the helpdesk generated); never again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.errors import ERRORS, HelpdeskError
from gateway.helpdesk.events import is_uuid
from gateway.helpdesk.members import Members
from gateway.helpdesk.schemas import (
    ChannelCreated,
    ChannelDeleted,
    ChannelList,
    ChannelObject,
    CreateChannel,
    InboundMessage,
    InboundMessageList,
)
from gateway.helpdesk.tickets import UUID, Cursor, Limit, next_cursor
from gateway.helpdesk.trpc import Call, Procedure, ProcedureError
from storage.common.paging import CursorNotFound
from storage.helpdesk import channels, inbound
from wire.timestamps import iso

_decode_create = msgspec.json.Decoder(CreateChannel).decode
NOT_FOUND = "No channel with that id in this organization"


def channel_object(channel: channels.ChannelRecord) -> ChannelObject:
    return ChannelObject(
        id=channel.id,
        kind=channel.kind,  # type: ignore[arg-type]
        name=channel.name,
        addresses=[address for _, address in channel.addresses],
        settings=channel.settings,
        secret_names=channel.secret_names,
        created_at=iso(channel.created_at, "milliseconds"),
    )


def created_object(channel: channels.ChannelRecord, generated: dict[str, str]) -> ChannelCreated:
    shown = channel_object(channel)
    return ChannelCreated(**msgspec.structs.asdict(shown), secrets=generated)


def inbound_object(event: inbound.EventRecord) -> InboundMessage:
    return InboundMessage(
        id=event.id,
        channel_id=event.channel_id,
        provider=event.provider,
        dedup_key=event.dedup_key,
        state=event.state,  # type: ignore[arg-type]
        classification=event.classification,
        ticket_id=event.ticket_id,
        conversation_id=event.conversation_id,
        outcome=event.outcome,
        created_at=iso(event.created_at, "milliseconds"),
        processed_at=iso(event.processed_at, "milliseconds") if event.processed_at else None,
    )


async def open_channel(helpdesk: HelpdeskGateway, organization_id: str, body: CreateChannel) -> ChannelCreated:
    """The new channel and its generated secrets; InvalidChannel and AddressTaken as the caller's refusals."""
    channel, generated = await helpdesk.db.write(
        channels.open_channel,
        helpdesk.webhooks.cipher,
        organization_id,
        kind=body.kind,
        name=body.name,
        addresses=body.addresses,
        given=body.secrets,
        settings=body.settings,
        now=helpdesk.clock(),
    )
    return created_object(channel, generated)


class ChannelsController(Controller):
    path = "/api/v1/channels"
    tags = ["channels"]

    @get("/", guards=[requires("integrations:read")], **docs.LIST_CHANNELS)
    async def list_channels(
        self, request: Request[HelpdeskPrincipal, Any, Any], helpdesk: NamedDependency[HelpdeskGateway]
    ) -> ChannelList:
        found = await helpdesk.db.read(channels.listing, helpdesk.webhooks.cipher, request.user.owner_id)
        return ChannelList(data=[channel_object(channel) for channel in found])

    @post("/", guards=[requires("integrations:write")], **docs.CREATE_CHANNEL)
    async def create_channel(
        self, request: Request[HelpdeskPrincipal, Any, Any], helpdesk: NamedDependency[HelpdeskGateway]
    ) -> Response[ChannelCreated]:
        body = decode_body(_decode_create, await request.body(), ERRORS)
        try:
            created = await open_channel(helpdesk, request.user.owner_id, body)
        except channels.InvalidChannel as invalid:
            raise HelpdeskError(400, str(invalid)) from None
        except channels.AddressTaken as taken:
            raise HelpdeskError(409, str(taken)) from None
        return Response(created, status_code=201)

    @get("/{channel_id:str}", guards=[requires("integrations:read")], **docs.GET_CHANNEL)
    async def get_channel(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        channel_id: FromPath[str],
    ) -> ChannelObject:
        channel = (
            await helpdesk.db.read(channels.get, helpdesk.webhooks.cipher, request.user.owner_id, channel_id)
            if is_uuid(channel_id)
            else None
        )
        if channel is None:
            raise HelpdeskError(404, NOT_FOUND)
        return channel_object(channel)

    @delete("/{channel_id:str}", guards=[requires("integrations:write")], **docs.DELETE_CHANNEL)
    async def delete_channel(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        channel_id: FromPath[str],
    ) -> ChannelDeleted:
        removed = is_uuid(channel_id) and await helpdesk.db.write(
            channels.remove, request.user.owner_id, channel_id, helpdesk.clock()
        )
        if not removed:
            raise HelpdeskError(404, NOT_FOUND)
        return ChannelDeleted(id=channel_id, deleted=True)


class InboundMessagesController(Controller):
    path = "/api/v1/inbound-messages"
    tags = ["inbound"]

    @get("/", guards=[requires("tickets:read")], **docs.LIST_INBOUND)
    async def list_inbound(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        channel_id: Annotated[str | None, Parameter(pattern=UUID, description="Only this channel's")] = None,
        classification: Annotated[
            str | None,
            Parameter(
                max_length=32,
                pattern=r"^[a-z_]+$",
                description="Only this class: inbound, bounce, auto_reply, outbound_copy, dialpad_voicemail, ...",
            ),
        ] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> InboundMessageList:
        try:
            found, has_more = await helpdesk.db.read(
                inbound.listing,
                request.user.owner_id,
                channel_id=channel_id,
                classification=classification,
                limit=limit,
                cursor=cursor,
            )
        except CursorNotFound:
            raise HelpdeskError(404, "cursor names no inbound message of this listing") from None
        data = [inbound_object(event) for event in found]
        return InboundMessageList(data=data, has_more=has_more, next_cursor=next_cursor([e.id for e in data], has_more))


# The procedures (admins only, as webhooks.* and apiKeys.*)


class IdInput(msgspec.Struct, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


def procedures(members: Members, helpdesk: HelpdeskGateway) -> Mapping[str, Procedure]:
    async def list_channels(call: Call, _: None) -> list[dict[str, Any]]:
        member = await members.admin(call)
        found = await helpdesk.db.read(channels.listing, helpdesk.webhooks.cipher, member.organization_id)
        return [msgspec.to_builtins(channel_object(channel)) for channel in found]

    async def create(call: Call, given: CreateChannel) -> dict[str, Any]:
        member = await members.admin(call)
        try:
            created = await open_channel(helpdesk, member.organization_id, given)
        except channels.InvalidChannel as invalid:
            raise ProcedureError("BAD_REQUEST", str(invalid)) from None
        except channels.AddressTaken as taken:
            raise ProcedureError("CONFLICT", str(taken)) from None
        return msgspec.to_builtins(created)  # type: ignore[no-any-return]

    async def remove(call: Call, given: IdInput) -> dict[str, Any]:
        member = await members.admin(call)
        removed = is_uuid(given.id) and await helpdesk.db.write(
            channels.remove, member.organization_id, given.id, helpdesk.clock()
        )
        if not removed:
            raise ProcedureError("NOT_FOUND", NOT_FOUND)
        return {"success": True, "id": given.id}

    return {
        "channels.list": Procedure("query", None, list_channels),
        "channels.create": Procedure("mutation", CreateChannel, create),
        "channels.delete": Procedure("mutation", IdInput, remove),
    }
