"""Media the inbound providers hold (an MMS's media, WhatsApp media by their id, Messenger attachments, a voicemail's
recording, a chat's files) are fetched with the channel's credentials and kept, so that the attachments endpoints serve
them as they serve a mail's parts; one that cannot be had is listed as the provider's link with the reason. The
providers are a local peer speaking their wire formats (`tests/peers/media.py`: basic auth and a redirect to a CDN,
the Graph API's media-id lookup, bearer tokens, a chat's sign-in page, 404s, 5xx, bodies past the limit, a server
that never answers); the processors run in process on a real database (SQLite and PostgreSQL), as the consumer drives
them: a batch that raises is handed back, and the consumer hands it in again. One test goes through the running stack:
a signed MMS, then the REST conversation and its signed download URL."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from cryptography.fernet import Fernet, MultiFernet

from operations.helpdesk import attachments
from operations.helpdesk.attachments import ATTACHMENTS_PATH, Shown
from operations.helpdesk.desk import Helpdesk
from processors.helpdesk.inbound.handlers import HANDLERS
from processors.helpdesk.inbound.media import MAX_MEDIA_BYTES, MEDIA_TRIES, MediaFetcher, MediaUnavailable
from processors.helpdesk.inbound.service import Context, InboundProcessor
from storage.common.blobs import DirectoryBlobs
from storage.common.db import Database
from storage.helpdesk import channels, inbound, tickets
from tests.contract.helpdesk.inbound_desk import desk, unique_number
from tests.contract.helpdesk.test_inbound_sms import Line
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import until
from tests.integration.test_helpdesk_events import organization_of_its_own
from tests.peers.media import MediaPeer
from topics.helpdesk import InboundReceived
from topics.helpdesk.inbound import Provider
from wire.signed_urls import SignedUrls

ACCOUNT_SID, AUTH_TOKEN = "AC" + "7" * 32, "media-auth-token"
ACCESS_TOKEN, BOT_TOKEN = "EAAGmedia-access-token", "xoxb-media-bot-token"
PHOTO = b"\xff\xd8\xff\xe0 a photo of the broken parcel"
PUBLIC_URL = "http://helpdesk.test"


@pytest.fixture(scope="module")
def media() -> Iterator[MediaPeer]:
    with MediaPeer(
        account_sid=ACCOUNT_SID, auth_token=AUTH_TOKEN, access_token=ACCESS_TOKEN, bot_token=BOT_TOKEN
    ).serving() as peer:
        yield peer


async def _nobody(_organization_id: str, _event_id: str) -> None:
    return None


@dataclass
class Inbox:
    """An organization's inbound processors, as a processors process wires them, and what its members see."""

    db: Database
    organization: str
    cipher: MultiFernet
    processor: InboundProcessor
    desk: Helpdesk

    async def channel(self, kind: str, secrets: dict[str, str]) -> str:
        made = await self.db.write(
            channels.create,
            self.cipher,
            self.organization,
            kind=kind,
            name=f"{kind} channel",
            addresses=[],
            secrets=secrets,
            now=datetime.now(UTC),
        )
        return made.id

    async def receive(self, channel_id: str, provider: Provider, body: bytes, key: str, **details: Any) -> str:
        """A provider's event, stored as the gateway stores it: its id."""
        received = inbound.Received(
            id=str(uuid.uuid4()),
            organization_id=self.organization,
            channel_id=channel_id,
            provider=provider,
            dedup_key=uuid.uuid4().hex,
            content_type="application/x-www-form-urlencoded" if provider == "sms" else "application/json",
            body=body,
            partition_key=key,
            created_at=datetime.now(UTC),
            details=details,
        )
        await self.db.write(inbound.store, [received])
        return received.id

    async def process(self, event_id: str) -> Any:
        """The event handed to the processors as its message is (redelivered: handed again); its row."""
        await self.processor.handle_batch([InboundReceived.of(await self._row(event_id))])
        return await self._row(event_id)

    async def _row(self, event_id: str) -> Any:
        return (await self.db.read(inbound.load, [event_id]))[event_id]

    async def listed(self, row: Any) -> tuple[list[Shown], list[dict[str, Any]]]:
        """The attachments of the message the event became, as a member sees them, and as they are kept."""
        assert row.state == "processed", row.outcome
        assert row.ticket_id is not None, row.outcome
        found, _ = await self.db.read(tickets.conversations, row.ticket_id, limit=10, cursor=None)
        conversation = next(c for c in found if c.id == row.conversation_id) if row.conversation_id else found[-1]
        return attachments.shown(self.desk, conversation), conversation.attachments

    async def download(self, shown: Shown) -> attachments.Download:
        """What the attachments endpoint serves at the file's signed URL."""
        assert shown.kind == "file", shown
        assert shown.url is not None
        url = urlsplit(shown.url)
        conversation_id, index = url.path.removeprefix(ATTACHMENTS_PATH + "/").split("/")
        query = {name: values[0] for name, values in parse_qs(url.query).items()}
        return await attachments.download(
            self.desk, conversation_id, int(index), expires=query["expires"], signature=query["signature"]
        )


def _inbox(db: Database, tmp_path: Path, organization: str, fetcher: MediaFetcher) -> Inbox:
    blobs = DirectoryBlobs(tmp_path / "blobs")
    processor = InboundProcessor(Context(db, blobs, media=fetcher), HANDLERS, _nobody)
    files = SignedUrls(PUBLIC_URL, ATTACHMENTS_PATH, b"a url signing key", 600)
    desk = Helpdesk(db, _nobody, fetcher.cipher, blobs=blobs, files=files)  # type: ignore[arg-type]
    return Inbox(db, organization, fetcher.cipher, processor, desk)  # type: ignore[arg-type]


@pytest.fixture
async def inbox(db: Database, tmp_path: Path, media: MediaPeer) -> AsyncIterator[Inbox]:
    cipher = MultiFernet([Fernet(Fernet.generate_key())])
    fetcher = MediaFetcher(cipher, graph_api_url=media.graph_api_url, allow_private_targets=True)
    yield _inbox(db, tmp_path, await organization_of_its_own(db), fetcher)
    await fetcher.close()


def mms(*urls_and_types: tuple[str, str], sender: str | None = None) -> bytes:
    form = {"From": sender or unique_number(), "To": "+15550100001", "Body": "", "MessageSid": "SM" + uuid.uuid4().hex}
    form["NumMedia"] = str(len(urls_and_types))
    for index, (url, content_type) in enumerate(urls_and_types):
        form |= {f"MediaUrl{index}": url, f"MediaContentType{index}": content_type}
    return urlencode(form).encode()


def whatsapp(kind: str, medium: dict[str, Any]) -> bytes:
    sender = str(uuid.uuid4().int)[:11]
    message = {"from": sender, "id": f"wamid.{uuid.uuid4().hex}", "timestamp": "1700000000", "type": kind, kind: medium}
    contact = {"profile": {"name": "Ada Lovelace"}, "wa_id": sender}
    metadata = {"display_phone_number": "15550100003", "phone_number_id": "106540352242922"}
    return json.dumps({"metadata": metadata, "contact": contact, "message": message}).encode()


def messenger(*attachment_urls: str) -> bytes:
    sender = str(uuid.uuid4().int)[:16]
    files = [{"type": "image", "payload": {"url": url}} for url in attachment_urls]
    event = {
        "sender": {"id": sender},
        "recipient": {"id": "1234567890"},
        "timestamp": 1700000000000,
        "message": {"mid": f"m_{uuid.uuid4().hex}", "attachments": files},
    }
    return json.dumps({"page_id": "1234567890", "time": 1700000000000, "event": event}).encode()


def chat_message(*files: dict[str, Any]) -> bytes:
    ts = f"{datetime.now(UTC).timestamp():.6f}"
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": "C0SUPPORT",
        "user": f"U{uuid.uuid4().hex[:8].upper()}",
        "text": "Here is the screenshot",
        "ts": ts,
        "files": list(files),
    }
    body = {"team_id": "T0MEDIA", "type": "event_callback", "event_id": f"Ev{uuid.uuid4().hex[:10]}", "event": event}
    return json.dumps(body).encode()


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def kept(item: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: item.get(name) for name in names}


# SMS ------------------------------------------------------------------------------------------------------------------


async def test_an_mms_photo_is_kept_and_downloads_from_its_attachment_url(inbox: Inbox, media: MediaPeer) -> None:
    line = await inbox.channel("sms", {"auth_token": AUTH_TOKEN, "account_sid": ACCOUNT_SID})
    url = media.sms_medium(PHOTO, "image/jpeg")
    row = await inbox.process(await inbox.receive(line, "sms", mms((url, "image/jpeg")), key="a"))
    [shown], [item] = await inbox.listed(row)
    assert (shown.kind, shown.name, shown.content_type, shown.size) == ("file", "mms-1.jpg", "image/jpeg", len(PHOTO))
    assert item["url"] == url  # the provider's reference, kept beside the file
    downloaded = await inbox.download(shown)
    assert (downloaded.data, downloaded.content_type, downloaded.name) == (PHOTO, "image/jpeg", "mms-1.jpg")
    assert media.asked(url) == [f"Basic {_basic(ACCOUNT_SID, AUTH_TOKEN)}"]
    assert media.asked(media.cdn_of(url)) == [None]  # the redirect went to another host: no credentials


async def test_an_mms_on_a_channel_without_the_account_sid_is_listed_as_its_link_with_the_reason(
    inbox: Inbox, media: MediaPeer
) -> None:
    line = await inbox.channel("sms", {"auth_token": AUTH_TOKEN})
    url = media.sms_medium(PHOTO, "image/jpeg")
    row = await inbox.process(await inbox.receive(line, "sms", mms((url, "image/jpeg")), key="b"))
    [shown], _ = await inbox.listed(row)
    assert (shown.kind, shown.url, shown.refused) == ("link", url, "the channel has no account_sid to fetch it with")
    assert media.asked(url) == []


async def test_an_mms_medium_the_provider_no_longer_has_is_its_link_with_the_404_at_once(
    inbox: Inbox, media: MediaPeer
) -> None:
    line = await inbox.channel("sms", {"auth_token": AUTH_TOKEN, "account_sid": ACCOUNT_SID})
    gone = f"{media.base_url}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/MM{uuid.uuid4().hex}/Media/ME0"
    kept_one = media.sms_medium(PHOTO, "image/jpeg")
    body = mms((gone, "image/png"), (kept_one, "image/jpeg"))
    row = await inbox.process(await inbox.receive(line, "sms", body, key="c"))
    [missing, photo], _ = await inbox.listed(row)
    assert (missing.kind, missing.url, missing.refused) == ("link", gone, "127.0.0.1 answered 404")
    assert (photo.kind, (await inbox.download(photo)).data) == ("file", PHOTO)
    assert len(media.asked(gone)) == 1  # a 4xx is not tried again


async def test_an_mms_whose_provider_fails_once_is_made_on_the_redelivery_with_its_photo(
    inbox: Inbox, media: MediaPeer
) -> None:
    line = await inbox.channel("sms", {"auth_token": AUTH_TOKEN, "account_sid": ACCOUNT_SID})
    url = media.sms_medium(PHOTO, "image/jpeg")
    media.fail(url, 500)
    event = await inbox.receive(line, "sms", mms((url, "image/jpeg")), key="d")
    with pytest.raises(MediaUnavailable):  # the batch is handed back to the consumer
        await inbox.process(event)
    pending = await inbox._row(event)
    assert (pending.state, pending.ticket_id) == ("pending", None)
    [shown], _ = await inbox.listed(await inbox.process(event))
    assert (shown.kind, (await inbox.download(shown)).data) == ("file", PHOTO)


async def test_an_mms_whose_provider_stays_down_is_made_after_the_last_try_with_its_link_and_the_reason(
    inbox: Inbox, media: MediaPeer
) -> None:
    line = await inbox.channel("sms", {"auth_token": AUTH_TOKEN, "account_sid": ACCOUNT_SID})
    url = media.sms_medium(PHOTO, "image/jpeg")
    media.fail(url, *[503] * MEDIA_TRIES)
    event = await inbox.receive(line, "sms", mms((url, "image/jpeg")), key="e")
    for _ in range(MEDIA_TRIES - 1):
        with pytest.raises(MediaUnavailable):
            await inbox.process(event)
    row = await inbox.process(event)
    assert row.outcome == "new ticket"
    [shown], _ = await inbox.listed(row)
    assert (shown.kind, shown.url) == ("link", url)
    assert shown.refused == f"127.0.0.1 answered 503 (tried {MEDIA_TRIES} times)"
    assert len(media.asked(url)) == MEDIA_TRIES


# Business and page messaging ------------------------------------------------------------------------------------------


async def test_a_whatsapp_document_is_looked_up_by_its_media_id_and_kept(inbox: Inbox, media: MediaPeer) -> None:
    channel = await inbox.channel("business_messaging", {"app_secret": "s", "access_token": ACCESS_TOKEN})
    pdf = b"%PDF-1.7 the invoice"
    media_id = media.graph_medium(pdf, "application/pdf")
    body = whatsapp("document", {"id": media_id, "mime_type": "application/pdf", "filename": "invoice.pdf"})
    row = await inbox.process(await inbox.receive(channel, "business_messaging", body, key="f", kind="message"))
    [shown], [item] = await inbox.listed(row)
    assert (shown.kind, shown.name, shown.content_type, shown.size) == ("file", "invoice.pdf", "application/pdf", 20)
    assert kept(item, "media_id", "type", "filename") == {
        "media_id": media_id,
        "type": "document",
        "filename": "invoice.pdf",
    }
    assert (await inbox.download(shown)).data == pdf
    assert media.asked(f"/v21.0/{media_id}") == [f"Bearer {ACCESS_TOKEN}"]
    assert media.asked(f"/whatsapp/media?mid={media_id}") == [f"Bearer {ACCESS_TOKEN}"]


async def test_a_whatsapp_image_the_graph_api_refuses_keeps_its_media_id_and_the_reason(
    inbox: Inbox, media: MediaPeer
) -> None:
    channel = await inbox.channel("business_messaging", {"app_secret": "s", "access_token": "a revoked token"})
    media_id = media.graph_medium(PHOTO, "image/jpeg")
    body = whatsapp("image", {"id": media_id, "mime_type": "image/jpeg"})
    row = await inbox.process(await inbox.receive(channel, "business_messaging", body, key="g", kind="message"))
    [shown], [item] = await inbox.listed(row)
    assert (shown.kind, shown.refused) == ("refused", "127.0.0.1 answered 401")
    assert item["media_id"] == media_id


async def test_a_whatsapp_video_over_the_limit_is_refused_before_it_is_downloaded(
    inbox: Inbox, media: MediaPeer
) -> None:
    channel = await inbox.channel("business_messaging", {"app_secret": "s", "access_token": ACCESS_TOKEN})
    media_id = media.graph_medium(b"a video", "video/mp4", declared_size=MAX_MEDIA_BYTES + 1)
    body = whatsapp("video", {"id": media_id, "mime_type": "video/mp4"})
    row = await inbox.process(await inbox.receive(channel, "business_messaging", body, key="h", kind="message"))
    [shown], _ = await inbox.listed(row)
    assert (shown.kind, shown.refused) == (
        "refused",
        f"over the 20 MiB an inbound attachment may be ({MAX_MEDIA_BYTES + 1} bytes)",
    )
    assert media.asked(f"/whatsapp/media?mid={media_id}") == []


async def test_a_messenger_photo_is_fetched_from_its_cdn_without_credentials(inbox: Inbox, media: MediaPeer) -> None:
    channel = await inbox.channel("page_messaging", {"app_secret": "s", "page_access_token": "page-token"})
    url = media.public(f"/cdn/page/{uuid.uuid4().hex}/photo.jpg", PHOTO, "image/jpeg")
    row = await inbox.process(await inbox.receive(channel, "page_messaging", messenger(url), key="i", kind="message"))
    [shown], [item] = await inbox.listed(row)
    assert (shown.kind, shown.name, shown.content_type) == ("file", "photo.jpg", "image/jpeg")
    assert (item["url"], item["type"]) == (url, "image")
    assert (await inbox.download(shown)).data == PHOTO
    assert media.asked(url) == [None]


async def test_an_attachment_sent_with_no_length_is_refused_once_past_the_limit(inbox: Inbox, media: MediaPeer) -> None:
    channel = await inbox.channel("page_messaging", {"app_secret": "s"})
    large = b"\0" * (MAX_MEDIA_BYTES + 1)
    url = media.public(f"/cdn/page/{uuid.uuid4().hex}/video.mp4", large, "video/mp4", chunked=True)
    row = await inbox.process(await inbox.receive(channel, "page_messaging", messenger(url), key="j", kind="message"))
    [shown], [item] = await inbox.listed(row)
    assert (shown.kind, shown.url) == ("link", url)
    assert shown.refused == f"over the 20 MiB an inbound attachment may be (more than {MAX_MEDIA_BYTES} bytes)"
    assert "blob" not in item


# Voice and team chat --------------------------------------------------------------------------------------------------


async def test_a_voicemail_ticket_carries_its_recording_as_a_file(inbox: Inbox, media: MediaPeer) -> None:
    channel = await inbox.channel("voice", {"webhook_secret": "w"})
    audio = b"ID3 a voicemail"
    call = str(uuid.uuid4().int)[:10]
    link = media.public(f"/voicemail/{call}.mp3", audio, "audio/mpeg")
    caller = {"call_id": call, "direction": "inbound", "contact": {"phone_number": "+15550001234", "name": "Grace"}}
    parts = {"voicemail_uploaded": {"voicemail_link": link}, "transcription": {"transcription_text": "Call me back"}}
    for state, part in parts.items():
        body = json.dumps(caller | {"state": state} | part).encode()
        row = await inbox.process(await inbox.receive(channel, "voice", body, key=f"call:{call}"))
    assert row.outcome == f"new ticket: voicemail of call {call}"
    [shown], [item] = await inbox.listed(row)
    assert (shown.kind, shown.name, shown.content_type, shown.size) == ("file", f"{call}.mp3", "audio/mpeg", 15)
    assert (item["url"], item["type"]) == (link, "voicemail")
    assert (await inbox.download(shown)).data == audio


async def test_a_chat_file_is_fetched_with_the_bot_token(inbox: Inbox, media: MediaPeer) -> None:
    channel = await inbox.channel("chat", {"signing_secret": "s", "bot_token": BOT_TOKEN})
    png = b"\x89PNG a screenshot"
    url = media.chat_file("screenshot.png", png, "image/png")
    file = {"url_private": url, "mimetype": "image/png", "name": "screenshot.png"}
    row = await inbox.process(await inbox.receive(channel, "chat", chat_message(file), key="k"))
    [shown], _ = await inbox.listed(row)
    assert (shown.kind, shown.name, shown.content_type) == ("file", "screenshot.png", "image/png")
    assert (await inbox.download(shown)).data == png
    assert media.asked(url) == [f"Bearer {BOT_TOKEN}"]


async def test_a_chat_file_behind_the_sign_in_page_is_listed_as_its_link_with_the_reason(
    inbox: Inbox, media: MediaPeer
) -> None:
    channel = await inbox.channel("chat", {"signing_secret": "s", "bot_token": "xoxb-an-old-token"})
    url = media.chat_file("screenshot.png", b"\x89PNG", "image/png")
    file = {"url_private": url, "mimetype": "image/png", "name": "screenshot.png"}
    row = await inbox.process(await inbox.receive(channel, "chat", chat_message(file), key="l"))
    [shown], _ = await inbox.listed(row)
    assert (shown.kind, shown.url) == ("link", url)
    assert shown.refused == "127.0.0.1 answered its sign-in page: it did not take the credentials"


async def test_a_media_server_that_never_answers_leaves_the_link_with_the_reason_after_the_last_try(
    db: Database, tmp_path: Path, media: MediaPeer
) -> None:
    cipher = MultiFernet([Fernet(Fernet.generate_key())])
    fetcher = MediaFetcher(
        cipher, graph_api_url=media.graph_api_url, allow_private_targets=True, deadline_s=0.2, tries=1
    )
    try:
        inbox = _inbox(db, tmp_path, await organization_of_its_own(db), fetcher)
        channel = await inbox.channel("page_messaging", {"app_secret": "s"})
        url = media.public(f"/cdn/page/{uuid.uuid4().hex}/photo.jpg", PHOTO, "image/jpeg", stall=True)
        body = messenger(url)
        row = await inbox.process(await inbox.receive(channel, "page_messaging", body, key="m", kind="message"))
    finally:
        await fetcher.close()
    [shown], _ = await inbox.listed(row)
    assert (shown.kind, shown.url, shown.refused) == ("link", url, "no answer within 0.2 s (tried 1 time)")


# Through the running stack --------------------------------------------------------------------------------------------


async def test_an_mms_photo_downloads_from_the_conversation_s_signed_url(
    helpdesk_stack: HelpdeskStack, media: MediaPeer
) -> None:
    line = Line(await desk(helpdesk_stack), unique_number(), AUTH_TOKEN)
    secrets = {"auth_token": AUTH_TOKEN, "account_sid": ACCOUNT_SID}
    await line.desk.open_channel("sms", [("sms_number", line.number)], secrets)
    url = media.sms_medium(PHOTO, "image/jpeg")
    message = line.message(unique_number(), "", NumMedia="1", MediaUrl0=url, MediaContentType0="image/jpeg")
    assert (await line.send(message)).status_code == 200
    [event] = await line.desk.processed(1)

    async def listed() -> list[dict[str, Any]]:
        answer = await helpdesk_stack.rest(line.desk.key, "GET", f"/tickets/{event['ticket_id']}/conversations")
        assert answer.status_code == 200, answer.text
        return list(answer.json()["data"])

    [conversation] = await until(listed, "the MMS's conversation")
    [attachment] = conversation["attachments"]
    assert (attachment["kind"], attachment["name"], attachment["size"]) == ("file", "mms-1.jpg", len(PHOTO))
    async with httpx.AsyncClient() as anyone:  # the signed URL is the credential
        fetched = await anyone.get(attachment["url"])
    assert (fetched.status_code, fetched.content) == (200, PHOTO)
    assert fetched.headers["content-type"].startswith("image/jpeg")
