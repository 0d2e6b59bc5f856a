"""Search (docs/helpdesk.md, "Search") as a member and a key use it: `GET /api/v1/search` and `search.query` find a
ticket by a word of its subject, of a reply (a conversation hit naming its ticket) and a customer by their address,
by prefix, ranked; filters combine; a deleted ticket and another organization's rows are never found; a key needs
`search:read`."""

from __future__ import annotations

import uuid
from typing import Any

from tests.helpdesk_stack import HelpdeskStack, data
from tests.helpers import Organization, signed_up


async def _ticket(org: Organization, subject: str, **fields: Any) -> str:
    made = await org.rest("POST", "/tickets", json={"subject": subject, "customer_email": "ada@example.com", **fields})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def _search(org: Organization, q: str, **params: Any) -> dict[str, Any]:
    found = await org.rest("GET", "/search", params={"q": q, **params})
    assert found.status_code == 200, found.text
    return dict(found.json())


async def test_a_reply_s_word_finds_its_ticket_by_prefix_over_rest_and_procedures(
    helpdesk_stack: HelpdeskStack,
) -> None:
    word = f"zeppelin{uuid.uuid4().hex[:6]}"
    async with signed_up(helpdesk_stack) as org:
        ticket_id = await _ticket(org, "Delivery question")
        reply = {"body": f"Your parcel travels by {word} this week"}
        assert (await org.rest("POST", f"/tickets/{ticket_id}/conversations", json=reply)).status_code == 201

        found = await _search(org, word[:5])  # a prefix of the word
        [hit] = [hit for hit in found["data"] if hit["kind"] == "conversation"]
        assert hit["ticket_id"] == ticket_id
        start, end = hit["highlights"][0]
        assert hit["snippet"][start:end].lower() == word
        by_procedure = data(await org.browser.query("search.query", {"q": word, "kinds": ["conversation"]}))
        assert [h["ticket_id"] for h in by_procedure["items"]] == [ticket_id]
        assert by_procedure["hasMore"] is False


async def test_filters_combine_and_a_deleted_ticket_is_never_found(helpdesk_stack: HelpdeskStack) -> None:
    word = f"marmalade{uuid.uuid4().hex[:6]}"
    async with signed_up(helpdesk_stack) as org:
        urgent = await _ticket(org, f"{word} jar broken", priority="urgent")
        normal = await _ticket(org, f"{word} jar late")
        gone = await _ticket(org, f"{word} jar lost")
        assert (await org.rest("DELETE", f"/tickets/{gone}")).status_code == 200

        every = {hit["ticket_id"] for hit in (await _search(org, word, kind="ticket"))["data"]}
        assert every == {urgent, normal}
        filtered = (await _search(org, word, priority="urgent"))["data"]
        assert [hit["ticket_id"] for hit in filtered] == [urgent]


async def test_a_customer_is_found_by_the_start_of_their_address(helpdesk_stack: HelpdeskStack) -> None:
    name = f"quixote{uuid.uuid4().hex[:6]}"
    async with signed_up(helpdesk_stack) as org:
        made = await org.rest("POST", "/customers", json={"email": f"{name}@lamancha.example", "name": "Alonso"})
        found = (await _search(org, name[:6], kind="customer"))["data"]
        assert [hit["customer_id"] for hit in found] == [made.json()["id"]]


async def test_another_organization_s_rows_are_never_found(helpdesk_stack: HelpdeskStack) -> None:
    word = f"walrus{uuid.uuid4().hex[:6]}"
    async with signed_up(helpdesk_stack) as theirs, signed_up(helpdesk_stack) as mine:
        await _ticket(theirs, f"{word} tusks")
        assert (await _search(mine, word))["data"] == []
        assert len((await _search(theirs, word))["data"]) == 1


async def test_a_key_without_search_read_is_403_and_a_query_of_too_many_words_400(
    helpdesk_stack: HelpdeskStack,
) -> None:
    async with signed_up(helpdesk_stack, "tickets:read") as org:
        refused = await org.rest("GET", "/search", params={"q": "anything"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    async with signed_up(helpdesk_stack, "search:read") as org:
        long = await org.rest("GET", "/search", params={"q": " ".join(f"w{n}" for n in range(11))})
        assert (long.status_code, long.json()["error"]["code"]) == (400, "invalid_request")
        assert "at most 10 words" in long.json()["error"]["message"]
