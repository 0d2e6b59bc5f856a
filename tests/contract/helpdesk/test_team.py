"""The team through the running stack: invitations (`team.invite` and `POST /api/v1/invitations`) mailed as a
single-use link that joins its person as an agent, signed in; expired, revoked, used and re-sent links; an address
belongs to one organization; who may manage the team; role changes; an organization keeps one active admin;
deactivation (every session ends at once, sign-in is refused, open and pending tickets are unassigned or reassigned
in the same call) and reactivation; `/api/v1/users` under its scopes."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from storage.common import mail as mail_store
from storage.common.webhooks.models import EVENTS as WEBHOOK_EVENTS
from storage.helpdesk import accounts
from storage.helpdesk.accounts import SESSIONS
from storage.helpdesk.team import INVITATIONS
from tests.helpdesk_stack import Browser, HelpdeskStack, data, new_email, trpc_error
from tests.helpers import Organization, joined_agent, signed_up, until
from tests.peers.receiver import WebhookReceiver, verify_helpdesk

PASSWORD = "correct horse battery staple"
MEMBER_FIELDS = {"id", "email", "name", "avatar_url", "role", "active", "created_at", "deactivated_at"}
INVITATION_FIELDS = {"id", "email", "role", "invited_by", "created_at", "expires_at"}


@pytest.fixture
async def org(helpdesk_stack: HelpdeskStack) -> AsyncIterator[Organization]:
    async with signed_up(helpdesk_stack) as organization:
        yield organization


async def invite(org: Organization, email: str) -> dict[str, Any]:
    return dict(data(await org.browser.call("team.invite", {"email": email})))


async def user_events(browser: Browser, user_id: str) -> list[dict[str, Any]]:
    """The user's activity events, newest first (`events.list`)."""
    listed = data(await browser.query("events.list", {"aggregateType": "user", "aggregateId": user_id}))
    assert listed["hasMore"] is False
    return list(listed["events"])


async def ticket_events(browser: Browser, ticket_id: str) -> list[dict[str, Any]]:
    listed = data(await browser.query("events.listForTicket", {"ticketId": ticket_id, "limit": 100}))
    return list(listed["events"])


async def members(browser: Browser) -> dict[str, dict[str, Any]]:
    return {member["id"]: member for member in data(await browser.query("team.members"))}


def assert_refused(response: httpx.Response, code: str) -> None:
    """A followed link refused: 400 with `{"error": {"code", "message"}}`, no cookie set."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    assert not response.headers.get_list("set-cookie")


async def open_link(stack: HelpdeskStack, path: str) -> httpx.Response:
    """A link followed by a browser that has no cookies."""
    async with stack.browser() as browser:
        return await browser.client.get(path)


async def user_by_email(stack: HelpdeskStack, email: str) -> accounts.UserRecord | None:
    return await stack.db.read(accounts.user_by_email, email)


async def create_ticket(org: Organization, **body: Any) -> dict[str, Any]:
    body.setdefault("subject", "Where is my parcel?")
    body.setdefault("customer_email", new_email("customer"))
    created = await org.rest("POST", "/tickets", json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


async def ticket(org: Organization, ticket_id: str) -> dict[str, Any]:
    found = await org.rest("GET", f"/tickets/{ticket_id}")
    assert found.status_code == 200, found.text
    return dict(found.json())


def webhook_rows(connection: Connection, organization_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The organization's outgoing webhook events as recorded: (id, event name, delivered body)."""
    hooks = WEBHOOK_EVENTS.c
    rows = connection.execute(
        select(hooks.id, hooks.type, hooks.body)
        .where(hooks.service == "helpdesk", hooks.owner_id == organization_id)
        .order_by(hooks.created_at, hooks.id)
    )
    return [(row.id, row.type, json.loads(row.body)) for row in rows]


async def subscribe(org: Organization, receiver: WebhookReceiver, events: list[str]) -> str:
    path = receiver.new_path(secret="team-s3cret", verify=verify_helpdesk)
    body = {"url": receiver.url(path), "events": events, "secret": "team-s3cret"}
    created = await org.rest("POST", "/webhooks", json=body)
    assert created.status_code == 201, created.text
    return path


async def delivered(receiver: WebhookReceiver, path: str, event_ids: set[str]) -> dict[str, Any]:
    """The deliveries of these webhook events at `path`, by event id (`x-helpdesk-delivery-id`), once all arrived."""

    def arrived() -> dict[str, Any]:
        found = {d.headers["x-helpdesk-delivery-id"]: d for d in receiver.received(path)}
        return found if event_ids <= set(found) else {}

    found = await until(arrived, f"deliveries of {sorted(event_ids)}")
    assert all(found[event_id].verified for event_id in event_ids)
    return {event_id: found[event_id].json for event_id in event_ids}


# Invitations


async def test_an_admin_s_invitation_mails_a_link_that_joins_the_person_as_an_agent_signed_in(
    org: Organization,
) -> None:
    address = new_email("grace")
    invitation = await invite(org, address.upper())
    assert set(invitation) == INVITATION_FIELDS
    assert (invitation["email"], invitation["role"], invitation["invited_by"]) == (address, "agent", org.admin_id)
    lifetime = datetime.fromisoformat(invitation["expires_at"]) - datetime.fromisoformat(invitation["created_at"])
    assert lifetime == timedelta(days=7)
    assert [item["id"] for item in data(await org.browser.query("team.invitations"))] == [invitation["id"]]

    [mail] = await org.stack.db.read(mail_store.kept_mails, "helpdesk", address)
    assert mail.subject == "You are invited to the helpdesk"
    path = await org.stack.mailed_invitation(address)
    assert path.startswith("/auth/invite?token=hd_invite_")

    async with org.stack.browser() as browser:
        opened = await browser.client.get(path)
        assert opened.status_code == 303, opened.text
        assert opened.headers["location"] == "/"
        assert opened.headers["cache-control"] == "no-store"
        assert {"hd-access-token", "hd-refresh-token"} <= set(opened.cookies)
        me = data(await browser.query("auth.getUser"))
        assert (me["email"], me["organization_id"], me["role"]) == (address, org.id, "agent")
        assert data(await browser.query("tickets.list", {}))["items"] == []  # a member's procedure: they are one

    [created] = await user_events(org.browser, me["id"])
    assert (created["event_type"], created["event_data"]) == ("created", {"email": address, "role": "agent"})
    assert created["actor_id"] == org.admin_id
    assert created["actor"] == {"name": "Ada Admin", "email": org.admin_email}
    assert data(await org.browser.query("team.invitations")) == [], "an accepted invitation is pending no more"


async def test_an_invitation_made_over_rest_with_a_users_write_key_joins_the_person_as_an_agent(
    org: Organization,
) -> None:
    key = await org.browser.api_key("users:write")
    address = new_email("linus")
    made = await org.stack.rest(key, "POST", "/invitations", json={"email": address})
    assert made.status_code == 201, made.text
    assert set(made.json()) == INVITATION_FIELDS
    assert (made.json()["email"], made.json()["role"], made.json()["invited_by"]) == (address, "agent", None)
    listed = await org.stack.rest(key, "GET", "/invitations")
    assert listed.status_code == 200, listed.text
    assert [item["id"] for item in listed.json()["data"]] == [made.json()["id"]]
    refused = await org.stack.rest(await org.browser.api_key("tickets:write"), "POST", "/invitations", json={})
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")

    async with org.stack.browser() as browser:
        me = await browser.accept_invitation(await org.stack.mailed_invitation(address))
    assert (me["organization_id"], me["role"]) == (org.id, "agent")
    [created] = await user_events(org.browser, me["id"])
    assert (created["event_type"], created["event_data"], created["actor_id"]) == (
        "created",
        {"email": address, "role": "agent"},
        None,
    )


async def test_an_invitation_link_works_once(org: Organization) -> None:
    address = new_email()
    await invite(org, address)
    path = await org.stack.mailed_invitation(address)
    assert (await open_link(org.stack, path)).status_code == 303
    assert_refused(await open_link(org.stack, path), "invalid_invitation")
    user = await user_by_email(org.stack, address)
    assert user is not None
    assert [event["event_type"] for event in await user_events(org.browser, user.id)] == ["created"]

    raced = new_email("raced")
    await invite(org, raced)
    path = await org.stack.mailed_invitation(raced)
    answers = await asyncio.gather(*(open_link(org.stack, path) for _ in range(4)))
    assert sorted(answer.status_code for answer in answers) == [303, 400, 400, 400], "of uses at once, one succeeds"


async def test_an_expired_invitation_is_refused(org: Organization) -> None:
    address = new_email()
    invitation = await invite(org, address)
    path = await org.stack.mailed_invitation(address)

    def expire(connection: Connection) -> None:
        a_minute_ago = datetime.now(UTC) - timedelta(minutes=1)
        connection.execute(
            update(INVITATIONS).where(INVITATIONS.c.id == invitation["id"]).values(expires_at=a_minute_ago)
        )

    await org.stack.db.write(expire)
    assert data(await org.browser.query("team.invitations")) == []
    assert_refused(await open_link(org.stack, path), "invalid_invitation")
    assert await user_by_email(org.stack, address) is None, "nobody joined, nobody was made"


async def test_a_revoked_invitation_is_refused(org: Organization) -> None:
    address = new_email()
    invitation = await invite(org, address)
    path = await org.stack.mailed_invitation(address)
    revoked = data(await org.browser.call("team.revokeInvitation", {"id": invitation["id"]}))
    assert revoked == {"id": invitation["id"], "deleted": True}
    assert data(await org.browser.query("team.invitations")) == []
    assert_refused(await open_link(org.stack, path), "invalid_invitation")
    assert await user_by_email(org.stack, address) is None
    again = await org.browser.call("team.revokeInvitation", {"id": invitation["id"]})
    assert trpc_error(again) == (404, "NOT_FOUND")


async def test_an_address_of_another_organization_or_of_a_member_is_refused_at_invite(
    helpdesk_stack: HelpdeskStack, org: Organization
) -> None:
    async with signed_up(helpdesk_stack) as other:
        taken = await org.browser.call("team.invite", {"email": other.admin_email})
        assert trpc_error(taken) == (409, "CONFLICT")
        over_rest = await org.rest("POST", "/invitations", json={"email": other.admin_email.upper()})
        assert (over_rest.status_code, over_rest.json()["error"]["code"]) == (409, "conflict")
    member = await org.browser.call("team.invite", {"email": org.admin_email})
    assert trpc_error(member) == (409, "CONFLICT")
    assert data(await org.browser.query("team.invitations")) == []
    for address in (other.admin_email, org.admin_email):
        mails = await org.stack.db.read(mail_store.kept_mails, "helpdesk", address)
        assert not [mail for mail in mails if "/auth/invite" in mail.body], "no invitation was mailed"


async def test_an_invitation_is_refused_when_its_address_joined_another_organization_meanwhile(
    helpdesk_stack: HelpdeskStack, org: Organization
) -> None:
    address = new_email("busy")
    await invite(org, address)
    path = await org.stack.mailed_invitation(address)
    async with helpdesk_stack.browser() as elsewhere:
        theirs = (await elsewhere.sign_up("Elsewhere", email=address))["organization"]["id"]
        assert_refused(await open_link(helpdesk_stack, path), "invalid_invitation")
        me = data(await elsewhere.query("auth.getUser"))
        assert (me["organization_id"], me["role"]) == (theirs, "admin")
    assert address not in {member["email"] for member in (await members(org.browser)).values()}


async def test_a_person_with_an_account_but_no_organization_joins_by_the_link(org: Organization) -> None:
    async with org.stack.browser() as browser:
        await browser.sign_in(new_email("early"))  # an account, signed in, no workspace yet
        before = data(await browser.query("auth.getUser"))
        assert before["organization_id"] is None
        await invite(org, browser.email)
        joined = await browser.accept_invitation(await org.stack.mailed_invitation(browser.email))
    assert (joined["id"], joined["organization_id"], joined["role"]) == (before["id"], org.id, "agent")
    [created] = await user_events(org.browser, joined["id"])
    assert (created["event_type"], created["event_data"]) == ("created", {"email": browser.email, "role": "agent"})


async def test_re_inviting_an_address_replaces_the_earlier_pending_link(org: Organization) -> None:
    address = new_email()
    first = await invite(org, address)
    first_path = await org.stack.mailed_invitation(address)
    second = await invite(org, address)
    second_path = await org.stack.mailed_invitation(address)
    assert second_path != first_path
    assert [item["id"] for item in data(await org.browser.query("team.invitations"))] == [second["id"]]
    assert first["id"] != second["id"]
    assert_refused(await open_link(org.stack, first_path), "invalid_invitation")
    assert (await open_link(org.stack, second_path)).status_code == 303


async def test_team_invitations_lists_the_pending_invitations_newest_first(org: Organization) -> None:
    older = await invite(org, new_email())
    newer = await invite(org, new_email())
    revoked = await invite(org, new_email())
    accepted = await invite(org, new_email("accepted"))
    assert (await open_link(org.stack, await org.stack.mailed_invitation(accepted["email"]))).status_code == 303
    data(await org.browser.call("team.revokeInvitation", {"id": revoked["id"]}))
    listed = data(await org.browser.query("team.invitations"))
    assert [item["id"] for item in listed] == [newer["id"], older["id"]]
    assert all(set(item) == INVITATION_FIELDS for item in listed)


# Members and roles


async def test_team_members_lists_every_member_for_any_member(org: Organization) -> None:
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
        seen_by_agent = await members(browser)
    seen_by_admin = await members(org.browser)
    assert seen_by_agent == seen_by_admin
    assert list(seen_by_admin) == [org.admin_id, agent["id"]], "oldest first"
    assert all(set(member) == MEMBER_FIELDS for member in seen_by_admin.values())
    assert {(m["email"], m["role"], m["active"], m["deactivated_at"]) for m in seen_by_admin.values()} == {
        (org.admin_email, "admin", True, None),
        (agent["email"], "agent", True, None),
    }


async def test_an_agent_calling_the_admins_team_procedures_is_forbidden(org: Organization) -> None:
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
        pending = await invite(org, new_email())
        calls: list[tuple[str, dict[str, Any] | None]] = [
            ("team.invite", {"email": new_email("friend")}),
            ("team.revokeInvitation", {"id": pending["id"]}),
            ("team.changeRole", {"userId": agent["id"], "role": "admin"}),
            ("team.deactivate", {"userId": org.admin_id}),
            ("team.reactivate", {"userId": org.admin_id}),
        ]
        for procedure, given in calls:
            assert trpc_error(await browser.call(procedure, given)) == (403, "FORBIDDEN"), procedure
        assert trpc_error(await browser.query("team.invitations")) == (403, "FORBIDDEN")
    assert [item["id"] for item in data(await org.browser.query("team.invitations"))] == [pending["id"]]
    roles = {member["id"]: (member["role"], member["active"]) for member in (await members(org.browser)).values()}
    assert roles == {org.admin_id: ("admin", True), agent["id"]: ("agent", True)}
    assert [event["event_type"] for event in await user_events(org.browser, agent["id"])] == ["created"]


async def test_a_role_change_writes_role_changed_with_the_old_and_the_new_role(org: Organization) -> None:
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
        assert trpc_error(await browser.query("team.invitations")) == (403, "FORBIDDEN")
        promoted = data(await org.browser.call("team.changeRole", {"userId": agent["id"], "role": "admin"}))
        assert set(promoted) == MEMBER_FIELDS
        assert (promoted["id"], promoted["role"]) == (agent["id"], "admin")
        assert data(await browser.query("team.invitations")) == [], "an admin now, on the very next request"
    [changed, _] = await user_events(org.browser, agent["id"])
    assert (changed["event_type"], changed["event_data"]) == (
        "role_changed",
        {"old_role": "agent", "new_role": "admin"},
    )
    assert changed["actor_id"] == org.admin_id
    assert changed["actor"] == {"name": "Ada Admin", "email": org.admin_email}

    demoted = await org.rest("PATCH", f"/users/{agent['id']}", json={"role": "agent"})
    assert demoted.status_code == 200, demoted.text
    assert demoted.json()["role"] == "agent"
    [back, _, _] = await user_events(org.browser, agent["id"])
    assert (back["event_type"], back["event_data"], back["actor_id"]) == (
        "role_changed",
        {"old_role": "admin", "new_role": "agent"},
        None,
    )
    unchanged = data(await org.browser.call("team.changeRole", {"userId": agent["id"], "role": "agent"}))
    assert unchanged["role"] == "agent"
    assert len(await user_events(org.browser, agent["id"])) == 3, "a change to the same role writes nothing"


async def test_demoting_or_deactivating_the_last_active_admin_is_conflict(org: Organization) -> None:
    me = {"userId": org.admin_id}
    assert trpc_error(await org.browser.call("team.changeRole", me | {"role": "agent"})) == (409, "CONFLICT")
    assert trpc_error(await org.browser.call("team.deactivate", me)) == (409, "CONFLICT")
    over_rest = await org.rest("PATCH", f"/users/{org.admin_id}", json={"role": "agent"})
    assert (over_rest.status_code, over_rest.json()["error"]["code"]) == (409, "conflict")
    deactivated = await org.rest("POST", f"/users/{org.admin_id}/deactivate")
    assert (deactivated.status_code, deactivated.json()["error"]["code"]) == (409, "conflict")

    async with org.stack.browser() as browser:  # a second admin, deactivated, is no active admin
        other = await joined_agent(org, browser)
    data(await org.browser.call("team.changeRole", {"userId": other["id"], "role": "admin"}))
    data(await org.browser.call("team.deactivate", {"userId": other["id"]}))
    assert trpc_error(await org.browser.call("team.changeRole", me | {"role": "agent"})) == (409, "CONFLICT")
    assert trpc_error(await org.browser.call("team.deactivate", me)) == (409, "CONFLICT")

    mine = await members(org.browser)
    assert (mine[org.admin_id]["role"], mine[org.admin_id]["active"]) == ("admin", True)
    assert [event["event_type"] for event in await user_events(org.browser, org.admin_id)] == ["created"]


async def test_two_admins_demoting_each_other_at_once_leave_one_active_admin(org: Organization) -> None:
    async with org.stack.browser() as browser:
        other = await joined_agent(org, browser)
        data(await org.browser.call("team.changeRole", {"userId": other["id"], "role": "admin"}))
        answers = await asyncio.gather(
            org.browser.call("team.changeRole", {"userId": other["id"], "role": "agent"}),
            browser.call("team.changeRole", {"userId": org.admin_id, "role": "agent"}),
        )
    # the later one is refused: as the last admin's demotion (409), or, admitted after the first committed, as an
    # agent's call to an admin's procedure (403)
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses in ([200, 403], [200, 409]), [answer.text for answer in answers]
    roles = [(member["role"], member["active"]) for member in (await members(org.browser)).values()]
    assert sorted(roles) == [("admin", True), ("agent", True)]


async def test_another_organization_s_member_is_not_found_to_the_team_s_changes(
    helpdesk_stack: HelpdeskStack, org: Organization
) -> None:
    async with signed_up(helpdesk_stack) as other:
        for procedure, given in (
            ("team.changeRole", {"userId": other.admin_id, "role": "agent"}),
            ("team.deactivate", {"userId": other.admin_id}),
            ("team.reactivate", {"userId": other.admin_id}),
        ):
            assert trpc_error(await org.browser.call(procedure, given)) == (404, "NOT_FOUND"), procedure
        for method, path in (("GET", ""), ("PATCH", ""), ("POST", "/deactivate"), ("POST", "/reactivate")):
            body = {"json": {"role": "agent"}} if method == "PATCH" else {}
            refused = await org.rest(method, f"/users/{other.admin_id}{path}", **body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (404, "not_found"), (method, path)
        theirs = await members(other.browser)
    assert (theirs[other.admin_id]["role"], theirs[other.admin_id]["active"]) == ("admin", True)


# Deactivation and reactivation


async def test_deactivation_writes_deactivated_and_ends_every_session_of_the_member_on_the_next_request(
    org: Organization,
) -> None:
    async with org.stack.browser() as first, org.stack.browser() as second:
        agent = await joined_agent(org, first)
        data(await first.call("auth.setPassword", {"password": PASSWORD}))
        data(await second.call("auth.signInWithPassword", {"email": agent["email"], "password": PASSWORD}))
        for browser in (first, second):
            data(await browser.query("tickets.list", {}))

        member = data(await org.browser.call("team.deactivate", {"userId": agent["id"]}))
        assert (member["id"], member["active"]) == (agent["id"], False)
        assert member["deactivated_at"] is not None

        for browser in (first, second):
            assert trpc_error(await browser.query("tickets.list", {})) == (401, "UNAUTHORIZED")
            assert trpc_error(await browser.query("auth.getUser")) == (401, "UNAUTHORIZED")

    def sessions_of(connection: Connection) -> list[Any]:
        rows = connection.execute(select(SESSIONS.c.revoked_at).where(SESSIONS.c.user_id == agent["id"]))
        return [row.revoked_at for row in rows]

    ended = await org.stack.db.read(sessions_of)
    assert len(ended) == 2
    assert all(revoked_at is not None for revoked_at in ended)
    [deactivated, _] = await user_events(org.browser, agent["id"])
    assert (deactivated["event_type"], deactivated["event_data"]) == ("deactivated", {})
    assert deactivated["actor_id"] == org.admin_id
    assert deactivated["actor"] == {"name": "Ada Admin", "email": org.admin_email}
    assert (await members(org.browser))[agent["id"]]["active"] is False


async def test_a_deactivated_member_cannot_sign_in_until_reactivated(org: Organization) -> None:
    async with org.stack.browser() as before:
        agent = await joined_agent(org, before)
        data(await before.call("auth.setPassword", {"password": PASSWORD}))
        data(await org.browser.call("team.deactivate", {"userId": agent["id"]}))
        await refused_then_reactivated(org, agent)
        assert trpc_error(await before.query("auth.getUser")) == (401, "UNAUTHORIZED"), "an ended session stays ended"


async def refused_then_reactivated(org: Organization, agent: dict[str, Any]) -> None:
    """The deactivated agent is refused by password and by link in a new browser; reactivated (with its event), they
    sign in by password again."""
    credentials = {"email": agent["email"], "password": PASSWORD}

    async with org.stack.browser() as browser:
        refused = await browser.call("auth.signInWithPassword", credentials)
        assert trpc_error(refused) == (401, "UNAUTHORIZED")
        assert "deactivated" in refused.json()["error"]["json"]["message"]
        assert trpc_error(await browser.query("auth.getUser")) == (401, "UNAUTHORIZED")
        data(await browser.call("auth.signInWithEmail", {"email": agent["email"]}))
        by_link = await browser.client.get(await org.stack.mailed_link(agent["email"]))
        assert_refused(by_link, "deactivated")

    member = data(await org.browser.call("team.reactivate", {"userId": agent["id"]}))
    assert (member["active"], member["deactivated_at"]) == (True, None)
    [reactivated, *_] = await user_events(org.browser, agent["id"])
    assert (reactivated["event_type"], reactivated["event_data"], reactivated["actor_id"]) == (
        "reactivated",
        {},
        org.admin_id,
    )
    async with org.stack.browser() as browser:
        signed_in = data(await browser.call("auth.signInWithPassword", credentials))
        assert signed_in["user"]["id"] == agent["id"]
        assert data(await browser.query("tickets.list", {}))["items"] == []


async def test_deactivation_unassigns_the_member_s_open_and_pending_tickets_and_leaves_resolved_ones(
    org: Organization, plain_receiver: WebhookReceiver
) -> None:
    path = await subscribe(org, plain_receiver, ["ticket.assigned", "ticket.updated"])
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
    statuses = ("open", "pending", "resolved", "closed")
    by_status = {status: await create_ticket(org, status=status, assignee_id=agent["id"]) for status in statuses}
    hooks_before = {row[0] for row in await org.stack.db.read(webhook_rows, org.id)}

    data(await org.browser.call("team.deactivate", {"userId": agent["id"]}))

    now = {status: await ticket(org, created["id"]) for status, created in by_status.items()}
    assert {status: found["assignee_id"] for status, found in now.items()} == {
        "open": None,
        "pending": None,
        "resolved": agent["id"],
        "closed": agent["id"],
    }
    for status in ("open", "pending"):
        [unassigned, *_] = await ticket_events(org.browser, now[status]["id"])
        assert (unassigned["event_type"], unassigned["event_data"]) == ("unassigned", {"assignee_id": agent["id"]})
        assert unassigned["actor_id"] == org.admin_id
    for status in ("resolved", "closed"):
        assert "unassigned" not in [
            event["event_type"] for event in await ticket_events(org.browser, now[status]["id"])
        ]

    written = [row for row in await org.stack.db.read(webhook_rows, org.id) if row[0] not in hooks_before]
    assert sorted((name, body["data"]["ticketId"]) for _, name, body in written) == sorted(
        [("ticket.updated", now["open"]["id"]), ("ticket.updated", now["pending"]["id"])]
    ), "an unassignment is ticket.updated alone"
    deliveries = await delivered(plain_receiver, path, {event_id for event_id, _, _ in written})
    assert sorted((d["event"], d["data"]["ticketId"], d["data"]["status"]) for d in deliveries.values()) == sorted(
        [("ticket.updated", now["open"]["id"], "open"), ("ticket.updated", now["pending"]["id"], "pending")]
    )


async def test_deactivation_with_reassign_to_moves_the_open_tickets_to_that_member_in_the_same_call(
    org: Organization, plain_receiver: WebhookReceiver
) -> None:
    path = await subscribe(org, plain_receiver, ["ticket.assigned", "ticket.updated"])
    async with org.stack.browser() as leaving, org.stack.browser() as staying:
        agent = await joined_agent(org, leaving)
        colleague = await joined_agent(org, staying)
    opened = await create_ticket(org, assignee_id=agent["id"])
    resolved = await create_ticket(org, status="resolved", assignee_id=agent["id"])
    hooks_before = {row[0] for row in await org.stack.db.read(webhook_rows, org.id)}

    member = data(await org.browser.call("team.deactivate", {"userId": agent["id"], "reassignTo": colleague["id"]}))
    assert member["active"] is False

    assert (await ticket(org, opened["id"]))["assignee_id"] == colleague["id"]
    assert (await ticket(org, resolved["id"]))["assignee_id"] == agent["id"]
    [assigned, *_] = await ticket_events(org.browser, opened["id"])
    assert (assigned["event_type"], assigned["event_data"], assigned["actor_id"]) == (
        "assigned",
        {"assignee_id": colleague["id"], "assignee_name": colleague["name"]},
        org.admin_id,
    )
    written = [row for row in await org.stack.db.read(webhook_rows, org.id) if row[0] not in hooks_before]
    assert sorted((name, body["data"]["ticketId"]) for _, name, body in written) == [
        ("ticket.assigned", opened["id"]),
        ("ticket.updated", opened["id"]),
    ]
    deliveries = await delivered(plain_receiver, path, {event_id for event_id, _, _ in written})
    assert sorted(d["event"] for d in deliveries.values()) == ["ticket.assigned", "ticket.updated"]


async def test_deactivation_over_rest_reassigns_to_reassign_to_and_refuses_an_inactive_one(org: Organization) -> None:
    async with org.stack.browser() as leaving, org.stack.browser() as gone:
        agent = await joined_agent(org, leaving)
        former = await joined_agent(org, gone)
    data(await org.browser.call("team.deactivate", {"userId": former["id"]}))
    opened = await create_ticket(org, assignee_id=agent["id"])

    refused = await org.rest("POST", f"/users/{agent['id']}/deactivate", json={"reassign_to": former["id"]})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_request")
    assert (await members(org.browser))[agent["id"]]["active"] is True, "a refused deactivation changes nothing"
    assert (await ticket(org, opened["id"]))["assignee_id"] == agent["id"]

    done = await org.rest("POST", f"/users/{agent['id']}/deactivate", json={"reassign_to": org.admin_id})
    assert done.status_code == 200, done.text
    assert done.json()["active"] is False
    assert (await ticket(org, opened["id"]))["assignee_id"] == org.admin_id
    [assigned, *_] = await ticket_events(org.browser, opened["id"])
    assert (assigned["event_type"], assigned["event_data"], assigned["actor_id"]) == (
        "assigned",
        {"assignee_id": org.admin_id, "assignee_name": "Ada Admin"},
        None,
    )


async def test_reassign_to_must_name_another_active_member_even_when_no_ticket_moves(org: Organization) -> None:
    """Whether `reassign_to` is accepted does not hang on whether the member happens to hold open tickets."""
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
    for nobody in (agent["id"], str(uuid.uuid4())):  # themselves; an id that names nobody
        refused = await org.browser.call("team.deactivate", {"userId": agent["id"], "reassignTo": nobody})
        assert refused.status_code == 400, (nobody, refused.text)
        assert trpc_error(refused) == (400, "BAD_REQUEST")
    assert (await members(org.browser))[agent["id"]]["active"] is True
    assert [event["event_type"] for event in await user_events(org.browser, agent["id"])] == ["created"]


async def test_a_deactivated_member_cannot_be_assigned(org: Organization) -> None:
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
    data(await org.browser.call("team.deactivate", {"userId": agent["id"]}))
    opened = await create_ticket(org)

    patched = await org.rest("PATCH", f"/tickets/{opened['id']}", json={"assignee_id": agent["id"]})
    assert (patched.status_code, patched.json()["error"]["code"]) == (404, "not_found")
    created = await org.rest(
        "POST", "/tickets", json={"subject": "Hi", "customer_email": new_email(), "assignee_id": agent["id"]}
    )
    assert (created.status_code, created.json()["error"]["code"]) == (404, "not_found")
    by_procedure = await org.browser.call("tickets.update", {"id": opened["id"], "assigneeId": agent["id"]})
    assert trpc_error(by_procedure) == (404, "NOT_FOUND")
    assert (await ticket(org, opened["id"]))["assignee_id"] is None
    assert [event["event_type"] for event in await ticket_events(org.browser, opened["id"])] == ["created"]

    data(await org.browser.call("team.reactivate", {"userId": agent["id"]}))
    assigned = await org.rest("PATCH", f"/tickets/{opened['id']}", json={"assignee_id": agent["id"]})
    assert (assigned.status_code, assigned.json()["assignee_id"]) == (200, agent["id"])


# REST /api/v1/users


async def test_rest_users_lists_the_members_with_a_users_read_key_and_a_key_without_it_is_403(
    org: Organization,
) -> None:
    async with org.stack.browser() as browser:
        agent = await joined_agent(org, browser)
    reader = await org.browser.api_key("users:read")
    listed = await org.stack.rest(reader, "GET", "/users")
    assert listed.status_code == 200, listed.text
    assert [(m["id"], m["role"]) for m in listed.json()["data"]] == [(org.admin_id, "admin"), (agent["id"], "agent")]
    assert all(set(member) == MEMBER_FIELDS for member in listed.json()["data"])
    one = await org.stack.rest(reader, "GET", f"/users/{agent['id']}")
    assert (one.status_code, one.json()["email"]) == (200, agent["email"])
    unknown = await org.stack.rest(reader, "GET", f"/users/{uuid.uuid4()}")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    read_only = await org.stack.rest(reader, "PATCH", f"/users/{agent['id']}", json={"role": "admin"})
    assert (read_only.status_code, read_only.json()["error"]["code"]) == (403, "forbidden")

    other = await org.browser.api_key("tickets:read")
    for method, path in (("GET", "/users"), ("GET", f"/users/{agent['id']}"), ("GET", "/invitations")):
        refused = await org.stack.rest(other, method, path)
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden"), path
