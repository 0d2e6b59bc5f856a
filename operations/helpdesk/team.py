"""The team: an organization's members and the invitations its admins send. Admins invite people by email (a mailed
single-use link that expires after INVITATION_LIFETIME; following it signs the person in and joins them as an agent),
revoke invitations, change members' roles, deactivate members (their sessions end at once; their open tickets are
unassigned or reassigned in the same change) and reactivate them. An organization always keeps one active admin;
a person belongs to one organization."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated
from urllib.parse import urlencode

import msgspec

from operations.common.actors import ROLES, Actor, Role
from operations.common.errors import Conflict, Invalid, NotFound
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Email, PersonName, Uuid, is_uuid
from storage.helpdesk import team, tickets, workspaces
from storage.helpdesk.accounts import UserRecord
from storage.helpdesk.team import InvitationRecord, MemberRecord
from wire.tokens import digest, opaque

INVITATION_LIFETIME = timedelta(days=7)
INVITE_PATH = "/auth/invite"
MANAGE = "manage the team"
NOT_A_MEMBER = "No member with that id in this organization"
LAST_ADMIN = "An organization keeps at least one active admin: make another member an admin first"


class Invite(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    email: Email


class InvitationId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Uuid


class MemberId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    user_id: Uuid


class ChangeRole(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    role: Annotated[Role, msgspec.Meta(description=f"One of {', '.join(ROLES)}")]


class Deactivate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`reassign_to`: the active member who takes the member's open and pending tickets; absent: they are
    unassigned."""

    reassign_to: Uuid | None = None


async def organization(desk: Helpdesk, actor: Actor, *, to: str = MANAGE) -> workspaces.OrganizationRecord:
    """The actor's organization: its name, address (slug), plan and billing status (admins: `to` says what for)."""
    actor.require_admin(to)
    found = await desk.db.read(workspaces.organization, actor.organization_id)
    if found is None:
        raise NotFound("This organization no longer exists")
    return found


class RenameOrganization(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The organization's new name: one line of 1 to 255 characters, as at signup (`organizationName`)."""

    name: PersonName


async def rename_organization(desk: Helpdesk, actor: Actor, given: RenameOrganization) -> workspaces.OrganizationRecord:
    """The organization under its new name (admins); its address (slug) stays, so links to it keep working."""
    actor.require_admin(MANAGE)
    name = given.name.strip()
    if not name:
        raise Invalid("The organization's name: give at least one letter or digit")
    found = await desk.db.write(workspaces.rename, actor.organization_id, name)
    if found is None:
        raise NotFound("This organization no longer exists")
    return found


async def members(desk: Helpdesk, actor: Actor) -> list[MemberRecord]:
    """Every member, active and deactivated, oldest first (whom tickets can be assigned to)."""
    return await desk.db.read(team.members, actor.organization_id)


async def member(desk: Helpdesk, actor: Actor, user_id: str) -> MemberRecord:
    found = await desk.db.read(team.member, actor.organization_id, user_id) if is_uuid(user_id) else None
    if found is None:
        raise NotFound(NOT_A_MEMBER)
    return found


async def invite(desk: Helpdesk, actor: Actor, given: Invite) -> InvitationRecord:
    """A new invitation, its link mailed to the address (an earlier pending one to it stops working)."""
    actor.require_admin(MANAGE)
    if desk.mailer is None:
        raise Invalid("No mail can be sent from here, so no invitation either")
    token = opaque("invite")
    try:
        invitation = await desk.db.write(
            team.invite,
            actor.organization_id,
            given.email,
            token_hash=digest(token),
            invited_by=actor.user_id,
            lifetime=INVITATION_LIFETIME,
            now=desk.clock(),
        )
    except team.AlreadyMember:
        raise Conflict(f"{given.email.lower()} is a member of this organization already") from None
    except team.AddressTaken:
        raise Conflict(f"{given.email.lower()} belongs to another organization: a person belongs to one") from None
    link = f"{desk.public_url.rstrip('/')}{INVITE_PATH}?{urlencode({'token': token})}"
    days = INVITATION_LIFETIME.days
    await desk.mailer.send(
        invitation.email,
        "You are invited to the helpdesk",
        f"You are invited to join your team's helpdesk. Accept by opening this link within {days} days:\n\n"
        f"{link}\n\nIt works once. If you did not expect it, ignore this mail.\n",
    )
    return invitation


async def invitations(desk: Helpdesk, actor: Actor) -> list[InvitationRecord]:
    """The invitations that can still be accepted, newest first."""
    actor.require_admin(MANAGE)
    return await desk.db.read(team.pending_invitations, actor.organization_id, desk.clock())


async def revoke_invitation(desk: Helpdesk, actor: Actor, invitation_id: str) -> None:
    actor.require_admin(MANAGE)
    revoked = is_uuid(invitation_id) and await desk.db.write(
        team.revoke_invitation, actor.organization_id, invitation_id, desk.clock()
    )
    if not revoked:
        raise NotFound("No pending invitation with that id in this organization")


class InvitationRefused(Exception):
    """Why a followed link joins nobody, in words for the person who followed it."""


async def accept(desk: Helpdesk, token: str) -> UserRecord:
    """The person a followed invitation link names, now a member (the caller signs them in)."""
    try:
        return await desk.db.write(team.accept, digest(token), desk.clock())
    except team.InvitationInvalid:
        raise InvitationRefused("This invitation is unknown, used, revoked or expired: ask for a new one") from None
    except team.AddressTaken:
        raise InvitationRefused(
            "Your address belongs to another organization's helpdesk: a person belongs to one organization"
        ) from None


async def change_role(desk: Helpdesk, actor: Actor, user_id: str, given: ChangeRole) -> MemberRecord:
    actor.require_admin(MANAGE)
    await member(desk, actor, user_id)
    try:
        return await desk.db.write(
            team.change_role, actor.organization_id, user_id, given.role, actor_id=actor.user_id, now=desk.clock()
        )
    except team.LastAdmin:
        raise Conflict(LAST_ADMIN) from None


async def deactivate(desk: Helpdesk, actor: Actor, user_id: str, given: Deactivate) -> MemberRecord:
    """Every session of theirs ends at once; their open and pending tickets go to `reassign_to` or nobody."""
    actor.require_admin(MANAGE)
    await member(desk, actor, user_id)
    try:
        deactivated, _ = await desk.changes.run(
            actor.organization_id,
            team.deactivate,
            actor.organization_id,
            user_id,
            reassign_to=given.reassign_to,
            actor_id=actor.user_id,
        )
    except team.LastAdmin:
        raise Conflict(LAST_ADMIN) from None
    except tickets.UnknownAssignee:
        raise Invalid("reassign_to names no other active member of this organization") from None
    return deactivated


async def reactivate(desk: Helpdesk, actor: Actor, user_id: str) -> MemberRecord:
    actor.require_admin(MANAGE)
    await member(desk, actor, user_id)
    return await desk.db.write(
        team.reactivate, actor.organization_id, user_id, actor_id=actor.user_id, now=desk.clock()
    )
