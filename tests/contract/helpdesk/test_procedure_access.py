"""Who may call each procedure, walked over every procedure the helpdesk app serves (`gateway.helpdesk.app.procedures`,
each with its declared `access`) against the running stack: without a session everything but the sign-in procedures is
UNAUTHORIZED; an agent gets FORBIDDEN from every admin procedure before it runs (an input it would refuse is never
read, and nothing of the organization changes); a signed-in user who has not completed signup gets FORBIDDEN from every
member's and admin's procedure. And the procedures modules leave sessions to the wire's admission: none of them but
`access.py` and `wire.py` imports the sessions module or reads a session by hand."""

from __future__ import annotations

import ast
import secrets
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

import gateway.helpdesk.procedures
from gateway.common.limits import RateLimits
from gateway.helpdesk.accounts import signin
from gateway.helpdesk.accounts.credentials import AccessTokens, PasswordCost, Passwords
from gateway.helpdesk.accounts.sessions import Sessions
from gateway.helpdesk.app import procedures
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.inbound.common import Inbound
from gateway.helpdesk.procedures.wire import Procedure
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.mail import kept_mail
from storage.common.models import Base
from storage.helpdesk.accounts import USERS
from tests.helpdesk_stack import Browser, HelpdeskStack, data, new_email, trpc_error
from tests.helpers import Organization, joined_agent, signed_up

PUBLIC = {"auth.signInWithEmail", "auth.signInWithPassword", "auth.sendPasswordReset", "auth.signInWithSocial"}
"""What a browser calls before it has a session: the sign-in procedures, and nothing else."""
PROCEDURES_PACKAGE = Path(gateway.helpdesk.procedures.__file__).parent
SESSION_READERS = {"access.py", "wire.py"}


@pytest.fixture
async def served(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Mapping[str, Procedure]]:
    """Every procedure the helpdesk app serves, by name, as `create_helpdesk_app` wires them (around parts of the
    test's own: only the names, kinds and accesses are read)."""

    async def nowhere(*_: Any) -> None:
        return None

    db = helpdesk_stack.db
    cipher = MultiFernet([Fernet(Fernet.generate_key())])
    accounts = signin.Accounts(
        db=db,
        sessions=Sessions(db, AccessTokens(secrets.token_bytes(32)), secure=False),
        passwords=Passwords(PasswordCost(memory_kib=64, passes=1, lanes=1)),
        limits=RateLimits(None, limited=signin.sign_in_limited, unavailable=signin.limits_unavailable),
        mailer=kept_mail(db),
        public_url=helpdesk_stack.base_url,
    )
    inbound = Inbound(db, cipher, nowhere)
    try:
        yield procedures(HelpdeskGateway(desk=Helpdesk(db, nowhere, cipher), accounts=accounts, inbound=inbound))
    finally:
        await inbound.aclose()


async def call(browser: Browser, name: str, procedure: Procedure) -> httpx.Response:
    """The procedure called as its kind is (a query fetched, a mutation posted), with an empty input where it takes
    one: an input most of them refuse, so an answer other than BAD_REQUEST shows the call was refused before its input
    was read."""
    given: dict[str, Any] | None = {} if procedure.input is not None else None
    if procedure.kind == "query":
        return await browser.query(name, given)
    return await browser.call(name, given)


def of_access(served: Mapping[str, Procedure], *accesses: str) -> dict[str, Procedure]:
    return {name: procedure for name, procedure in sorted(served.items()) if procedure.access in accesses}


def rows_of(connection: Connection, organization_id: str) -> dict[str, Any]:
    """How many rows of each table the organization has (by `organization_id`, or `owner_id` for the platform's
    shared tables: keys, webhook subscriptions and events), and its members' roles and states."""
    counts: dict[str, Any] = {}
    for table in Base.metadata.sorted_tables:
        column = table.c.get("organization_id")
        if column is None:
            column = table.c.get("owner_id")
        if column is None:
            continue
        counts[table.name] = connection.execute(select(func.count()).where(column == organization_id)).scalar_one()
    members = connection.execute(
        select(USERS.c.id, USERS.c.role, USERS.c.deactivated_at).where(USERS.c.organization_id == organization_id)
    )
    counts["members"] = sorted(tuple(row) for row in members)
    return counts


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


async def test_only_the_sign_in_procedures_are_public(served: Mapping[str, Procedure]) -> None:
    assert set(of_access(served, "public")) == PUBLIC
    assert {procedure.access for procedure in served.values()} == {"public", "signed_in", "member", "admin"}


async def test_every_procedure_but_the_public_ones_is_unauthorized_without_a_session(
    helpdesk_stack: HelpdeskStack, served: Mapping[str, Procedure]
) -> None:
    guarded = of_access(served, "signed_in", "member", "admin")
    assert len(guarded) > 40
    async with helpdesk_stack.browser() as stranger:
        answers = {name: trpc_error(await call(stranger, name, procedure)) for name, procedure in guarded.items()}
    assert answers == dict.fromkeys(guarded, (401, "UNAUTHORIZED"))


async def test_every_admin_procedure_is_forbidden_to_an_agent_before_it_runs(
    org: Organization, served: Mapping[str, Procedure]
) -> None:
    admins = of_access(served, "admin")
    assert {"tickets.delete", "customers.delete", "team.invite", "apiKeys.create", "webhooks.create"} <= set(admins)
    async with org.stack.browser() as browser:
        await joined_agent(org, browser)
        before = await org.stack.db.read(rows_of, org.id)
        answers = {name: trpc_error(await call(browser, name, procedure)) for name, procedure in admins.items()}
        assert answers == dict.fromkeys(admins, (403, "FORBIDDEN"))
        assert await org.stack.db.read(rows_of, org.id) == before, "nothing of the organization changed"
        # a member's procedure is the agent's: the refusals above were their role's, not their session's
        assert data(await browser.query("tickets.list", {}))["items"] == []


async def test_every_member_and_admin_procedure_is_forbidden_before_signup_completes(
    helpdesk_stack: HelpdeskStack, served: Mapping[str, Procedure]
) -> None:
    members = of_access(served, "member", "admin")
    assert {"tickets.list", "events.list", "team.members", "customers.create"} <= set(members)
    async with helpdesk_stack.browser() as browser:
        await browser.sign_in(new_email("newcomer"))
        me = data(await browser.query("auth.getUser"))
        assert (me["organization_id"], me["role"]) == (None, None)
        answers = {name: trpc_error(await call(browser, name, procedure)) for name, procedure in members.items()}
        assert answers == dict.fromkeys(members, (403, "FORBIDDEN"))
        assert data(await browser.query("auth.getUser"))["id"] == me["id"], "still signed in"


def _is_request(node: ast.expr) -> bool:
    """`request` or `<anything>.request`: an HTTP request."""
    return (isinstance(node, ast.Name) and node.id == "request") or (
        isinstance(node, ast.Attribute) and node.attr == "request"
    )


def _by_hand(node: ast.Attribute, store: set[str]) -> bool:
    """`request.cookies`, or `accounts.<a function of the session store>`."""
    if node.attr == "cookies":
        return _is_request(node.value)
    return node.attr in store and isinstance(node.value, ast.Name) and node.value.id == "accounts"


def _reads_sessions(tree: ast.Module) -> list[str]:
    """What in a module imports the sessions module or reads a session by hand: a request's cookies, the session
    cookies by name, the session store (storage.helpdesk.accounts' sessions and refresh tokens)."""
    found = []
    store = {"SESSIONS", "REFRESH_TOKENS", "alive", "rotate", "start_session", "revoke", "end_sessions"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.startswith("gateway.helpdesk.accounts.sessions")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = {alias.name for alias in node.names}
            if module.startswith("gateway.helpdesk.accounts.sessions") or (
                module == "gateway.helpdesk.accounts" and "sessions" in names
            ):
                found.append(f"from {module} import {', '.join(sorted(names))}")
            if module == "storage.helpdesk.accounts" and names & store:
                found.append(f"from {module} import {', '.join(sorted(names & store))}")
        elif isinstance(node, ast.Attribute) and _by_hand(node, store):
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "-token" in node.value:
            found.append(f"{node.value!r} (line {node.lineno})")
    return found


def test_no_procedures_module_but_access_and_wire_reads_sessions() -> None:
    modules = sorted(PROCEDURES_PACKAGE.glob("*.py"))
    assert {path.name for path in modules} >= SESSION_READERS | {"team.py", "tickets.py", "customers.py"}
    offenders = {
        path.name: found
        for path in modules
        if path.name not in SESSION_READERS and (found := _reads_sessions(ast.parse(path.read_text(), str(path))))
    }
    assert offenders == {}
    # the check sees what it looks for: the two modules that do resolve and carry sessions are caught by it
    for name in SESSION_READERS:
        assert _reads_sessions(ast.parse((PROCEDURES_PACKAGE / name).read_text())), name
