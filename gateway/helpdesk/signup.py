"""`auth.completeSignup` (sections 3, 4.2 and 7): the first workspace of a signed-in user with a verified address,
made atomically and once (storage/helpdesk/workspaces.py). Paid plans need a payment provider; until one is
configured they are PRECONDITION_FAILED, before anything is written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from gateway.helpdesk.auth import Identity, Name, signed_in
from gateway.helpdesk.redirects import is_safe_local_path
from gateway.helpdesk.trpc import Call, Procedure, ProcedureError
from storage.helpdesk import workspaces


class CompleteSignup(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    organizationName: Name  # the contract's name
    planTier: Literal["free", "pro", "business"] = "free"  # the contract's name
    redirectPath: Annotated[str, msgspec.Meta(max_length=2048)] = "/dashboard"  # the contract's name


def procedures(deps: Identity) -> Mapping[str, Procedure]:
    async def complete_signup(call: Call, given: CompleteSignup) -> dict[str, Any]:
        if "authorization" in call.request.headers:
            raise ProcedureError("UNAUTHORIZED", "API keys do not authorize auth.completeSignup: sign in instead")
        who = await signed_in(call, deps.sessions)
        if not is_safe_local_path(given.redirectPath):
            raise ProcedureError("BAD_REQUEST", "redirectPath must be a path of this site, such as /dashboard")
        workspace = await deps.db.read(workspaces.existing, who.user_id)
        if workspace is None and given.planTier != "free":
            raise ProcedureError(
                "PRECONDITION_FAILED", f"The {given.planTier} plan needs a payment provider, and none is configured"
            )
        try:
            workspace = workspace or await workspaces.sign_up(
                deps.db,
                who.user_id,
                name=given.name,
                organization_name=given.organizationName,
                plan=given.planTier,
                now=deps.clock(),
            )
        except workspaces.NotVerified:
            raise ProcedureError("BAD_REQUEST", "Verify your email address first: sign in with a link") from None
        except workspaces.NoSlug:
            raise ProcedureError("CONFLICT", "No free workspace address was found for this name; try another") from None
        user = workspace.user
        return {
            "user": {
                "id": user.id,
                "email": user.email,
                "name": user.name,
                "organization_id": user.organization_id,
                "role": user.role,
            },
            "organization": {"id": workspace.organization_id, "name": workspace.name, "slug": workspace.slug},
            "requiresPayment": False,
        }

    return {"auth.completeSignup": Procedure("mutation", CompleteSignup, complete_signup)}
