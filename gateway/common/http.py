"""What every gateway shares: request ids, per-route metrics, health and readiness, the metrics endpoint."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping

import structlog
from litestar import Litestar, Response, get
from litestar.datastructures import MutableScopeHeaders
from litestar.handlers import HTTPRouteHandler
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

from gateway.common.auth import NO_AUTHENTICATION

REQUESTS = Counter("signalyard_http_requests_total", "HTTP requests answered", ["service", "route", "status"])
LATENCY = Histogram(
    "signalyard_http_request_seconds",
    "HTTP request duration",
    ["service", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

log = structlog.get_logger("signalyard.http")

ReadinessCheck = Callable[[], Awaitable[None]]


def request_ids(prefix: str = "") -> Callable[[], str]:
    """A service's request-id factory: `<prefix><32 hex>` (photo: `req_`), or a plain UUID without a prefix."""
    if not prefix:
        return lambda: str(uuid.uuid4())
    return lambda: prefix + uuid.uuid4().hex


def observe(service: str, new_request_id: Callable[[], str] = request_ids()) -> Callable[[ASGIApp], ASGIApp]:
    """Middleware: a request id for every request (header and log context), and the route/status metrics."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def handle(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            request_id = new_request_id()
            scope.setdefault("state", {})["request_id"] = request_id
            started = time.perf_counter()
            status = 500

            async def send_with_id(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    MutableScopeHeaders.from_message(message)["X-Request-Id"] = request_id
                await send(message)

            with structlog.contextvars.bound_contextvars(http_request_id=request_id):
                try:
                    await app(scope, receive, send_with_id)
                finally:
                    route = scope.get("path_template") or "unmatched"
                    elapsed = time.perf_counter() - started
                    REQUESTS.labels(service, route, str(status)).inc()
                    LATENCY.labels(service, route).observe(elapsed)
                    log.info(
                        "http_request",
                        method=scope.get("method"),
                        route=route,
                        status=status,
                        ms=round(elapsed * 1000, 2),
                    )

        return handle

    return middleware


def complete_allow(app: Litestar) -> ASGIApp:
    """Middleware: the `Allow` of an OPTIONS answer names every method of the path. Litestar 2 builds that answer with
    the path's first handler only, so a path with GET and POST answered `Allow: GET, OPTIONS` (litestar#4169, fixed in
    Litestar 3); the methods are read from the app's own route table instead."""

    # by the template routing gives a request (`/tickets/{ticket_id}`, without the parameters' types)
    methods_of: dict[str, set[str]] = {route.path_format: getattr(route, "methods", set()) for route in app.routes}

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "OPTIONS":
            await app(scope, receive, send)
            return

        async def send_with_allow(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 204:
                methods = methods_of.get(scope.get("path_template") or "", set())
                if methods:
                    MutableScopeHeaders.from_message(message)["Allow"] = ", ".join(sorted({*methods, "OPTIONS"}))
            await send(message)

        await app(scope, receive, send_with_allow)

    return handle


def health_routes(checks: Mapping[str, ReadinessCheck]) -> list[HTTPRouteHandler]:
    """`/healthz` (the process answers) and `/readyz` (every dependency answers), plus `/metrics`."""

    @get("/healthz", operation_id="healthz", include_in_schema=False, sync_to_thread=False, opt=NO_AUTHENTICATION)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @get("/readyz", operation_id="readyz", include_in_schema=False, opt=NO_AUTHENTICATION)
    async def readyz() -> Response[dict[str, object]]:
        failing: dict[str, str] = {}
        for name, check in checks.items():
            try:
                await check()
            except Exception as error:  # any failure means not ready; the reason is for the operator
                failing[name] = type(error).__name__
        if failing:
            return Response({"status": "unavailable", "failing": failing}, status_code=503)
        return Response({"status": "ok", "checks": sorted(checks)})

    @get("/metrics", operation_id="metrics", include_in_schema=False, sync_to_thread=False, opt=NO_AUTHENTICATION)
    def metrics() -> Response[bytes]:
        # As a header, not a media type: Litestar would append a second `charset` to a text/* media type.
        return Response(generate_latest(), headers={"content-type": CONTENT_TYPE_LATEST})

    return [healthz, readyz, metrics]
