"""The baseline for bench/phone.py: a bare Litestar `POST /v1/verify` that authenticates the bearer key exactly as the
phone gateway does (the gateway's own authenticator, same database) and answers a canned
VerifyResult. No rate limit, no idempotency, no database write, no Kafka: what is left is HTTP, Litestar and auth.

    python bench/bare_app.py --port 8101 --database-url sqlite+aiosqlite:////path/to/signalyard.db \
        [--response captured-verify-result.json]

With `--service helpdesk`, the baseline for bench/helpdesk.py: a bare `POST /api/v1/tickets` behind the helpdesk
gateway's own authenticator (the bearer key looked up in the same database, the route's scope `tickets:write`, then
the key's per-minute and per-hour limits, as every REST request is charged) that answers a canned 201 Ticket
(`--response`: one the stack made), and for bench/helpdesk_replies.py a bare `POST
/api/v1/tickets/{id}/conversations` (scope `conversations:write`) that answers the same canned bytes (there, a
Conversation the stack made). No body decoding, no transaction, no Kafka.

With `--service helpdesk-inbound`, the baseline for bench/helpdesk_inbound.py: a bare `POST
/api/webhooks/inbound-email` (email kind D, the forwarder) that does what every such call must do: read the raw
mail, take its recipient from its headers as the gateway does, route it to its channel with the gateway's own
`Inbound.route` (`storage.helpdesk.channels.route` in the same database, the secrets opened with the same cipher:
SIGNALYARD_SECRET_KEYS, or the key kept in SIGNALYARD_DATA_DIR), compare `x-forwarder-secret` constant-time, and
answer the canned 200 `{"status": "accepted"}` (`--response`: the stack's). No store, no Kafka.

With `--service photo`, the baseline for bench/photo.py: a bare `POST /v1/verify` behind the photo gateway's own
authenticator (the key looked up in the same database, the route's scope, the key's limits) that reads the
submission as the gateway does (gateway/photo/submissions.py), runs the same checks in the same worker pool
(processors/photo/checks/pool.py `CheckPool`, `--check-workers`, 0: one per core, as SIGNALYARD_PHOTO_CHECK_WORKERS)
and answers the verdict. No image stored, no verification row, no Kafka: what is left is HTTP, Litestar, auth, the
body and the checks.

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
from email import policy
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.datastructures import State

from gateway.common.auth import AUTHENTICATOR, NO_AUTHENTICATION, Authenticator, authentication, requires
from gateway.helpdesk import errors as helpdesk_errors
from gateway.helpdesk.auth import HelpdeskAuthenticator
from gateway.helpdesk.inbound import email as inbound_email
from gateway.helpdesk.inbound.common import MAX_BODY_BYTES, Inbound, equal, refused
from gateway.phone.auth import VERIFY, PhoneAuthenticator, sku_scope
from gateway.phone.errors import EXCEPTION_HANDLERS
from gateway.photo import errors as photo_errors
from gateway.photo.auth import VERIFY as PHOTO_VERIFY
from gateway.photo.auth import PhotoAuthenticator
from gateway.photo.submissions import read_submission
from processors.photo.checks import CheckPool
from signalyard import bootstrap, logs
from signalyard.secrets import secrets_cipher
from signalyard.settings import PlatformSettings, load
from storage.common.db import Database
from storage.common.secrets import Cipher
from topics.phone import SKU

JSON = "application/json"
ACCEPTED = b'{"status":"accepted"}'


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


def sample_ticket() -> bytes:
    """A Ticket as the helpdesk's create answers it (used when no --response is given)."""
    import msgspec

    from gateway.helpdesk.schemas import Ticket
    from storage.helpdesk.tickets import TicketRecord

    now = datetime.now(UTC)
    ticket = TicketRecord(
        str(uuid.uuid4()), str(uuid.uuid4()), 1, "Order 1 has not arrived", "open", "normal", "api",
        str(uuid.uuid4()), "customer-1@bench.example", None, [], now, now,
    )  # fmt: skip
    return msgspec.json.encode(Ticket.of(ticket))


def create_bare_app(db: Database, canned: bytes) -> Litestar:
    """The gateway's own authentication step and guard in front of a canned answer."""
    authenticator = PhoneAuthenticator(db)

    @post("/v1/verify", status_code=200, guards=[requires(VERIFY, sku_scope(SKU))])
    async def verify() -> Response[bytes]:
        return Response(canned, media_type=JSON)

    return _bare(db, authenticator, verify, EXCEPTION_HANDLERS)


def create_helpdesk_bare_app(db: Database, canned: bytes, redis_url: str | None) -> Litestar:
    """The helpdesk gateway's authenticator (key, scope, the key's limits) in front of a canned 201 Ticket."""
    authenticator = HelpdeskAuthenticator(db, redis_url)

    @post("/api/v1/tickets", status_code=201, guards=[requires("tickets:write")])
    async def create_ticket() -> Response[bytes]:
        return Response(canned, media_type=JSON, status_code=201)

    @post("/api/v1/tickets/{ticket_id:str}/conversations", status_code=201, guards=[requires("conversations:write")])
    async def add_conversation(ticket_id: str) -> Response[bytes]:
        return Response(canned, media_type=JSON, status_code=201)

    routes = [create_ticket, add_conversation]
    return _bare(db, authenticator, routes, helpdesk_errors.EXCEPTION_HANDLERS, authenticator.last_used.flush)


def create_inbound_bare_app(db: Database, cipher: Cipher, canned: bytes, redis_url: str | None) -> Litestar:
    """The forwarder's route without the pipeline: recipient, channel, secret, then a canned 200."""
    authenticator = HelpdeskAuthenticator(db, redis_url)  # the gateway's authentication step, which passes this route

    async def never(*_: Any) -> None:
        raise AssertionError("the bare endpoint publishes nothing")

    inbound = Inbound(db, cipher, never)

    @post(
        inbound_email.PATH,
        opt=NO_AUTHENTICATION,
        request_max_body_size=MAX_BODY_BYTES,
        status_code=200,
        include_in_schema=False,
    )
    async def forwarded(request: Request[Any, Any, Any]) -> Response[bytes]:
        body = await request.body()
        headers = BytesHeaderParser(policy=policy.compat32).parsebytes(body)
        recipient = inbound_email._first_address(
            request.headers.get("x-envelope-to"), headers.get("Delivered-To"), headers.get("To")
        )
        if not recipient:
            raise refused(400, "The mail names no recipient")
        channel = await inbound.route("email", recipient)
        expected = channel.secrets.get("forwarder_secret")
        given = request.headers.get("x-forwarder-secret", "")
        if not expected or not given or not equal(given, expected):
            raise refused(401, "x-forwarder-secret is not this channel's forwarder secret")
        return Response(canned, media_type=JSON)

    return _bare(db, authenticator, forwarded, helpdesk_errors.EXCEPTION_HANDLERS, authenticator.last_used.flush)


def create_photo_bare_app(db: Database, workers: int, redis_url: str | None) -> Litestar:
    """The photo gateway's authenticator and submission reading in front of the checks, in a pool of `workers`
    processes as the processor's (0: one per core), closed when the app shuts down."""
    authenticator = PhotoAuthenticator(db, redis_url)
    checks = CheckPool(workers or os.cpu_count() or 1)

    @post("/v1/verify", status_code=200, guards=[requires(PHOTO_VERIFY)])
    async def verify(request: Request[Any, Any, Any]) -> Response[bytes]:
        submitted = await read_submission(request)
        verdict = await checks.evaluate(submitted.image, submitted.policy)
        return Response(msgspec.json.encode(verdict), media_type=JSON)

    return _bare(
        db, authenticator, verify, photo_errors.EXCEPTION_HANDLERS, authenticator.last_used.flush, checks.close
    )


def _bare(
    db: Database, authenticator: Authenticator[Any], routes: Any, handlers: Any, *before_dispose: Any
) -> Litestar:
    @get("/readyz", opt=NO_AUTHENTICATION)
    async def readyz() -> dict[str, str]:
        await db.ping()
        return {"status": "ok"}

    return Litestar(
        route_handlers=[*(routes if isinstance(routes, list) else [routes]), readyz],
        middleware=[authentication(authenticator)],
        state=State({AUTHENTICATOR: authenticator}),
        exception_handlers=handlers,
        on_shutdown=[*before_dispose, db.dispose],
        openapi_config=None,
    )


async def serve(args: argparse.Namespace, settings: PlatformSettings, canned: bytes) -> None:
    stop = bootstrap.Stop()
    sock = bootstrap.listen(args.host or settings.host, args.port, "--port")
    db = Database(args.database_url)
    if args.service == "helpdesk":
        app = create_helpdesk_bare_app(db, canned, settings.redis_url)
    elif args.service == "helpdesk-inbound":
        app = create_inbound_bare_app(db, secrets_cipher(settings), canned, settings.redis_url)
    elif args.service == "photo":
        app = create_photo_bare_app(db, args.check_workers, settings.redis_url)
    else:
        app = create_bare_app(db, canned)
    async with bootstrap.serving([bootstrap.Listener(app, sock)]):
        await stop.requested()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", help="default: SIGNALYARD_HOST or 127.0.0.1, like the gateway")
    parser.add_argument("--database-url", required=True, help="the stack's database (SQLAlchemy async URL)")
    parser.add_argument("--response", type=Path, help="file with the canned answer's JSON (default: built here)")
    parser.add_argument(
        "--service",
        choices=("phone", "helpdesk", "helpdesk-inbound", "photo"),
        default="phone",
        help="whose endpoint (default: phone's verify)",
    )
    parser.add_argument("--check-workers", type=int, default=0, help="photo: the checks' processes (0: one per core)")
    args = parser.parse_args(argv)
    settings = load(PlatformSettings, os.environ)
    logs.configure(settings.log_level)
    if args.response:
        canned = args.response.read_bytes()
    elif args.service == "helpdesk-inbound":
        canned = ACCEPTED
    elif args.service == "photo":
        canned = b""  # photo answers the checks' verdict
    else:
        canned = sample_ticket() if args.service == "helpdesk" else sample_result()
    try:
        asyncio.run(serve(args, settings, canned))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
