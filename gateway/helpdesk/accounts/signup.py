"""`auth.completeSignup` (sections 3, 4.2 and 7): the first workspace of a signed-in user with a verified address,
made atomically and once (storage/helpdesk/workspaces.py).

Paid plans need a payment provider (`Billing`, Stripe Checkout): without one they are PRECONDITION_FAILED, before
anything is written. With one, the workspace is made first (`incomplete`), then its Stripe customer (made once, or
the stored one), then a Checkout Session, whose URL the answer carries. A provider failure is INTERNAL_SERVER_ERROR
and leaves the workspace `incomplete`: the next call resumes it with the same customer and a new session."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from gateway.helpdesk.accounts.redirects import is_safe_local_path
from gateway.helpdesk.accounts.signin import Accounts, Name, Redirect
from gateway.helpdesk.procedures.wire import Call, Procedure, ProcedureError
from operations.helpdesk.billing import Billing, PaymentSetupFailed, checkout_for
from storage.helpdesk import workspaces


class CompleteSignup(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    organizationName: Name  # the contract's name
    planTier: Literal["free", "pro", "business"] = "free"  # the contract's name
    redirectPath: Redirect = "/dashboard"  # the contract's name


class SignupUser(msgspec.Struct):
    id: str
    email: str
    name: str
    organization_id: str | None
    role: str | None


class SignupOrganization(msgspec.Struct):
    id: str
    name: str
    slug: str


class Signup(msgspec.Struct, omit_defaults=True):
    user: SignupUser
    organization: SignupOrganization
    requiresPayment: bool  # the contract's names
    checkoutUrl: str | None = None


def _no_provider(plan: str) -> ProcedureError:
    return ProcedureError("PRECONDITION_FAILED", f"The {plan} plan needs a payment provider, and none is configured")


async def _checkout(deps: Accounts, billing: Billing | None, workspace: workspaces.Workspace) -> str:
    """A Checkout URL for the workspace's paid plan: its customer made (or reused), then a new session."""
    if billing is None:
        raise _no_provider(workspace.plan)
    try:
        made = await checkout_for(
            billing,
            deps.db,
            workspace.organization_id,
            workspace.plan,
            customer_id=workspace.billing_customer_id,
            name=workspace.name,
            email=workspace.user.email,
        )
    except PaymentSetupFailed:
        raise ProcedureError("INTERNAL_SERVER_ERROR", "Payment setup could not start: retry") from None
    return made.url


async def complete_signup(
    deps: Accounts, billing: Billing | None, user_id: str, given: CompleteSignup
) -> tuple[workspaces.Workspace, str | None]:
    """The user's workspace, made once (or the one they have), and the Checkout URL when its paid plan still waits
    for payment; a ProcedureError otherwise. `auth.completeSignup` and the signup page."""
    if not is_safe_local_path(given.redirectPath):
        raise ProcedureError("BAD_REQUEST", "redirectPath must be a path of this site, such as /dashboard")
    workspace = await deps.db.read(workspaces.existing, user_id)
    if billing is None:  # refused before anything is written
        if workspace is None and given.planTier != workspaces.FREE_PLAN:
            raise _no_provider(given.planTier)
        if workspace is not None and workspace.billing_status == workspaces.BILLING_INCOMPLETE:
            raise _no_provider(workspace.plan)
    try:
        workspace = workspace or await workspaces.sign_up(
            deps.db,
            user_id,
            name=given.name,
            organization_name=given.organizationName,
            plan=given.planTier,
            now=deps.clock(),
        )
    except workspaces.NotVerified:
        raise ProcedureError("BAD_REQUEST", "Verify your email address first: sign in with a link") from None
    except workspaces.NoSlug:
        raise ProcedureError("CONFLICT", "No free workspace address was found for this name; try another") from None
    requires_payment = workspace.billing_status == workspaces.BILLING_INCOMPLETE
    return workspace, await _checkout(deps, billing, workspace) if requires_payment else None


def procedures(deps: Accounts, billing: Billing | None = None) -> Mapping[str, Procedure]:
    async def complete(call: Call, given: CompleteSignup) -> Signup:
        if "authorization" in call.request.headers:
            raise ProcedureError("UNAUTHORIZED", "API keys do not authorize auth.completeSignup: sign in instead")
        workspace, checkout_url = await complete_signup(deps, billing, call.signed_in.user_id, given)
        user = workspace.user
        return Signup(
            SignupUser(user.id, user.email, user.name, user.organization_id, user.role),
            SignupOrganization(workspace.organization_id, workspace.name, workspace.slug),
            checkout_url is not None,
            checkout_url,
        )

    return {"auth.completeSignup": Procedure("mutation", CompleteSignup, complete, "signed_in")}
