"""Who a procedure call acts for: the signed-in user as a member of their organization, and whether they are one of
its admins. Roles (section 2.1): `admin` (the user who completed signup is the first) and `agent`; an organization's
settings (webhook subscriptions, API keys) are its admins' alone."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.helpdesk.signin import Identity, signed_in
from gateway.helpdesk.trpc import Call, ProcedureError
from storage.helpdesk import identity

ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Member:
    user_id: str
    organization_id: str
    role: str


class Members:
    def __init__(self, deps: Identity) -> None:
        self.deps = deps

    async def member(self, call: Call) -> Member:
        """The caller, in their organization; UNAUTHORIZED without a session, FORBIDDEN before signup completes."""
        who = await signed_in(call, self.deps.sessions)
        user = await self.deps.db.read(identity.user_by_id, who.user_id)
        if user is None or user.organization_id is None or user.role is None:
            raise ProcedureError("FORBIDDEN", "Complete signup first: you belong to no organization yet")
        return Member(user.id, user.organization_id, user.role)

    async def admin(self, call: Call) -> Member:
        """The caller, who must be an admin of their organization (FORBIDDEN otherwise)."""
        member = await self.member(call)
        if member.role != ADMIN:
            raise ProcedureError("FORBIDDEN", "Only an admin of the organization may do this")
        return member
