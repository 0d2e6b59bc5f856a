"""A router of test procedures for the tRPC wire format (gateway/helpdesk/trpc.py): one of each kind of answer the
wire carries (a result with dates, no input, a mutation setting a cookie, each kind of error), so the wire is tested
by itself, from httpx and from the real @trpc/client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import msgspec
from litestar import Litestar
from litestar.datastructures import Cookie

from gateway.helpdesk.procedures.wire import Access, Call, Procedure, ProcedureError, trpc_route

MOMENT = datetime(2026, 11, 25, 6, 30, 15, 123456, tzinfo=UTC)


class Hello(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=20)]
    shout: bool = False


class Add(msgspec.Struct, forbid_unknown_fields=True):
    by: Annotated[int, msgspec.Meta(ge=1, le=10)]


class Since(msgspec.Struct, forbid_unknown_fields=True):
    since: datetime


def app() -> Litestar:
    total = 0

    async def hello(_: Call, given: Hello) -> dict[str, Any]:
        text = f"hello {given.name}"
        return {"text": text.upper() if given.shout else text, "at": MOMENT}

    async def now(_: Call, __: None) -> dict[str, Any]:
        return {"at": MOMENT, "zone": "UTC"}

    async def add(call: Call, given: Add) -> dict[str, int]:
        nonlocal total
        total += given.by
        call.cookies.append(Cookie(key="counted", value=str(total), httponly=True, samesite="lax"))
        return {"total": total}

    async def since(_: Call, given: Since) -> dict[str, Any]:
        return {"since": given.since, "later": [given.since + timedelta(hours=1)], "dotted.key": given.since}

    async def vault(_: Call, __: None) -> None:
        raise ProcedureError("UNAUTHORIZED", "Sign in first")

    async def limited(_: Call, __: None) -> None:
        raise ProcedureError("TOO_MANY_REQUESTS", "Too many attempts; retry in 42 seconds", {"Retry-After": "42"})

    async def broken(_: Call, __: None) -> None:
        raise RuntimeError("a secret detail")

    procedures = {
        "greeting.hello": Procedure("query", Hello, hello, "public"),
        "clock.now": Procedure("query", None, now, "public"),
        "counter.add": Procedure("mutation", Add, add, "public"),
        "events.since": Procedure("query", Since, since, "public"),
        "vault.open": Procedure("query", None, vault, "public"),
        "limits.hit": Procedure("mutation", None, limited, "public"),
        "broken.boom": Procedure("query", None, broken, "public"),
    }

    async def anyone(_call: Call, _access: Access) -> None:
        return None

    return Litestar(route_handlers=[trpc_route(procedures, anyone)], request_max_body_size=4096)
