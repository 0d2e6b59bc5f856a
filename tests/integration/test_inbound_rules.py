"""The inbound processors' rules on a database alone, with no broker, gateway or running stack: an event stored as the
gateway stores it is handed to `InboundProcessor.handle_batch` as its message would be, and what it became is read
back. SMS threading around a merged and a deleted ticket shows the way; any provider's rule is tested alike."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.handlers import HANDLERS
from processors.helpdesk.inbound.service import Context, InboundProcessor
from storage.common.blobs import DirectoryBlobs
from storage.common.db import Database
from storage.helpdesk import customers, inbound, tickets
from tests.integration.test_helpdesk_events import organization_of_its_own
from topics.helpdesk import InboundReceived
from topics.helpdesk.inbound import Provider


async def _nobody(_organization_id: str, _event_id: str) -> None:
    return None


async def processed(
    db: Database,
    blobs: Path,
    organization: str,
    provider: Provider,
    body: bytes,
    content_type: str,
    details: dict[str, Any],
    *,
    key: str = "",
    channel_id: str | None = None,
) -> Any:
    """An event of `provider` (to `channel_id`, default: a made-up one), stored as the gateway stores it and
    processed: its row, what it became."""
    received = inbound.Received(
        id=str(uuid.uuid4()),
        organization_id=organization,
        channel_id=channel_id or str(uuid.uuid4()),
        provider=provider,
        dedup_key=uuid.uuid4().hex,
        content_type=content_type,
        body=body,
        partition_key=key or uuid.uuid4().hex,
        created_at=datetime.now(UTC),
        details=details,
    )
    await db.write(inbound.store, [received])
    processor = InboundProcessor(Context(db, DirectoryBlobs(blobs)), HANDLERS, _nobody)
    await processor.handle_batch([InboundReceived.of(received)])
    row = (await db.read(inbound.load, [received.id]))[received.id]
    assert row.state == "processed", row.outcome
    return row


async def sms(db: Database, blobs: Path, organization: str, sender: str, text: str) -> str:
    """An SMS from `sender`, stored and processed: the ticket it went to."""
    sid = f"SM{uuid.uuid4().hex}"
    form = urlencode({"From": sender, "To": "+15550100000", "Body": text, "MessageSid": sid, "NumMedia": "0"})
    row = await processed(
        db, blobs, organization, "sms", form.encode(), "application/x-www-form-urlencoded", {}, key=f"sms:{sender}"
    )
    return str(row.ticket_id)


def _ticket(connection: Connection, organization: str, subject: str) -> str:
    made = tickets.create(
        connection,
        organization,
        subject=subject,
        customer_email=f"{uuid.uuid4().hex[:8]}@example.com",
        actor_id=None,
        now=datetime.now(UTC),
        recorded=[],
    )
    return made.id


async def test_after_a_merge_a_number_s_next_sms_goes_to_the_ticket_merged_into(db: Database, tmp_path: Path) -> None:
    organization = await organization_of_its_own(db)
    number = f"+1555{uuid.uuid4().int % 10**7:07d}"
    first = await sms(db, tmp_path, organization, number, "My parcel is late")
    target = await db.write(_ticket, organization, "Parcels, all of them")

    def merge(connection: Connection) -> None:
        merged = tickets.merge(
            connection, organization, first, target, actor_id=None, now=datetime.now(UTC), recorded=[]
        )
        assert merged is not None

    await db.write(merge)
    assert await sms(db, tmp_path, organization, number, "Any news?") == target


async def test_after_a_deletion_a_number_s_next_sms_opens_a_new_ticket(db: Database, tmp_path: Path) -> None:
    organization = await organization_of_its_own(db)
    number = f"+1555{uuid.uuid4().int % 10**7:07d}"
    first = await sms(db, tmp_path, organization, number, "Wrong number, sorry")
    assert await db.write(tickets.delete, organization, first, actor_id=None, now=datetime.now(UTC))
    again = await sms(db, tmp_path, organization, number, "Hello again")
    assert again != first
    assert await db.read(tickets.get, organization, again) is not None


async def test_after_two_customers_are_merged_mail_from_either_address_finds_the_one_left(
    db: Database, tmp_path: Path
) -> None:
    organization = await organization_of_its_own(db)
    home, work = f"ada-{uuid.uuid4().hex[:8]}@home.example", f"ada-{uuid.uuid4().hex[:8]}@work.example"

    def two_and_merged(connection: Connection) -> str:
        now = datetime.now(UTC)
        made = [
            customers.create(connection, organization, email=email, name="Ada", phone=None, now=now, recorded=[])
            for email in (home, work)
        ]
        merged = customers.merge(connection, organization, made[1].id, made[0].id, now=now, recorded=[])
        assert merged is not None
        assert merged.email == home
        return merged.id

    kept = await db.write(two_and_merged)
    for sender in (work, work.upper(), home):
        raw = (
            f"From: Ada <{sender}>\r\nTo: help@acme.example\r\nSubject: Still waiting\r\n"
            f"Message-ID: <{uuid.uuid4().hex}@example.com>\r\n\r\nAny news?\r\n"
        ).encode()
        row = await processed(
            db, tmp_path, organization, "email_d", raw, "message/rfc822", {"envelope_to": "help@acme.example"}
        )
        ticket = await db.read(tickets.get, organization, row.ticket_id)
        assert ticket is not None
        assert ticket.customer_id == kept
    listed, _ = await db.read(customers.listing, organization, email=None, limit=10, cursor=None)
    assert [customer.id for customer in listed] == [kept]


async def test_an_attachment_over_20_mib_is_listed_refused_and_its_mail_is_a_ticket(
    db: Database, tmp_path: Path
) -> None:
    organization = await organization_of_its_own(db)
    big = base64.encodebytes(b"x" * (20 * 1024 * 1024 + 1)).replace(b"\n", b"\r\n")
    raw = (
        b"From: Ada <ada@example.com>\r\nTo: help@acme.example\r\nSubject: The whole log\r\n"
        b"Message-ID: <" + uuid.uuid4().hex.encode() + b"@example.com>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=part\r\n\r\n--part\r\nContent-Type: text/plain\r\n\r\n"
        b"Attached, and a small one.\r\n--part\r\nContent-Type: application/octet-stream; name=huge.log\r\n"
        b"Content-Disposition: attachment; filename=huge.log\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + big
        + b"--part\r\nContent-Type: text/plain; name=small.txt\r\nContent-Disposition: attachment; filename=small.txt"
        b"\r\n\r\nsmall\r\n--part--\r\n"
    )
    envelope = {"envelope_to": "help@acme.example"}
    row = await processed(db, tmp_path, organization, "email_d", raw, "message/rfc822", envelope)
    [conversation] = (await db.read(tickets.conversations, row.ticket_id, limit=10, cursor=None))[0]
    huge, small = conversation.attachments
    assert (huge["name"], huge["size"], "blob" in huge) == ("huge.log", 20 * 1024 * 1024 + 1, False)
    assert huge["refused"] == "over the 20 MiB an inbound attachment may be"
    assert (small["name"], small["size"]) == ("small.txt", 5)
    assert await DirectoryBlobs(tmp_path).get(small["blob"]) == b"small"
    assert [path.name for path in tmp_path.rglob("*") if path.is_file()] == [Path(small["blob"]).name]
