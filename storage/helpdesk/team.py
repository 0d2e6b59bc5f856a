"""An organization's team: its members (their roles, deactivation) and its invitations, as units of work. Each change
writes its activity events (section 6.2, aggregate `user`) in its own transaction. An organization always keeps one
active admin: the changes that would leave it none lock the organization's row first (two admins demoting each other
at once take turns) and refuse (`LastAdmin`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, func, insert, select, update
from sqlalchemy.engine import Connection

from storage.helpdesk import accounts, events, tickets
from storage.helpdesk.accounts import USERS, UserRecord
from storage.helpdesk.models import Invitation
from storage.helpdesk.workspaces import ORGANIZATIONS
from wire.ids import new_uuid

INVITATIONS = cast(Table, Invitation.__table__)
ADMIN = "admin"
AGENT = "agent"
OPEN_STATUSES = ("open", "pending")
"""A deactivated member's tickets in these statuses are unassigned or reassigned; resolved and closed ones keep their
assignee (who answered them)."""


class LastAdmin(Exception):
    """The change would leave the organization without an active admin (409)."""


class NotAMember(Exception):
    """No such member of the organization (404)."""


class AddressTaken(Exception):
    """The address belongs to a user of another organization: a user belongs to one organization (409)."""


class AlreadyMember(Exception):
    """The address belongs to a member of this organization already (409)."""


@dataclass(frozen=True, slots=True)
class MemberRecord:
    id: str
    email: str
    name: str
    avatar_url: str | None
    organization_id: str
    role: str
    created_at: datetime
    updated_at: datetime
    deactivated_at: datetime | None

    @property
    def active(self) -> bool:
        return self.deactivated_at is None


@dataclass(frozen=True, slots=True)
class InvitationRecord:
    id: str
    organization_id: str
    email: str
    role: str
    invited_by: str | None
    created_at: datetime
    expires_at: datetime
    accepted_at: datetime | None
    revoked_at: datetime | None


def _member(row: Any) -> MemberRecord:
    return MemberRecord(**{name: getattr(row, name) for name in MemberRecord.__slots__})  # type: ignore[attr-defined]


def _invitation(row: Any) -> InvitationRecord:
    return InvitationRecord(**{name: getattr(row, name) for name in InvitationRecord.__slots__})  # type: ignore[attr-defined]


def members(connection: Connection, organization_id: str) -> list[MemberRecord]:
    """The organization's members, active and deactivated, oldest first."""
    rows = connection.execute(
        select(USERS).where(USERS.c.organization_id == organization_id).order_by(USERS.c.created_at, USERS.c.id)
    )
    return [_member(row) for row in rows]


def member(connection: Connection, organization_id: str, user_id: str) -> MemberRecord | None:
    row = connection.execute(
        select(USERS).where(USERS.c.organization_id == organization_id, USERS.c.id == user_id)
    ).first()
    return _member(row) if row else None


def _lock_organization(connection: Connection, organization_id: str) -> None:
    """Changes of the organization's admins take turns (PostgreSQL; SQLite has one writer at a time anyway)."""
    connection.execute(select(ORGANIZATIONS.c.id).where(ORGANIZATIONS.c.id == organization_id).with_for_update())


def _other_active_admins(connection: Connection, organization_id: str, user_id: str) -> int:
    return int(
        connection.execute(
            select(func.count()).where(
                USERS.c.organization_id == organization_id,
                USERS.c.role == ADMIN,
                USERS.c.deactivated_at.is_(None),
                USERS.c.id != user_id,
            )
        ).scalar_one()
    )


def _changed(connection: Connection, organization_id: str, user_id: str) -> MemberRecord:
    found = member(connection, organization_id, user_id)
    assert found is not None
    return found


def _user_event(
    connection: Connection,
    organization_id: str,
    user_id: str,
    event_type: str,
    data: dict[str, Any],
    *,
    actor_id: str | None,
    now: datetime,
) -> None:
    events.record_rows(
        connection, [events.row(organization_id, ("user", user_id), event_type, data, actor_id=actor_id, now=now)]
    )


def change_role(
    connection: Connection, organization_id: str, user_id: str, role: str, *, actor_id: str | None, now: datetime
) -> MemberRecord:
    """The member with `role`, and its `role_changed` event (none when it had that role already)."""
    _lock_organization(connection, organization_id)
    current = member(connection, organization_id, user_id)
    if current is None:
        raise NotAMember(user_id)
    if current.role == role:
        return current
    if current.role == ADMIN and current.active and not _other_active_admins(connection, organization_id, user_id):
        raise LastAdmin(user_id)
    connection.execute(update(USERS).where(USERS.c.id == user_id).values(role=role, updated_at=now))
    data = {"old_role": current.role, "new_role": role}
    _user_event(connection, organization_id, user_id, "role_changed", data, actor_id=actor_id, now=now)
    return _changed(connection, organization_id, user_id)


def deactivate(
    connection: Connection,
    organization_id: str,
    user_id: str,
    *,
    reassign_to: str | None,
    actor_id: str | None,
    now: datetime,
    recorded: list[str],
) -> tuple[MemberRecord, int]:
    """The member deactivated, with its `deactivated` event: every session of theirs ends now, and their open and
    pending tickets go to `reassign_to` (an active member) or are unassigned, each with its own events. Returns the
    member and how many tickets moved. A member deactivated already is left as it is."""
    _lock_organization(connection, organization_id)
    current = member(connection, organization_id, user_id)
    if current is None:
        raise NotAMember(user_id)
    if not current.active:
        return current, 0
    if current.role == ADMIN and not _other_active_admins(connection, organization_id, user_id):
        raise LastAdmin(user_id)
    if reassign_to is not None:
        heir = member(connection, organization_id, reassign_to)
        if heir is None or not heir.active or heir.id == user_id:
            raise tickets.UnknownAssignee(reassign_to)
    connection.execute(update(USERS).where(USERS.c.id == user_id).values(deactivated_at=now, updated_at=now))
    accounts.end_sessions(connection, user_id, "deactivated", now)
    _user_event(connection, organization_id, user_id, "deactivated", {}, actor_id=actor_id, now=now)
    moved = 0
    for ticket_id in tickets.open_of_assignee(connection, organization_id, user_id, OPEN_STATUSES):
        changes = tickets.Changes(assignee_id=reassign_to or "")
        tickets.change(connection, organization_id, ticket_id, changes, actor_id=actor_id, now=now, recorded=recorded)
        moved += 1
    return _changed(connection, organization_id, user_id), moved


def reactivate(
    connection: Connection, organization_id: str, user_id: str, *, actor_id: str | None, now: datetime
) -> MemberRecord:
    """The member active again (they sign in anew), with a `reactivated` event."""
    current = member(connection, organization_id, user_id)
    if current is None:
        raise NotAMember(user_id)
    if current.active:
        return current
    connection.execute(update(USERS).where(USERS.c.id == user_id).values(deactivated_at=None, updated_at=now))
    _user_event(connection, organization_id, user_id, "reactivated", {}, actor_id=actor_id, now=now)
    return _changed(connection, organization_id, user_id)


# Invitations ------------------------------------------------------------------------------------------------------


def invite(
    connection: Connection,
    organization_id: str,
    email: str,
    *,
    token_hash: str,
    invited_by: str | None,
    lifetime: timedelta,
    now: datetime,
) -> InvitationRecord:
    """A new invitation to join as an agent; an earlier pending one to the same address is revoked (the newest link is
    the one that works). Raises AlreadyMember or AddressTaken for an address that has an organization."""
    address = email.strip().lower()
    user = accounts.user_by_email(connection, address)
    if user is not None and user.organization_id == organization_id:
        raise AlreadyMember(address)
    if user is not None and user.organization_id is not None:
        raise AddressTaken(address)
    connection.execute(
        update(INVITATIONS).where(_pending(organization_id, now), INVITATIONS.c.email == address).values(revoked_at=now)
    )
    invitation = InvitationRecord(
        new_uuid(), organization_id, address, AGENT, invited_by, now, now + lifetime, None, None
    )
    values = {name: getattr(invitation, name) for name in InvitationRecord.__slots__}  # type: ignore[attr-defined]
    connection.execute(insert(INVITATIONS).values(**values, token_hash=token_hash))
    return invitation


def _pending(organization_id: str, now: datetime) -> Any:
    return (
        (INVITATIONS.c.organization_id == organization_id)
        & INVITATIONS.c.accepted_at.is_(None)
        & INVITATIONS.c.revoked_at.is_(None)
        & (INVITATIONS.c.expires_at > now)
    )


def pending_invitations(connection: Connection, organization_id: str, now: datetime) -> list[InvitationRecord]:
    """The invitations that can still be accepted, newest first."""
    rows = connection.execute(
        select(INVITATIONS)
        .where(_pending(organization_id, now))
        .order_by(INVITATIONS.c.created_at.desc(), INVITATIONS.c.id.desc())
    )
    return [_invitation(row) for row in rows]


def revoke_invitation(connection: Connection, organization_id: str, invitation_id: str, now: datetime) -> bool:
    """False when the organization has no such pending invitation."""
    revoked = connection.execute(
        update(INVITATIONS)
        .where(_pending(organization_id, now), INVITATIONS.c.id == invitation_id)
        .values(revoked_at=now)
    )
    return revoked.rowcount == 1


class InvitationInvalid(Exception):
    """The link is unknown, used, revoked or expired."""


def accept(connection: Connection, token_hash: str, now: datetime) -> UserRecord:
    """The invited person as a member of the organization, as an agent (made when new; their address proven by the
    link), with a user `created` event; the link is used up. Raises InvitationInvalid, or AddressTaken when the address
    joined another organization since."""
    row = connection.execute(select(INVITATIONS).where(INVITATIONS.c.token_hash == token_hash)).first()
    if (
        row is None
        or not connection.execute(
            update(INVITATIONS)
            .where(INVITATIONS.c.id == row.id, _pending(row.organization_id, now))
            .values(accepted_at=now)
        ).rowcount
    ):
        raise InvitationInvalid
    user = accounts.signed_in_by_email(connection, row.email, now)
    if user.organization_id is not None and user.organization_id != row.organization_id:
        raise AddressTaken(row.email)
    if user.organization_id == row.organization_id:
        return user
    name = user.name or row.email.split("@", maxsplit=1)[0]
    connection.execute(
        update(USERS)
        .where(USERS.c.id == user.id, USERS.c.organization_id.is_(None))
        .values(organization_id=row.organization_id, role=row.role, name=name, deactivated_at=None, updated_at=now)
    )
    data = {"email": user.email, "role": row.role}
    _user_event(connection, row.organization_id, user.id, "created", data, actor_id=row.invited_by, now=now)
    joined = accounts.user_by_id(connection, user.id)
    assert joined is not None
    return joined
