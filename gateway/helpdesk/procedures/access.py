"""Who a procedure call acts for, decided in one place before any procedure runs (the wire calls `Admission`): the
session its cookies sign in (UNAUTHORIZED without one), then, for a member's procedure, the user as a member of their
organization (FORBIDDEN before signup completes), and for an admin's, one of its admins (FORBIDDEN otherwise).

Sessions are resolved once per HTTP request (a batch's calls share it, so a transparent refresh rotates the refresh
token once), and checked alive in storage on every request: a sign-out or a deactivation holds on the very next
request."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.helpdesk.accounts.sessions import Resolved, Sessions, SignedIn
from gateway.helpdesk.procedures.wire import Access, Call, ProcedureError
from operations.common.actors import Actor
from storage.common.db import Database
from storage.helpdesk import accounts

_RESOLVED = "helpdesk_session"


def end_session(call: Call) -> None:
    """The calls after this one in a batch are signed out too."""
    call.request.state[_RESOLVED] = Resolved(None)


@dataclass(frozen=True, slots=True)
class Admission:
    db: Database
    sessions: Sessions

    async def __call__(self, call: Call, access: Access) -> None:
        if access == "public":
            return
        call.session = await self._session(call)
        if access == "signed_in":
            return
        member = call.session.member or await self._member(call.session.user_id)
        if member.organization_id is None or member.role is None:
            raise ProcedureError("FORBIDDEN", "Complete signup first: you belong to no organization yet")
        call.member = Actor(member.organization_id, call.session.user_id, member.role)  # type: ignore[arg-type]
        if access == "admin" and not call.member.is_admin:
            raise ProcedureError("FORBIDDEN", "Only an admin of the organization may do this")

    async def _member(self, user_id: str) -> accounts.Member:
        """Where the user belongs, read (after a refresh: an access token's check tells it otherwise)."""
        user = await self.db.read(accounts.user_by_id, user_id)
        if user is not None and user.deactivated_at is not None:  # their sessions ended with it: a backstop
            raise ProcedureError("UNAUTHORIZED", "This account was deactivated by an admin of its organization")
        return accounts.Member(user.organization_id, user.role) if user is not None else accounts.Member(None, None)

    async def _session(self, call: Call) -> SignedIn:
        resolved = call.request.state.get(_RESOLVED)
        if resolved is None:
            resolved = await self.sessions.resolve(call.request.cookies)
            call.request.state[_RESOLVED] = resolved
            call.cookies.extend(resolved.cookies)
        if resolved.signed_in is None:
            raise ProcedureError("UNAUTHORIZED", "Sign in first: no valid session")
        return resolved.signed_in
