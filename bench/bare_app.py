"""The baseline for bench/phone.py: a bare Litestar `POST /v1/verify` that authenticates the bearer key exactly as the
phone gateway does (the gateway's own authenticator, same database) and answers a canned
VerifyResult. No rate limit, no idempotency, no database write, no Kafka: what is left is HTTP, Litestar and auth.

    python bench/bare_app.py --port 8101 --database-url sqlite+aiosqlite:////path/to/signalyard.db \
        [--response captured-verify-result.json]

It is served the way `signalyard up` serves the gateway: `bootstrap.serving` (uvicorn, same options) inside
`asyncio.run`, one process, on SIGNALYARD_HOST (default 127.0.0.1). It stops on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from litestar import Litestar, Response, get, post
from litestar.datastructures import State

from gateway.common.auth import AUTHENTICATOR, NO_AUTHENTICATION, authentication, requires
from gateway.phone.auth import VERIFY, PhoneAuthenticator, sku_scope
from gateway.phone.errors import EXCEPTION_HANDLERS
from signalyard import bootstrap, logs
from signalyard.settings import PlatformSettings, load
from storage.common.db import Database
from topics.phone import SKU

JSON = "application/json"


def sample_result() -> bytes:
    """A VerifyResult built by the processor's own code for a sandbox number (used when no --response is given)."""
    import msgspec

    from processors.phone.providers import Sandbox
    from processors.phone.result import Request as ResultRequest
    from processors.phone.result import StoredLookup, build_result

    now = datetime.now(UTC)
    phone = "+12122001234"
    answer = asyncio.run(Sandbox().lookup(phone))
    result = build_result(
        ResultRequest(
            request_id=str(uuid.uuid4()),
            environment="test",
            created_at=now,
            phone_e164=phone,
            subject_type="person",
            supplied_name="John Smith",
            reference_id=None,
        ),
        StoredLookup(provider="sandbox", attempted_at=now, answer=answer),
        completed_at=now,
        cache_hit=False,
        billable=True,
        unit_price_microdollars=15000,
    )
    return msgspec.json.encode(result)


def create_bare_app(db: Database, canned: bytes) -> Litestar:
    """The gateway's own authentication step and guard in front of a canned answer."""
    authenticator = PhoneAuthenticator(db)

    @post("/v1/verify", status_code=200, guards=[requires(VERIFY, sku_scope(SKU))])
    async def verify() -> Response[bytes]:
        return Response(canned, media_type=JSON)

    @get("/readyz", opt=NO_AUTHENTICATION)
    async def readyz() -> dict[str, str]:
        await db.ping()
        return {"status": "ok"}

    return Litestar(
        route_handlers=[verify, readyz],
        middleware=[authentication(authenticator)],
        state=State({AUTHENTICATOR: authenticator}),
        exception_handlers=EXCEPTION_HANDLERS,
        on_shutdown=[db.dispose],
        openapi_config=None,
    )


async def serve(args: argparse.Namespace, settings: PlatformSettings, canned: bytes) -> None:
    stop = bootstrap.Stop()
    sock = bootstrap.listen(args.host or settings.host, args.port, "--port")
    db = Database(args.database_url)
    async with bootstrap.serving([bootstrap.Listener(create_bare_app(db, canned), sock)]):
        await stop.requested()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", help="default: SIGNALYARD_HOST or 127.0.0.1, like the gateway")
    parser.add_argument("--database-url", required=True, help="the stack's database (SQLAlchemy async URL)")
    parser.add_argument("--response", type=Path, help="file with the canned VerifyResult JSON (default: built here)")
    args = parser.parse_args(argv)
    settings = load(PlatformSettings, os.environ)
    logs.configure(settings.log_level)
    canned = args.response.read_bytes() if args.response else sample_result()
    try:
        asyncio.run(serve(args, settings, canned))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
