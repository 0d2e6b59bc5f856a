"""The organization's settings page (docs/helpdesk.md, "The agent app"): an admin renames the organization
(`team.rename_organization`, validated as signup's `organizationName`: one line of 1 to 255 characters); its address
stays; a name that does not fit is refused beside the form and changes nothing; an agent may not."""

from __future__ import annotations

import html
import re

import httpx

from storage.helpdesk import workspaces
from tests.helpdesk_stack import Browser, HelpdeskStack
from tests.helpers import joined_agent, signed_up


async def rename(browser: Browser, name: str) -> httpx.Response:
    shown = await browser.client.get("/settings/organization")
    token = re.search(r'name="_csrf_token" value="([^"]+)"', shown.text)
    assert token, shown.text
    return await browser.client.post("/settings/organization", data={"name": name, "_csrf_token": token.group(1)})


async def test_an_admin_renames_the_organization_and_its_address_stays(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org:
        before = await helpdesk_stack.db.read(workspaces.organization, org.id)
        assert before is not None
        answer = await rename(org.browser, "  Tea & Co Support  ")
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/settings/organization?renamed=1"
        shown = await org.browser.client.get(answer.headers["location"])
        assert "The organization is now called Tea &amp; Co Support." in shown.text
        after = await helpdesk_stack.db.read(workspaces.organization, org.id)
        assert after is not None
        assert (after.name, after.slug, after.plan) == ("Tea & Co Support", before.slug, before.plan)


async def test_a_name_that_does_not_fit_is_refused_beside_the_form_and_changes_nothing(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with signed_up(helpdesk_stack) as org:
        before = await helpdesk_stack.db.read(workspaces.organization, org.id)
        assert before is not None
        for wrong, said in (
            ("", "The `$.name`: expected `str` of length >= 1"),
            ("   ", "The organization's name: give at least one letter or digit"),
            ("x" * 256, "The `$.name`: expected `str` of length <= 255"),
            ("Two\nlines", "The `$.name`: expected `str` matching regex"),
        ):
            answer = await rename(org.browser, wrong)
            assert answer.status_code == 400, answer.text
            found = re.search(r'<p class="error" role="alert" id="form-error">([^<]*)</p>', answer.text)
            assert found, answer.text
            assert html.unescape(found.group(1)).startswith(said)
            assert 'aria-invalid="true"' in answer.text
        after = await helpdesk_stack.db.read(workspaces.organization, org.id)
        assert after == before


async def test_an_agent_may_not_rename_the_organization(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org, helpdesk_stack.browser() as agent:
        await joined_agent(org, agent)
        token = re.search(r'name="_csrf_token" value="([^"]+)"', (await agent.client.get("/")).text)
        assert token
        answer = await agent.client.post(
            "/settings/organization", data={"name": "Taken over", "_csrf_token": token.group(1)}
        )
        assert answer.status_code == 403
        assert "Only an admin of the organization may manage the team" in answer.text
        after = await helpdesk_stack.db.read(workspaces.organization, org.id)
        assert after is not None
        assert after.name != "Taken over"
