"""Attachments (docs/helpdesk.md, "Attachments"): a mail's parts are listed on its conversation and downloaded by a
short-lived signed URL with no key (the URL is the credential); a forged or expired URL is 403; files are uploaded
over REST (one, or with the reply as multipart) and by a signed-in member (`POST /api/uploads`), at most 10 MiB each,
and a reply names them by id, once; another organization's upload is refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from tests.helpdesk_stack import HelpdeskStack, data
from tests.helpers import signed_up, until
from tests.peers.inbound_mail import Mailbox, parts_of, retitled

FIXTURES = Path(__file__).parents[2] / "fixtures" / "mail"
TEN_MIB = 10 * 1024 * 1024


async def _ticket(stack: HelpdeskStack, key: str) -> str:
    made = await stack.rest(key, "POST", "/tickets", json={"subject": "Files", "customer_email": "files@example.com"})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def test_a_mails_attachment_is_listed_and_downloaded_by_its_signed_url_without_a_key(
    helpdesk_stack: HelpdeskStack,
) -> None:
    box = await Mailbox.open(helpdesk_stack)
    raw = retitled((FIXTURES / "dialpad_voicemail.eml").read_bytes())
    assert (await box.postmark(raw)).status_code == 200
    [ticket] = await until(box.tickets, "the mail's ticket")
    [conversation] = await box.conversations(ticket["id"])
    [listed] = conversation["attachments"]
    [(name, content_type, audio)] = parts_of(raw).attachments
    assert (listed["kind"], listed["name"], listed["content_type"], listed["size"]) == (
        "file",
        name,
        content_type,
        len(audio),
    )
    async with httpx.AsyncClient() as anyone:  # no key, no cookie
        fetched = await anyone.get(listed["url"])
        assert fetched.status_code == 200, fetched.text
        assert fetched.content == audio
        assert fetched.headers["content-type"].startswith(content_type)
        assert fetched.headers["content-disposition"].startswith("attachment;")
        assert fetched.headers["x-content-type-options"] == "nosniff"
        forged = await anyone.get(  # the signature's first digit changed (to another digit than its own)
            re.sub(r"signature=([0-9a-f])", lambda d: "signature=" + "10"[d[1] == "1"], listed["url"], count=1)
        )
        expired = await anyone.get(re.sub(r"expires=[0-9]+", "expires=1000000000", listed["url"]))
    assert (forged.status_code, forged.json()["error"]["code"]) == (403, "forbidden")
    assert expired.status_code == 403  # the signature covers the expiry: changing it forges the URL


async def test_an_uploaded_file_is_attached_to_a_reply_once_and_downloads(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org:
        ticket_id = await _ticket(helpdesk_stack, org.key)
        uploaded = await org.rest(
            "POST", "/uploads", files={"file": ("invoice.pdf", b"%PDF-1.7 invoice", "application/pdf")}
        )
        assert uploaded.status_code == 201, uploaded.text
        upload = uploaded.json()
        assert (upload["name"], upload["content_type"], upload["size"]) == ("invoice.pdf", "application/pdf", 16)

        reply = {"body": "Here is your invoice", "attachment_ids": [upload["id"]]}
        made = await org.rest("POST", f"/tickets/{ticket_id}/conversations", json=reply)
        assert made.status_code == 201, made.text
        [attachment] = made.json()["attachments"]
        assert (attachment["kind"], attachment["name"], attachment["size"]) == ("file", "invoice.pdf", 16)
        async with httpx.AsyncClient() as anyone:
            assert (await anyone.get(attachment["url"])).content == b"%PDF-1.7 invoice"

        again = await org.rest("POST", f"/tickets/{ticket_id}/conversations", json=reply)
        assert (again.status_code, again.json()["error"]["code"]) == (409, "conflict")
        assert "attachment_ids" in again.json()["error"]["message"]


async def test_a_reply_sent_as_multipart_carries_its_files(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org:
        ticket_id = await _ticket(helpdesk_stack, org.key)
        files = [("file", ("a.txt", b"first", "text/plain")), ("file", ("b.txt", b"second", "text/plain"))]
        made = await org.rest(
            "POST", f"/tickets/{ticket_id}/conversations", data={"body": "Two files", "internal": "true"}, files=files
        )
        assert made.status_code == 201, made.text
        reply = made.json()
        assert (reply["body"], reply["internal"]) == ("Two files", True)
        assert [a["name"] for a in reply["attachments"]] == ["a.txt", "b.txt"]
        async with httpx.AsyncClient() as anyone:
            assert [(await anyone.get(a["url"])).content for a in reply["attachments"]] == [b"first", b"second"]


async def test_a_file_over_10_mib_is_refused_and_kept_nowhere(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org:
        big = await org.rest(
            "POST", "/uploads", files={"file": ("big.bin", b"x" * (TEN_MIB + 1), "application/octet-stream")}
        )
        assert (big.status_code, big.json()["error"]["code"]) == (413, "payload_too_large"), big.text
        ticket_id = await _ticket(helpdesk_stack, org.key)
        listed = await org.rest("GET", f"/tickets/{ticket_id}/conversations")
        assert listed.json()["data"] == []


async def test_another_organizations_upload_cannot_be_attached(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as theirs, signed_up(helpdesk_stack) as mine:
        upload = (await theirs.rest("POST", "/uploads", files={"file": ("x.txt", b"x", "text/plain")})).json()
        ticket_id = await _ticket(helpdesk_stack, mine.key)
        refused = await mine.rest(
            "POST", f"/tickets/{ticket_id}/conversations", json={"body": "stolen", "attachment_ids": [upload["id"]]}
        )
        assert (refused.status_code, refused.json()["error"]["code"]) == (404, "not_found")
        assert (await mine.rest("GET", f"/tickets/{ticket_id}/conversations")).json()["data"] == []


async def test_a_signed_in_member_uploads_and_names_the_file_in_a_procedure(helpdesk_stack: HelpdeskStack) -> None:
    async with signed_up(helpdesk_stack) as org:
        ticket_id = await _ticket(helpdesk_stack, org.key)
        browser = org.browser
        uploaded = await browser.client.post("/api/uploads", files={"file": ("photo.png", b"\x89PNG...", "image/png")})
        assert uploaded.status_code == 201, uploaded.text
        made: dict[str, Any] = data(
            await browser.call(
                "conversations.create",
                {"ticketId": ticket_id, "body": "Screenshot attached", "attachmentIds": [uploaded.json()["id"]]},
            )
        )
        [attachment] = made["attachments"]
        assert (attachment["name"], attachment["content_type"]) == ("photo.png", "image/png")
        assert made["author_id"] == org.admin_id

        foreign = await browser.client.post(
            "/api/uploads", files={"file": ("x.txt", b"x", "text/plain")}, headers={"Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
    async with httpx.AsyncClient(base_url=helpdesk_stack.base_url) as nobody:
        assert (await nobody.post("/api/uploads", files={"file": ("x.txt", b"x", "text/plain")})).status_code == 401
