"""What tests share: waiting for a condition (`until`), another process writing SQLite (`writer_busy`), a
helpdesk organization signed up (`signed_up`) and an agent joined to one by invitation (`joined_agent`)."""

from __future__ import annotations

import asyncio
import fcntl
import inspect
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

import httpx

if TYPE_CHECKING:  # only annotations: the helpers stay importable without a service's gateway
    from tests.helpdesk_stack import Browser, HelpdeskStack

T = TypeVar("T")


@contextmanager
def writer_busy(database: str) -> Iterator[None]:
    """Another process's writer in the middle of its transaction on the SQLite file `database`, until the block ends:
    it holds the writers' turn (`<database>.write-lock`, storage/common/db.py) and SQLite's write lock. A writer of
    ours waits meanwhile; a reader does not."""
    with open(f"{database}.write-lock", "a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()
            fcntl.flock(turn, fcntl.LOCK_UN)


# `T | None`: a condition that answers None until it holds returns its answer's type (never None: None is falsy).
@overload
async def until(
    condition: Callable[[], Awaitable[T | None]], what: str = "", *, timeout_s: float = 30, every_s: float = 0.1
) -> T: ...


@overload
async def until(
    condition: Callable[[], T | None], what: str = "", *, timeout_s: float = 30, every_s: float = 0.1
) -> T: ...


async def until(condition: Callable[[], Any], what: str = "", *, timeout_s: float = 30, every_s: float = 0.1) -> Any:
    """`condition()`'s first truthy answer (it may be sync or async), asked every `every_s` seconds (0: at each turn of
    the loop). Past `timeout_s` it fails naming `what` was awaited and the last answer: the bound only turns "never"
    into a failure, so it is generous, and it proves nothing about what did not happen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        answer = condition()
        if inspect.isawaitable(answer):
            answer = await answer
        if answer:
            return answer
        if loop.time() > deadline:
            awaited = what or getattr(condition, "__qualname__", repr(condition))
            raise AssertionError(f"not within {timeout_s:g} s: {awaited} (last answer: {answer!r:.500})")
        await asyncio.sleep(every_s)


@dataclass
class Organization:
    """A helpdesk organization signed up through a browser: its admin (still signed in there) and a REST key."""

    stack: HelpdeskStack
    browser: Browser
    id: str
    admin_id: str
    admin_email: str
    key: str
    support_address: str
    """Its email channel's address: replies to its customers go out from it."""

    async def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A REST call (`/api/v1`) with the organization's key."""
        return await self.stack.rest(self.key, method, path, **kwargs)


async def new_organization(browser: Browser, *scopes: str) -> Organization:
    """Signs `browser` up as the admin of a new organization on the free plan, makes a REST key with `scopes` (every
    scope, `*`, when none is named), and opens an email channel, through which its replies go out."""
    admin = (await browser.sign_up())["user"]
    key = await browser.api_key(*(scopes or ("*",)))
    support = f"support-{uuid.uuid4().hex[:10]}@example.com"
    channel = await browser.call("channels.create", {"kind": "email", "name": "Support", "addresses": [support]})
    assert channel.status_code == 200, channel.text
    return Organization(browser.stack, browser, admin["organization_id"], admin["id"], admin["email"], key, support)


@asynccontextmanager
async def signed_up(stack: HelpdeskStack, *scopes: str) -> AsyncIterator[Organization]:
    """A new organization in a new browser (`new_organization`), which stays open for the block."""
    async with stack.browser() as browser:
        yield await new_organization(browser, *scopes)


async def sent_reply(org: Organization, ticket_id: str, body: str) -> dict[str, Any]:
    """A reply posted over REST, once the stack's reply sender has sent it (kept locally: the stack has no SMTP server)
    and written its `delivery_changed` event, so that the reply's events stay as they are from here on."""
    made = await org.rest("POST", f"/tickets/{ticket_id}/conversations", json={"body": body})
    assert made.status_code == 201, made.text
    return await reply_sent(org, ticket_id, made.json()["id"])


async def reply_sent(org: Organization, ticket_id: str, conversation_id: str) -> dict[str, Any]:
    """The reply `conversation_id`, once the stack's reply sender has sent it and written its `delivery_changed`
    event."""

    async def sent() -> dict[str, Any] | None:
        listed = await org.rest("GET", f"/tickets/{ticket_id}/conversations", params={"limit": 100})
        found = next(item for item in listed.json()["data"] if item["id"] == conversation_id)
        return found if found["delivery"]["state"] == "sent" else None

    return await until(sent, "the reply sent")


async def joined_agent(org: Organization, browser: Browser, email: str | None = None) -> dict[str, Any]:
    """`browser` signed in as a new agent of `org`: invited by its admin (`team.invite`) and joined by following the
    mailed link. Answers the agent as `auth.getUser` does."""
    address = email or f"agent.{uuid.uuid4().hex[:10]}@example.com"
    invited = await org.browser.call("team.invite", {"email": address})
    assert invited.status_code == 200, invited.text
    return await browser.accept_invitation(await org.stack.mailed_invitation(address))
