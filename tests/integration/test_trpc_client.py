"""The real @trpc/client v11 with superjson, from npm, run by Node against the tRPC wire format served by uvicorn:
what a stock client makes of a query, a call with no input, dates both ways, a mutation, errors and a batch."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from tests.trpc_router import app

SCRIPT = Path(__file__).parents[1] / "interop" / "trpc_client.mjs"
AT = "2026-11-25T06:30:15.123Z"


@pytest.fixture
async def url() -> AsyncIterator[str]:
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app(), log_config=None, lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[listening]))
    while not server.started:
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{listening.getsockname()[1]}/api/trpc"
    server.should_exit = True
    await serving
    listening.close()


async def run_client(url: str) -> dict[str, Any]:
    node = await asyncio.create_subprocess_exec(
        "node", str(SCRIPT), url, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(node.communicate(), timeout=60)
    assert node.returncode == 0, err.decode()
    return json.loads(out)  # type: ignore[no-any-return]


async def test_a_stock_trpc_client_reads_results_errors_and_batches(url: str) -> None:
    seen = await run_client(url)
    assert seen["query"] == {"text": "hello Ada", "at": AT}  # a Date again on the client's side
    assert seen["noInput"] == {"at": AT, "zone": "UTC"}
    assert seen["dateInput"] == {"since": AT, "later": ["2026-11-25T07:30:15.123Z"]}
    assert seen["mutation"] == {"total": 3}
    assert seen["error"] == {
        "name": "TRPCClientError",
        "message": "Sign in first",
        "data": {"code": "UNAUTHORIZED", "httpStatus": 401, "path": "vault.open"},
        "code": -32001,
    }
    assert seen["rateLimited"]["message"] == "Too many attempts; retry in 42 seconds"
    assert seen["rateLimited"]["code"] == -32600
    assert seen["rateLimited"]["data"]["code"] == "TOO_MANY_REQUESTS"
    assert seen["rateLimited"]["data"]["httpStatus"] == 429
    assert seen["invalid"]["data"]["code"] == "BAD_REQUEST"
    assert seen["batch"] == [{"text": "hello a", "at": AT}, {"at": AT, "zone": "UTC"}, {"text": "HELLO C", "at": AT}]
    assert seen["batchRequests"] == 1  # three calls, one request
    assert "/greeting.hello,clock.now,greeting.hello?batch=1&input=" in seen["batchUrl"]
    assert seen["mixed"] == ["fulfilled", "rejected"]
