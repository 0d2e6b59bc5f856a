"""Inbound channels over REST: `/api/v1/channels` (scopes `integrations:read` and `integrations:write`) and
`GET /api/v1/inbound-messages` (scope `tickets:read`), the stored provider calls and what each became. A channel's
secrets are shown once, when it is made (the ones the helpdesk generated); never again."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.errors import ERRORS
from gateway.helpdesk.rest.paging import Cursor, Limit
from gateway.helpdesk.schemas import (
    ChannelCreated,
    ChannelList,
    ChannelObject,
    Deleted,
    InboundMessage,
    InboundMessageList,
)
from operations.helpdesk import channels
from operations.helpdesk.channels import ChangeChannel, CreateChannel, ListInbound
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import UUID_PATTERN

_decode_create = msgspec.json.Decoder(CreateChannel).decode
_decode_change = msgspec.json.Decoder(ChangeChannel).decode


class ChannelsController(Controller):
    path = "/api/v1/channels"
    tags = ["channels"]

    @get("/", guards=[requires("integrations:read")], **docs.LIST_CHANNELS)
    async def list_channels(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> ChannelList:
        return ChannelList(data=[ChannelObject.of(c) for c in await channels.listing(desk, actor_of(request))])

    @post("/", guards=[requires("integrations:write")], **docs.CREATE_CHANNEL)
    async def create_channel(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> Response[ChannelCreated]:
        given = decode_body(_decode_create, await request.body(), ERRORS)
        channel, generated = await channels.open_channel(desk, actor_of(request), given)
        return Response(ChannelCreated.made(channel, generated), status_code=201)

    @get("/{channel_id:str}", guards=[requires("integrations:read")], **docs.GET_CHANNEL)
    async def get_channel(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], channel_id: FromPath[str]
    ) -> ChannelObject:
        return ChannelObject.of(await channels.get(desk, actor_of(request), channel_id))

    @patch("/{channel_id:str}", guards=[requires("integrations:write")], **docs.UPDATE_CHANNEL)
    async def update_channel(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], channel_id: FromPath[str]
    ) -> ChannelCreated:
        given = decode_body(_decode_change, await request.body(), ERRORS)
        return ChannelCreated.made(*await channels.change(desk, actor_of(request), channel_id, given))

    @delete("/{channel_id:str}", guards=[requires("integrations:write")], **docs.DELETE_CHANNEL)
    async def delete_channel(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], channel_id: FromPath[str]
    ) -> Deleted:
        await channels.remove(desk, actor_of(request), channel_id)
        return Deleted(id=channel_id, deleted=True)


class InboundMessagesController(Controller):
    path = "/api/v1/inbound-messages"
    tags = ["inbound"]

    @get("/", guards=[requires("tickets:read")], **docs.LIST_INBOUND)
    async def list_inbound(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        channel_id: Annotated[str | None, Parameter(pattern=UUID_PATTERN, description="Only this channel's")] = None,
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
        given = ListInbound(channel_id=channel_id, classification=classification, limit=limit, cursor=cursor)
        page = await channels.inbound_messages(desk, actor_of(request), given)
        data = [InboundMessage.of(event) for event in page.items]
        return InboundMessageList(data=data, has_more=page.has_more, next_cursor=page.next_cursor)
