"""Photo's dashboard (docs/photo.md, "The dashboard"), at `/dashboard` on the photo gateway: sign up or in by a mailed
link, or with a `full` key entered once; then the account's usage against its plan, its API keys, webhook endpoints
with their recent deliveries, verifications with each check beside the image, the review queue, and a form that
verifies a photo. Each page reads the `pc-session` cookie (gateway/photo/pages/sessions.py) and calls the operations
the REST routes call (operations/photo, the shared webhook endpoints, the verify of gateway/photo/verify.py), so a
page holds no rule of its own."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from limits import parse as limit
from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, ServerSentEvent, Template
from litestar.response.sse import ServerSentEventMessage
from litestar.router import Router

from gateway.common.app import DRAINING
from gateway.common.pages import assets_router, pages_router
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import PhotoError
from gateway.photo.pages import inspect
from gateway.photo.pages.sessions import COOKIE
from gateway.photo.pages.site import HOME, PRODUCT, SIGN_IN, Form, Site, Visitor
from gateway.photo.submissions import MAX_IMAGE_BYTES, Submitted, image_type
from gateway.photo.verify import owner_for, verify
from operations.common.errors import Forbidden, Invalid
from operations.common.links import LinkKind
from operations.photo import inspections as inspection_operations
from operations.photo import keys as key_operations
from operations.photo import verifications
from storage.common.keys import hash_key
from storage.photo import customers
from storage.photo.verifications import Filters, verification_of
from topics.photo import EVENTS, POLICIES
from wire.text import EMAIL_PATTERN

TEMPLATES = Path(__file__).parent / "templates"
CSRF_COOKIE = "pc-csrf"
LINK_PATH = f"{HOME}/link"
SIGN_IN_LINK = LinkKind("sign_in", LINK_PATH, "Your sign-in link", "Sign in to the Signalyard Photo dashboard")
LINKS_PER_ADDRESS = limit("5/minute")
KEYS_PER_CLIENT = limit("30/minute")
"""Keys one client address may try a minute (a key is 160 random bits: this is against noise, not guessing)."""
LIVE_EVERY_S = 1.0
"""How often a pending verification's open page is checked for its verdict."""
LIVE_FOR_S = 120.0
PAGE = 25
"""Verifications a history or queue page lists."""
DELIVERIES = 10
"""Recent deliveries shown under each webhook endpoint."""
_EMAIL = re.compile(EMAIL_PATTERN)
ENVIRONMENTS = {"test": "Sandbox", "live": "Live"}
Upload = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]


def _local(path: str) -> str:
    """Where to go after signing in: a dashboard path, never another site."""
    return path if path.startswith(HOME) and not path.startswith("//") and "\\" not in path else HOME


def routes(photo: PhotoGateway) -> list[Router]:
    """The dashboard's pages (behind the CSRF check) and the assets they use."""
    site = Site(photo)
    dashboard = photo.dashboard
    sessions = dashboard.sessions
    ops = photo.operations

    def plain(template: str, status: int = 200, **values: Any) -> Template:
        return site.page(None, template, status, **values)

    # Signing in ---------------------------------------------------------------------------------------------------

    @get(SIGN_IN)
    async def sign_in_page(next: FromQuery[str] = HOME) -> Template:
        return plain("sign_in.html", next=_local(next))

    @post(f"{SIGN_IN}/link", status_code=200)
    async def sign_in_by_link(data: Form) -> Template:
        email, next_ = data.get("email", "").strip().lower(), _local(data.get("next", HOME))
        if len(email) > 320 or not _EMAIL.match(email):
            error = "Give your email address, such as ada@example.com"
            return plain("sign_in.html", 400, next=next_, email=email, link_error=error)
        try:
            await dashboard.limits.hit(f"photo:sign-in-link:{email}", [LINKS_PER_ADDRESS])
        except PhotoError as refused:
            return plain("sign_in.html", refused.status, next=next_, email=email, link_error=str(refused))
        await dashboard.links.send(SIGN_IN_LINK, email, next_)
        return plain("link_sent.html", email=email)

    @post(f"{SIGN_IN}/key", status_code=200)
    async def sign_in_by_key(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        key, next_ = data.get("key", "").strip(), _local(data.get("next", HOME))
        client = request.client.host if request.client else "unknown"
        try:
            await dashboard.limits.hit(f"photo:sign-in-key:{client}", [KEYS_PER_CLIENT])
        except PhotoError as refused:
            return plain("sign_in.html", refused.status, next=next_, key_error=str(refused))
        owners = await photo.db.read(customers.key_owners, [hash_key(key)], datetime.now(UTC)) if key else {}
        owner = next(iter(owners.values()), None)
        if owner is None:
            return plain("sign_in.html", 401, next=next_, key_error="That key is unknown, revoked or expired")
        if owner.scope != "full":
            error = "That key can only submit images (verify_only): sign in with a full key"
            return plain("sign_in.html", 403, next=next_, key_error=error)
        cookie = await sessions.start(owner.customer_id, owner.environment, owner.key_id)
        return site.go(next_, [cookie])

    @get(LINK_PATH)
    async def open_link(token: FromQuery[str] = "") -> Template | Redirect:
        """A mailed link, used once: the browser signed in (the account made at its first use, with its first
        sandbox key shown this once) and sent on."""
        link = await dashboard.links.use(SIGN_IN_LINK, token)
        if link is None:
            message = "This link is unknown, used or expired: ask for a new one"
            return plain("sign_in.html", 400, next=HOME, link_error=message)
        signed_up = await photo.db.write(customers.signed_in_by_email, link.email, datetime.now(UTC))
        cookie = await sessions.start(signed_up.customer_id, "test")
        if signed_up.key is None:
            return site.go(_local(link.redirect_to), [cookie])
        return site.page(None, "welcome.html", cookies=[cookie], email=link.email, secret=signed_up.key)

    @post(f"{HOME}/sign-out")
    async def sign_out(request: Request[Any, Any, Any]) -> Redirect:
        return site.go(SIGN_IN, [await sessions.end(request.cookies)])

    @post(f"{HOME}/environment")
    async def switch_environment(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        async def act(who: Visitor) -> Redirect:
            environment = data.get("environment", "")
            if environment not in ENVIRONMENTS:
                raise Invalid("Choose the sandbox or live")
            if who.session.key_id is not None:
                raise Forbidden("A session made from a key shows that key's environment: sign in by email to switch")
            await sessions.switch(request.cookies, environment)  # type: ignore[arg-type]
            return site.go(HOME)

        return await site.submitted(request, act, overview_page)

    # Overview and usage -------------------------------------------------------------------------------------------

    async def overview_page(who: Visitor, status: int = 200, error: str | None = None) -> Template:
        now = datetime.now(UTC)
        usage = await verifications.usage(ops, who.account, now)
        queue, waiting = await verifications.review_queue(ops, who.account, limit=5)
        recent = await verifications.history(ops, who.account, limit=5, starting_after=None)
        return site.page(
            who, "overview.html", status, usage=usage, queue=queue, waiting=waiting, recent=recent.items, error=error
        )

    @get(HOME)
    async def overview(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, overview_page)

    # Keys ---------------------------------------------------------------------------------------------------------

    async def keys_page(who: Visitor, status: int = 200, error: str | None = None, **values: Any) -> Template:
        listed = [
            key for key in await key_operations.listed(ops, who.account) if key.environment == who.account.environment
        ]
        return site.page(who, "keys.html", status, keys=listed, error=error, now=datetime.now(UTC), **values)

    @get(f"{HOME}/keys")
    async def keys(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, keys_page)

    @post(f"{HOME}/keys", status_code=200)
    async def create_key(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        name, scope, expires = data.get("name", ""), data.get("scope", "full"), data.get("expires_at") or None

        async def act(who: Visitor) -> Template:
            row, secret = await key_operations.create(
                ops, who.account, name=name, scope=scope, expires_at=expires, now=datetime.now(UTC)
            )
            return await keys_page(who, created=row, secret=secret)

        async def again(who: Visitor, status: int, error: str) -> Template:
            return await keys_page(who, status, error, name=name)

        return await site.submitted(request, act, again)

    @post(f"{HOME}/keys/{{key_id:str}}/revoke")
    async def revoke_key(request: Request[Any, Any, Any], key_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Visitor) -> Redirect:
            await key_operations.revoke(ops, who.account, key_id, datetime.now(UTC))
            return site.go(f"{HOME}/keys")

        return await site.submitted(request, act, keys_page)

    # Webhook endpoints --------------------------------------------------------------------------------------------

    async def webhooks_page(who: Visitor, status: int = 200, error: str | None = None, **values: Any) -> Template:
        owner = who.account.customer_id
        endpoints = await photo.webhooks.listing(owner)
        deliveries = {hook.id: await photo.webhooks.deliveries(owner, hook.id, DELIVERIES) for hook in endpoints}
        return site.page(
            who,
            "webhooks.html",
            status,
            webhooks=endpoints,
            deliveries=deliveries,
            events=EVENTS,
            error=error,
            **values,
        )

    @get(f"{HOME}/webhooks")
    async def webhooks(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, webhooks_page)

    @post(f"{HOME}/webhooks", status_code=200)
    async def create_webhook(request: Request[Any, Any, Any]) -> Template | Redirect:
        form = await request.form()
        url, chosen = str(form.get("url", "")).strip(), [str(event) for event in form.getall("events", [])]

        async def act(who: Visitor) -> Template:
            if not chosen:
                raise Invalid("Choose at least one event")
            endpoint, secret = await photo.webhooks.create(who.account.customer_id, url=url, events=chosen)
            return await webhooks_page(who, created=endpoint, secret=secret)

        async def again(who: Visitor, status: int, error: str) -> Template:
            return await webhooks_page(who, status, error, url=url, chosen=chosen)

        return await site.submitted(request, act, again)

    @post(f"{HOME}/webhooks/{{endpoint_id:str}}/delete")
    async def delete_webhook(request: Request[Any, Any, Any], endpoint_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Visitor) -> Redirect:
            await photo.webhooks.delete(who.account.customer_id, endpoint_id)
            return site.go(f"{HOME}/webhooks")

        return await site.submitted(request, act, webhooks_page)

    # Verifications ------------------------------------------------------------------------------------------------

    @get(f"{HOME}/verifications")
    async def history(
        request: Request[Any, Any, Any],
        *,
        status: FromQuery[str] = "",
        compliant: FromQuery[str] = "",
        policy: FromQuery[str] = "",
        reviewed: FromQuery[str] = "",
        after: FromQuery[str] = "",
    ) -> Template | Redirect:
        chosen = {"status": status, "compliant": compliant, "policy": policy, "reviewed": reviewed}
        yes_no = {"yes": True, "no": False}
        filters = Filters(
            state=status if status in ("pending", "completed", "failed") else None,
            is_compliant=yes_no.get(compliant),
            policy=policy if policy in POLICIES else None,
            reviewed=yes_no.get(reviewed),
        )

        async def render(who: Visitor) -> Template:
            page = await verifications.history(
                ops, who.account, limit=PAGE, starting_after=after or None, filters=filters
            )
            more = None
            if page.next_cursor:
                more = f"{HOME}/verifications?{urlencode({**chosen, 'after': page.next_cursor})}"
            return site.page(who, "verifications.html", items=page.items, chosen=chosen, policies=POLICIES, more=more)

        return await site.shown(request, render)

    async def verification_page(
        who: Visitor, verification_id: str, status: int = 200, error: str | None = None, *, from_queue: bool = False
    ) -> Template:
        row = await verifications.own(ops, who.account, verification_id)
        item = verification_of(row, photo.urls)
        return site.page(who, "verification.html", status, item=item, error=error, from_queue=from_queue)

    @get(f"{HOME}/verifications/{{verification_id:str}}")
    async def verification(
        request: Request[Any, Any, Any],
        verification_id: FromPath[str],
        from_: Annotated[str, QueryParameter(name="from")] = "",
    ) -> Template | Redirect:
        """`?from=queue`: opened from the review queue, to which its review goes back."""
        return await site.shown(
            request, lambda who: verification_page(who, verification_id, from_queue=from_ == "queue")
        )

    @get(f"{HOME}/verifications/{{verification_id:str}}/live")
    async def verification_live(
        request: Request[Any, Any, Any], verification_id: FromPath[str]
    ) -> ServerSentEvent | Redirect:
        """Server-sent events for a verification's page, which showed it pending: `changed` once it is judged (at
        once if it was judged before this stream began; read every LIVE_EVERY_S seconds, for up to LIVE_FOR_S)."""
        who = await site.visitor(request)
        if isinstance(who, Redirect):
            return who
        await verifications.own(ops, who.account, verification_id)  # another account's is not here
        draining: asyncio.Event = request.app.state[DRAINING]

        async def judged() -> AsyncIterator[ServerSentEventMessage]:
            loop = asyncio.get_running_loop()
            until, wait = loop.time() + LIVE_FOR_S, 0.0
            while loop.time() < until:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(draining.wait(), wait)
                if draining.is_set():
                    return
                wait = LIVE_EVERY_S
                if (await verifications.own(ops, who.account, verification_id)).state != "pending":
                    yield ServerSentEventMessage(event="changed", data=verification_id)
                    return
                yield ServerSentEventMessage(comment="pending")

        return ServerSentEvent(judged(), headers={"Cache-Control": "no-store"})

    @post(f"{HOME}/verifications/{{verification_id:str}}/review")
    async def review(
        request: Request[Any, Any, Any], verification_id: FromPath[str], data: Form
    ) -> Template | Redirect:
        verdict, note = data.get("verdict", ""), data.get("note", "").strip()

        async def act(who: Visitor) -> Redirect:
            if verdict not in ("compliant", "not_compliant"):
                raise Invalid("Choose whether the photo is compliant")
            await verifications.review(
                ops,
                who.account,
                verification_id,
                is_compliant=verdict == "compliant",
                note=note or None,
                now=datetime.now(UTC),
            )
            return site.go(
                f"{HOME}/review" if data.get("from") == "queue" else f"{HOME}/verifications/{verification_id}"
            )

        async def again(who: Visitor, status: int, error: str) -> Template:
            return await verification_page(who, verification_id, status, error, from_queue=data.get("from") == "queue")

        return await site.submitted(request, act, again)

    @get(f"{HOME}/review")
    async def queue(request: Request[Any, Any, Any]) -> Template | Redirect:
        async def render(who: Visitor) -> Template:
            items, waiting = await verifications.review_queue(ops, who.account, limit=PAGE)
            return site.page(who, "queue.html", items=items, waiting=waiting)

        return await site.shown(request, render)

    # Self-inspections ---------------------------------------------------------------------------------------------

    async def inspections_page(who: Visitor, status: int = 200, error: str | None = None, **values: Any) -> Template:
        page = await inspection_operations.listed(
            ops, who.account, limit=PAGE, starting_after=None, now=datetime.now(UTC)
        )
        return site.page(who, "inspections.html", status, items=page.items, policies=POLICIES, error=error, **values)

    @get(f"{HOME}/inspections")
    async def inspections(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, inspections_page)

    @post(f"{HOME}/inspections", status_code=200)
    async def create_inspection(request: Request[Any, Any, Any], data: Form) -> Template | Redirect:
        policy, reference, days = data.get("policy", ""), data.get("reference", "").strip(), data.get("days", "7")

        async def act(who: Visitor) -> Template:
            if not days.isdigit() or not 1 <= int(days) <= 30:
                raise Invalid("The link lasts 1 to 30 days")
            made, url = await inspection_operations.create(
                ops,
                who.account,
                who.session.key_id or "dashboard",
                policy=policy,
                reference=reference or None,
                metadata=None,
                expires_in_s=int(days) * 86_400,
                now=datetime.now(UTC),
            )
            return await inspections_page(who, created=made, link=url)

        async def again(who: Visitor, status: int, error: str) -> Template:
            return await inspections_page(who, status, error, reference=reference)

        return await site.submitted(request, act, again)

    @post(f"{HOME}/inspections/{{inspection_id:str}}/cancel")
    async def cancel_inspection(request: Request[Any, Any, Any], inspection_id: FromPath[str]) -> Template | Redirect:
        async def act(who: Visitor) -> Redirect:
            await inspection_operations.cancel(ops, who.account, inspection_id, datetime.now(UTC))
            return site.go(f"{HOME}/inspections")

        return await site.submitted(request, act, inspections_page)

    # Verify a photo -----------------------------------------------------------------------------------------------

    async def verify_page(who: Visitor, status: int = 200, error: str | None = None) -> Template:
        return site.page(who, "verify.html", status, policies=POLICIES, error=error)

    @get(f"{HOME}/verify")
    async def verify_form(request: Request[Any, Any, Any]) -> Template | Redirect:
        return await site.shown(request, verify_page)

    @post(f"{HOME}/verify", request_max_body_size=MAX_IMAGE_BYTES + 64 * 1024)
    async def verify_photo(request: Request[Any, Any, Any], data: Upload) -> Template | Redirect:
        async def act(who: Visitor) -> Redirect:
            upload, policy = data.get("image"), data.get("policy")
            if not isinstance(upload, UploadFile):
                raise Invalid("Choose a photo to verify")
            image = await upload.read()
            if not image:
                raise Invalid("The photo file is empty")
            if len(image) > MAX_IMAGE_BYTES:
                raise Invalid("Image too large: the limit is 10 MB")
            if policy not in POLICIES:
                raise Invalid("Choose a policy")
            session = who.session
            owner = await owner_for(photo, session.customer_id, session.environment, session.key_id or "dashboard")
            try:
                verified = await verify(photo, owner, Submitted(image, image_type(image), policy, None), None)
            except PhotoError as slow:  # still being judged: its page shows it when it is
                if slow.status != 503 or slow.body.verification_id is None:
                    raise
                return site.go(f"{HOME}/verifications/{slow.body.verification_id}")
            return site.go(f"{HOME}/verifications/{verified.id}")

        return await site.submitted(request, act, verify_page)

    handlers = [
        *inspect.routes(photo),
        sign_in_page,
        sign_in_by_link,
        sign_in_by_key,
        open_link,
        sign_out,
        switch_environment,
        overview,
        keys,
        create_key,
        revoke_key,
        webhooks,
        create_webhook,
        delete_webhook,
        history,
        verification,
        verification_live,
        review,
        queue,
        verify_form,
        verify_photo,
        inspections,
        create_inspection,
        cancel_inspection,
    ]
    return [
        pages_router(
            handlers,
            product=PRODUCT,
            csrf_secret=dashboard.csrf_secret,
            cookie_name=CSRF_COOKIE,
            secure=sessions.secure,
        ),
        assets_router(),
    ]


__all__ = ["COOKIE", "TEMPLATES", "routes"]
