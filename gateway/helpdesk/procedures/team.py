"""The team for signed-in members: `team.members` (any member: whom tickets can be assigned to), and for admins
`team.invite`, `team.invitations`, `team.revokeInvitation`, `team.changeRole`, `team.deactivate`, `team.reactivate`."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.helpdesk.procedures.wire import Call, Procedure
from gateway.helpdesk.schemas import Deleted, Invitation, Member
from operations.helpdesk import team
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Uuid
from operations.helpdesk.team import ChangeRole, Deactivate, InvitationId, Invite, MemberId


class ChangeRoleOf(ChangeRole, kw_only=True):
    user_id: Uuid


class DeactivateMember(Deactivate, kw_only=True):
    user_id: Uuid


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def members(call: Call, _: None) -> list[Member]:
        return [Member.of(member) for member in await team.members(desk, call.actor)]

    async def invite(call: Call, given: Invite) -> Invitation:
        return Invitation.of(await team.invite(desk, call.actor, given))

    async def invitations(call: Call, _: None) -> list[Invitation]:
        return [Invitation.of(invitation) for invitation in await team.invitations(desk, call.actor)]

    async def revoke_invitation(call: Call, given: InvitationId) -> Deleted:
        await team.revoke_invitation(desk, call.actor, given.id)
        return Deleted(id=given.id)

    async def change_role(call: Call, given: ChangeRoleOf) -> Member:
        return Member.of(await team.change_role(desk, call.actor, given.user_id, given))

    async def deactivate(call: Call, given: DeactivateMember) -> Member:
        return Member.of(await team.deactivate(desk, call.actor, given.user_id, given))

    async def reactivate(call: Call, given: MemberId) -> Member:
        return Member.of(await team.reactivate(desk, call.actor, given.user_id))

    return {
        "team.members": Procedure("query", None, members),
        "team.invite": Procedure("mutation", Invite, invite, "admin"),
        "team.invitations": Procedure("query", None, invitations, "admin"),
        "team.revokeInvitation": Procedure("mutation", InvitationId, revoke_invitation, "admin"),
        "team.changeRole": Procedure("mutation", ChangeRoleOf, change_role, "admin"),
        "team.deactivate": Procedure("mutation", DeactivateMember, deactivate, "admin"),
        "team.reactivate": Procedure("mutation", MemberId, reactivate, "admin"),
    }
