"""The team over REST: `/api/v1/users` (members: list, get, change role, deactivate, reactivate) and
`/api/v1/invitations` (list, invite, revoke), with scopes `users:read` and `users:write`."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.errors import ERRORS
from gateway.helpdesk.schemas import Deleted, Invitation, InvitationList, Member, MemberList
from operations.helpdesk import team
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.team import ChangeRole, Deactivate, Invite

_decode_role = msgspec.json.Decoder(ChangeRole).decode
_decode_deactivate = msgspec.json.Decoder(Deactivate).decode
_decode_invite = msgspec.json.Decoder(Invite).decode


class UsersController(Controller):
    path = "/api/v1/users"
    tags = ["users"]

    @get("/", guards=[requires("users:read")], **docs.LIST_USERS)
    async def list_users(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> MemberList:
        return MemberList(data=[Member.of(member) for member in await team.members(desk, actor_of(request))])

    @get("/{user_id:str}", guards=[requires("users:read")], **docs.GET_USER)
    async def get_user(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], user_id: FromPath[str]
    ) -> Member:
        return Member.of(await team.member(desk, actor_of(request), user_id))

    @patch("/{user_id:str}", guards=[requires("users:write")], **docs.UPDATE_USER)
    async def update_user(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], user_id: FromPath[str]
    ) -> Member:
        given = decode_body(_decode_role, await request.body(), ERRORS)
        return Member.of(await team.change_role(desk, actor_of(request), user_id, given))

    @post("/{user_id:str}/deactivate", guards=[requires("users:write")], **docs.DEACTIVATE_USER)
    async def deactivate_user(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], user_id: FromPath[str]
    ) -> Member:
        body = await request.body()
        given = decode_body(_decode_deactivate, body, ERRORS) if body else Deactivate()
        return Member.of(await team.deactivate(desk, actor_of(request), user_id, given))

    @post("/{user_id:str}/reactivate", guards=[requires("users:write")], **docs.REACTIVATE_USER)
    async def reactivate_user(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], user_id: FromPath[str]
    ) -> Member:
        return Member.of(await team.reactivate(desk, actor_of(request), user_id))


class InvitationsController(Controller):
    path = "/api/v1/invitations"
    tags = ["users"]

    @get("/", guards=[requires("users:read")], **docs.LIST_INVITATIONS)
    async def list_invitations(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> InvitationList:
        found = await team.invitations(desk, actor_of(request))
        return InvitationList(data=[Invitation.of(invitation) for invitation in found])

    @post("/", guards=[requires("users:write")], **docs.CREATE_INVITATION)
    async def create_invitation(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> Response[Invitation]:
        given = decode_body(_decode_invite, await request.body(), ERRORS)
        return Response(Invitation.of(await team.invite(desk, actor_of(request), given)), status_code=201)

    @delete("/{invitation_id:str}", guards=[requires("users:write")], **docs.DELETE_INVITATION)
    async def delete_invitation(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        invitation_id: FromPath[str],
    ) -> Deleted:
        await team.revoke_invitation(desk, actor_of(request), invitation_id)
        return Deleted(id=invitation_id)
