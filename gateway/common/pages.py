"""Server-rendered pages, the same way in every gateway (docs/helpdesk.md, "The agent app"): Jinja2 templates, each
output escaped; the assets every page uses, served from the package (htmx, the style sheet: no CDN, no build step);
and what guards them. Every page answers with a Content-Security-Policy that allows scripts, styles and forms of this
site only (no inline script or style), and every form carries a CSRF token that must match its cookie (Litestar's
CSRF middleware, on the pages' routes only: the APIs take keys or their own cookies' checks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from litestar import Request, Router
from litestar.config.csrf import CSRFConfig
from litestar.datastructures import CacheControlHeader, ResponseHeader
from litestar.exceptions import PermissionDeniedException
from litestar.middleware import DefineMiddleware
from litestar.middleware.csrf import CSRFMiddleware
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Template
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig
from litestar.types import ControllerRouterHandler

from gateway.common.auth import NO_AUTHENTICATION

ASSETS = Path(__file__).parent / "assets"
TEMPLATES = Path(__file__).parent / "templates"
ASSETS_PATH = "/assets"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""Every page's headers: no page is cached (each shows one person's data), nor framed by another site."""


def templates(directory: Path) -> TemplateConfig[JinjaTemplateEngine]:
    """A service's templates (`directory`), which extend the common layout (`base.html`); autoescaped."""
    return TemplateConfig(directory=[directory, TEMPLATES], engine=JinjaTemplateEngine)


def pages_router(
    handlers: Sequence[ControllerRouterHandler], *, product: str, csrf_secret: str, cookie_name: str, secure: bool
) -> Router:
    """A service's page routes at the site's root: no key asked (a page reads its session cookie), the page headers
    on every answer, and a CSRF check of every request that changes something (POST): its `_csrf_token` field (or
    `X-CSRF-Token` header) must match the HTTP-only `cookie_name` cookie set with the first page. The token comes to a
    template as `csrf_token()`, escaped there like every other value. A request that fails the check is answered by a
    page that says nothing was changed (403)."""

    def refused(_: Request[Any, Any, Any], __: PermissionDeniedException) -> Template:
        return Template("refused.html", context={"product": product}, status_code=403)

    csrf = CSRFConfig(
        secret=csrf_secret,
        cookie_name=cookie_name,
        cookie_httponly=True,
        cookie_secure=secure,
        cookie_samesite="lax",
        header_name="x-csrf-token",
    )
    return Router(
        "/",
        route_handlers=list(handlers),
        middleware=[DefineMiddleware(CSRFMiddleware, config=csrf)],
        response_headers=[ResponseHeader(name=name, value=value) for name, value in PAGE_HEADERS.items()],
        opt=dict(NO_AUTHENTICATION),
        include_in_schema=False,
        exception_handlers={PermissionDeniedException: refused},
    )


def assets_router() -> Router:
    """The shared assets at ASSETS_PATH, cached for an hour."""
    return create_static_files_router(
        path=ASSETS_PATH,
        directories=[ASSETS],
        opt=dict(NO_AUTHENTICATION),
        include_in_schema=False,
        name="assets",
        cache_control=CacheControlHeader(public=True, max_age=3600),
    )
