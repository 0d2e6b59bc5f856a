"""The sign-in and profile procedures of section 4.2 (`auth.*`), and the sign-in link they mail.

Sign-in by link and by password are limited to 5 a minute per address (section 8). Neither tells whether an address
has an account: a link is mailed either way (the first sign-in makes the account), and a wrong password or an unknown
address get the same answer after the same work.

Social sign-in (`auth.signInWithSocial`, then `/auth/callback`) runs OpenID Connect's code flow against the provider
configured, if any (`gateway/helpdesk/social.py`); limited to 5 a minute per client address."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
import structlog
from limits import RateLimitItem
from limits import parse as limit
from litestar import Request, Response, get
from litestar.datastructures import Cookie
from litestar.params import FromQuery
from litestar.status_codes import HTTP_303_SEE_OTHER

from gateway.common.auth import NO_AUTHENTICATION
from gateway.common.limits import RateLimits
from gateway.helpdesk.accounts.credentials import Passwords
from gateway.helpdesk.accounts.redirects import is_safe_local_path
from gateway.helpdesk.accounts.sessions import Resolved, Sessions
from gateway.helpdesk.accounts.social import CALLBACK_PATH, ProviderUnavailable, SocialProvider, SocialSignInError
from gateway.helpdesk.accounts.social import COOKIE as SOCIAL_COOKIE
from gateway.helpdesk.procedures.access import end_session
from gateway.helpdesk.procedures.wire import Call, Procedure, ProcedureError
from operations.common.links import LINK_LIFETIME, LinkKind, MailedLinks
from operations.common.mail import Mailer
from operations.helpdesk import team
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.team import INVITE_PATH
from storage.common.db import Database
from storage.helpdesk import accounts
from storage.helpdesk.keys import SERVICE
from wire.text import EMAIL_PATTERN, LINE

LINK_PATH, RESET_PATH = "/auth/link", "/auth/reset"
SIGN_IN_LINK = LinkKind("sign_in", LINK_PATH, "Your sign-in link", "Sign in to the helpdesk")
RESET_LINK = LinkKind("reset", RESET_PATH, "Reset your password", "Choose a new helpdesk password")
RESET_LANDING = "/account/password?reset=1"
"""Where a used reset link sends the browser, signed in and without a password: the page that calls auth.setPassword."""
SIGN_IN_LIMIT = limit("5/minute")
PASSWORD_CHECKS_PER_CLIENT = limit("30/minute")
"""Password checks (argon2: tens of milliseconds and 19 MiB each) one client address may ask for, whatever the
account: the per-address limit alone would let a client vary the address."""
PROVIDER_ERROR = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""An `error` the provider sends back to the callback (`access_denied`...): quoted in the refusal when it is one."""

DEACTIVATED = "This account was deactivated by an admin of its organization: ask them to reactivate it"

log = structlog.get_logger("signalyard.gateway.helpdesk")

Email = Annotated[str, msgspec.Meta(max_length=320, pattern=EMAIL_PATTERN)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=255, pattern=LINE)]
Redirect = Annotated[str, msgspec.Meta(max_length=2048, pattern=LINE)]


class SignInWithEmail(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    redirectTo: Redirect | None = None  # the contract's name


class SignInWithPassword(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    password: Annotated[str, msgspec.Meta(min_length=6, max_length=1024)]


class SignInWithSocial(msgspec.Struct, forbid_unknown_fields=True):
    redirectTo: Redirect | None = None  # the contract's name


class SendPasswordReset(msgspec.Struct, forbid_unknown_fields=True):
    email: Email


class SetPassword(msgspec.Struct, forbid_unknown_fields=True):
    password: Annotated[str, msgspec.Meta(min_length=8, max_length=1024)]


class ChangePassword(msgspec.Struct, forbid_unknown_fields=True):
    currentPassword: Annotated[str, msgspec.Meta(max_length=1024)]  # the contract's name
    newPassword: Annotated[str, msgspec.Meta(min_length=8, max_length=1024)]


class UpdateProfile(msgspec.Struct, forbid_unknown_fields=True):
    """Absent fields stay as they are; `avatar_url: null` removes the avatar."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    avatar_url: (
        Annotated[str, msgspec.Meta(max_length=2048, pattern=r"^https?://[^\x00-\x20\x7f]*$")]
        | msgspec.UnsetType
        | None
    ) = msgspec.UNSET
    preferences: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


MAX_PREFERENCES_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Accounts:
    """What the auth procedures need."""

    db: Database
    sessions: Sessions
    passwords: Passwords
    limits: RateLimits
    mailer: Mailer
    public_url: str
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    social: SocialProvider | None = None
    """The OpenID Connect provider of social sign-in; None: not configured (PRECONDITION_FAILED)."""


def sign_in_limited(_: RateLimitItem, retry_after_s: int) -> ProcedureError:
    """A sign-in limit's answer (section 7): TOO_MANY_REQUESTS, -32600, 429, the seconds to wait."""
    return ProcedureError(
        "TOO_MANY_REQUESTS",
        f"Too many attempts for this address: retry in {retry_after_s} seconds",
        {"Retry-After": str(retry_after_s)},
    )


def limits_unavailable() -> ProcedureError:
    return ProcedureError("INTERNAL_SERVER_ERROR", "Sign-in is unavailable for a moment: retry shortly")


class Success(msgspec.Struct):
    success: bool = True


class User(msgspec.Struct):
    """A User as section 2.1 has it."""

    id: str
    email: str
    name: str
    avatar_url: str | None
    organization_id: str | None
    role: str | None
    preferences: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, user: accounts.UserRecord) -> User:
        return cls(
            user.id,
            user.email,
            user.name,
            user.avatar_url,
            user.organization_id,
            user.role,
            user.preferences,
            user.created_at,
            user.updated_at,
        )


class SignedInUser(msgspec.Struct):
    id: str
    email: str
    created_at: datetime


class PasswordSignIn(msgspec.Struct):
    user: SignedInUser
    success: bool = True


class SocialStart(msgspec.Struct):
    url: str


class HasPassword(msgspec.Struct):
    hasPassword: bool  # the contract's name


def _client(call: Call) -> str:
    """The calling client's address, for the limits counted per client."""
    return call.request.client.host if call.request.client else "unknown"


async def _limited(deps: Accounts, procedure: str, email: str) -> None:
    """Each of the three procedures that mail or check a password allows 5 calls a minute per address."""
    await deps.limits.hit(f"helpdesk:{procedure}:{email.strip().lower()}", [SIGN_IN_LIMIT])


def _links(deps: Accounts) -> MailedLinks:
    return MailedLinks(deps.db, SERVICE, deps.mailer, deps.public_url, lifetime=LINK_LIFETIME, clock=deps.clock)


async def send_sign_in_link(deps: Accounts, email: str, redirect_to: str | None) -> None:
    """A sign-in link mailed to `email`, whether or not it has an account (its first use makes one), going on to
    `redirect_to` (`/` when none); 5 a minute per address (a ProcedureError past that). `auth.signInWithEmail` and
    the sign-in page."""
    await _limited(deps, "signInWithEmail", email)
    await _links(deps).send(SIGN_IN_LINK, email, redirect_to or "/")


async def password_sign_in(
    deps: Accounts, given: SignInWithPassword, client: str
) -> tuple[accounts.UserRecord, Resolved]:
    """The user whose password it is, and their new session (its cookies to set); a ProcedureError otherwise: the
    same answer for a wrong password and an unknown address, after the same work. 30 password checks a minute per
    client address and 5 per account address. `auth.signInWithPassword` and the sign-in page."""
    await deps.limits.hit(f"helpdesk:password-checks:{client}", [PASSWORD_CHECKS_PER_CLIENT])
    await _limited(deps, "signInWithPassword", given.email)
    user = await deps.db.read(accounts.user_by_email, given.email)
    # checked even when there is no such user (against a decoy), so the answer's timing tells nothing
    if not await deps.passwords.check(user.password_hash if user else None, given.password) or user is None:
        raise ProcedureError("UNAUTHORIZED", "Invalid email or password")
    if user.password_hash and deps.passwords.outdated(user.password_hash):
        rehashed = await deps.passwords.hash(given.password)
        await deps.db.write(accounts.set_password_hash, user.id, rehashed, deps.clock())
    try:
        started = await deps.sessions.start(user.id)
    except accounts.Deactivated:
        raise ProcedureError("UNAUTHORIZED", DEACTIVATED) from None
    return user, started


async def send_reset_link(deps: Accounts, email: str) -> None:
    """A password reset link mailed to `email` when it has an account (answered the same either way); 5 a minute per
    address. `auth.sendPasswordReset` and the password page."""
    await _limited(deps, "sendPasswordReset", email)
    if await deps.db.read(accounts.user_by_email, email) is not None:
        await _links(deps).send(RESET_LINK, email, RESET_LANDING)


async def set_first_password(deps: Accounts, user: accounts.UserRecord, given: SetPassword) -> None:
    """A password for an account that has none (made by a link, or reset). `auth.setPassword` and the password
    page."""
    if user.password_hash is not None:
        raise ProcedureError("BAD_REQUEST", "This account has a password: change it with auth.changePassword")
    await deps.db.write(accounts.set_password_hash, user.id, await deps.passwords.hash(given.password), deps.clock())


async def replace_password(deps: Accounts, user: accounts.UserRecord, given: ChangePassword, *, keep: str) -> None:
    """The account's password changed, given the current one (5 tries a minute); its other sessions end, `keep`
    stays. `auth.changePassword` and the password page."""
    if user.password_hash is None:
        raise ProcedureError("BAD_REQUEST", "This account has no password yet: set one with auth.setPassword")
    await _limited(deps, "changePassword", user.email)
    if not await deps.passwords.check(user.password_hash, given.currentPassword):
        raise ProcedureError("UNAUTHORIZED", "The current password is wrong")
    new_hash = await deps.passwords.hash(given.newPassword)
    await deps.db.write(accounts.replace_password, user.id, new_hash, "password_changed", deps.clock(), keep=keep)


async def start_social_sign_in(deps: Accounts, redirect_to: str | None, client: str) -> tuple[str, Cookie]:
    """Where to send the browser to sign in with the configured provider, and the cookie that keeps the flow's state;
    5 a minute per client address (section 8), PRECONDITION_FAILED when no provider is configured.
    `auth.signInWithSocial` and the sign-in page."""
    await deps.limits.hit(f"helpdesk:signInWithSocial:{client}", [SIGN_IN_LIMIT])
    if deps.social is None:
        raise ProcedureError(
            "PRECONDITION_FAILED", "Social sign-in is not configured here: sign in with an email link or a password"
        )
    try:
        return await deps.social.start(redirect_to)
    except ProviderUnavailable as error:
        log.warning("social_provider_unavailable", reason=error.message)
        raise ProcedureError(
            "INTERNAL_SERVER_ERROR",
            "Social sign-in is unavailable: the sign-in provider's configuration could not be read. Retry later, "
            "or sign in with an email link or a password",
        ) from None


async def change_profile(deps: Accounts, user: accounts.UserRecord, given: UpdateProfile) -> accounts.UserRecord:
    """The person's name, avatar or preferences changed (what is not given stays; preferences at most
    MAX_PREFERENCES_BYTES as JSON). `auth.updateProfile` and the profile page."""
    changes = {name: value for name, value in msgspec.structs.asdict(given).items() if value is not msgspec.UNSET}
    if len(msgspec.json.encode(changes.get("preferences", {}))) > MAX_PREFERENCES_BYTES:
        raise ProcedureError("BAD_REQUEST", f"preferences must encode to at most {MAX_PREFERENCES_BYTES} bytes")
    if not changes:
        return user
    return await deps.db.write(accounts.update_profile, user.id, changes, deps.clock())


def procedures(deps: Accounts) -> Mapping[str, Procedure]:
    db, sessions = deps.db, deps.sessions

    async def current(call: Call) -> accounts.UserRecord:
        user = await db.read(accounts.user_by_id, call.signed_in.user_id)
        if user is None:
            raise ProcedureError("UNAUTHORIZED", "Sign in first: this account no longer exists")
        return user

    async def sign_in_with_email(_: Call, given: SignInWithEmail) -> Success:
        await send_sign_in_link(deps, given.email, given.redirectTo)
        return Success()

    async def sign_in_with_social(call: Call, given: SignInWithSocial) -> SocialStart:
        url, cookie = await start_social_sign_in(deps, given.redirectTo, _client(call))
        call.cookies.append(cookie)
        return SocialStart(url)

    async def send_password_reset(_: Call, given: SendPasswordReset) -> Success:
        await send_reset_link(deps, given.email)
        return Success()

    async def sign_in_with_password(call: Call, given: SignInWithPassword) -> PasswordSignIn:
        user, started = await password_sign_in(deps, given, _client(call))
        call.cookies.extend(started.cookies)
        return PasswordSignIn(SignedInUser(user.id, user.email, user.created_at))

    async def get_user(call: Call, _: None) -> User:
        return User.of(await current(call))

    async def sign_out(call: Call, _: None) -> Success:
        call.cookies.extend(await sessions.end(call.signed_in.session_id))
        end_session(call)
        return Success()

    async def has_password(call: Call, _: None) -> HasPassword:
        return HasPassword((await current(call)).password_hash is not None)

    async def set_password(call: Call, given: SetPassword) -> Success:
        await set_first_password(deps, await current(call), given)
        return Success()

    async def change_password(call: Call, given: ChangePassword) -> Success:
        await replace_password(deps, await current(call), given, keep=call.signed_in.session_id)
        return Success()

    async def update_profile(call: Call, given: UpdateProfile) -> User:
        return User.of(await change_profile(deps, await current(call), given))

    return {
        "auth.signInWithEmail": Procedure("mutation", SignInWithEmail, sign_in_with_email, "public"),
        "auth.signInWithPassword": Procedure("mutation", SignInWithPassword, sign_in_with_password, "public"),
        "auth.getUser": Procedure("query", None, get_user, "signed_in"),
        "auth.signOut": Procedure("mutation", None, sign_out, "signed_in"),
        "auth.hasPassword": Procedure("query", None, has_password, "signed_in"),
        "auth.setPassword": Procedure("mutation", SetPassword, set_password, "signed_in"),
        "auth.changePassword": Procedure("mutation", ChangePassword, change_password, "signed_in"),
        "auth.updateProfile": Procedure("mutation", UpdateProfile, update_profile, "signed_in", camel_case=False),
        "auth.sendPasswordReset": Procedure("mutation", SendPasswordReset, send_password_reset, "public"),
        "auth.signInWithSocial": Procedure("mutation", SignInWithSocial, sign_in_with_social, "public"),
    }


PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
"""A link's answers are stored by no cache, and the page it leads to is not told the link (it holds the token)."""


class LinkRefused(msgspec.Struct):
    error: dict[str, str]


def link_routes(deps: Accounts, desk: Helpdesk) -> list[Any]:
    """The GETs of mailed links. Used once, a link signs the browser in (both cookies, in this very response) and sends
    it on (303). A sign-in link goes to its `redirectTo` when that is a path of this site, else to `/`; its first use
    makes the account. A reset link removes the password and ends the account's other sessions, then goes to the page
    that sets a new one (RESET_LANDING). An invitation link joins its person to the organization as an agent
    (operations/helpdesk/team.py) and goes to `/`. A deactivated member is signed in by none of them.

    And social sign-in's callback (CALLBACK_PATH), where the provider sends the browser back: it signs the browser in
    the same way when the provider vouches for a verified address (the first sign-in makes the account), and answers
    400 otherwise. Either way the flow's cookie is removed."""

    async def open_link(kind: LinkKind, token: str) -> Response[Any]:
        now = deps.clock()
        link = await _links(deps).use(kind, token)
        user = None
        if link is not None and kind is SIGN_IN_LINK:
            user = await deps.db.write(accounts.signed_in_by_email, link.email, now)
        elif link is not None:
            user = await deps.db.read(accounts.user_by_email, link.email)
            if user is not None:
                await deps.db.write(accounts.replace_password, user.id, None, "password_reset", now)
        if link is None or user is None:
            return refusal("invalid_link", "This link is unknown, used or expired: ask for a new one")
        return await signed_in(user.id, link.redirect_to)

    async def signed_in(user_id: str, redirect_to: str, cookies: Sequence[Cookie] = ()) -> Response[Any]:
        """The browser signed in and sent on (a deactivated member is refused)."""
        try:
            started = await deps.sessions.start(user_id)
        except accounts.Deactivated:
            return refusal("deactivated", DEACTIVATED, list(cookies))
        target = redirect_to if is_safe_local_path(redirect_to) else "/"
        return Response(
            b"",
            status_code=HTTP_303_SEE_OTHER,
            headers={"Location": target, **PRIVATE},
            cookies=[*started.cookies, *cookies],
        )

    @get(LINK_PATH, opt=NO_AUTHENTICATION, include_in_schema=False)
    async def sign_in_link(token: FromQuery[str] = "") -> Response[Any]:
        return await open_link(SIGN_IN_LINK, token)

    @get(RESET_PATH, opt=NO_AUTHENTICATION, include_in_schema=False)
    async def reset_link(token: FromQuery[str] = "") -> Response[Any]:
        return await open_link(RESET_LINK, token)

    @get(INVITE_PATH, opt=NO_AUTHENTICATION, include_in_schema=False)
    async def invitation_link(token: FromQuery[str] = "") -> Response[Any]:
        """An invitation followed: the person joins the organization as an agent and is signed in."""
        try:
            user = await team.accept(desk, token) if token else None
        except team.InvitationRefused as refused:
            return refusal("invalid_invitation", str(refused))
        if user is None:
            return refusal(
                "invalid_invitation", "This invitation link is incomplete: open the whole link you were sent"
            )
        return await signed_in(user.id, "/")

    def refusal(code: str, message: str, cookies: list[Any] | None = None) -> Response[Any]:
        body = LinkRefused({"code": code, "message": message})
        return Response(body, status_code=400, headers=PRIVATE, cookies=cookies or [])

    @get(CALLBACK_PATH, opt=NO_AUTHENTICATION, include_in_schema=False)
    async def social_callback(request: Request[Any, Any, Any]) -> Response[Any]:
        # read from the query itself: `state` is a name Litestar keeps for the application's state
        code, state, error = (request.query_params.get(name, "") for name in ("code", "state", "error"))
        social = deps.social
        if social is None:
            return refusal("not_configured", "Social sign-in is not configured here: sign in with an email link")
        cleared = social.cleared_cookie()
        if error:  # the provider did not sign the person in (access_denied: they said no)
            said = f" ({error})" if PROVIDER_ERROR.match(error) else ""
            message = f"The sign-in provider did not sign you in{said}: start again, or sign in with an email link"
            return refusal("provider_refused", message, [cleared])
        try:
            who = await social.finish(code, state, request.cookies.get(SOCIAL_COOKIE))
        except SocialSignInError as refused:
            log.info("social_sign_in_refused", code=refused.code, reason=refused.message)
            return refusal(refused.code, refused.message, [cleared])
        user = await deps.db.write(accounts.signed_in_by_email, who.email, deps.clock())
        return await signed_in(user.id, who.redirect_to, [cleared])

    return [sign_in_link, reset_link, invitation_link, social_callback]
