"""Media the inbound providers hold (an MMS's media, a messaging app's media, a voicemail's recording, a chat's files),
fetched with the channel's credentials while the event is parsed (out of any transaction) and kept in the blob store,
so that the attachments endpoints serve them as they serve a mail's parts (docs/helpdesk.md, "Attachments").

Each handler says, per medium, where it is and how it is fetched (`Medium`); `kept` fetches them all, one after the
other, and answers the attachments: the provider's reference with the stored file beside it (`blob`, `name`,
`content_type`, `size`), or with why it was not stored (`refused`). What a later try may mend (a connection that
fails, no answer within the timeout, a 5xx, 408 or 429) raises MediaUnavailable, an OSError: the batch is handed back
and redelivered (processors/helpdesk/inbound/service.py), and the event stays pending. A fetcher counts those tries
per event; at the MEDIA_TRIES-th the reference is kept with the reason instead, so a provider that stays down delays
an event a few redeliveries and never holds it back for good. What no try mends (any other 4xx, a channel without the
credentials, a file over MAX_MEDIA_BYTES, an address the SSRF guard refuses) keeps the reference with the reason at
once.

Fetches go through the guarded client (net/guard.py: only public addresses are dialled, unless
SIGNALYARD_WEBHOOK_ALLOW_PRIVATE_TARGETS is set), follow redirects (the SMS provider answers media URLs with one, to
its CDN; httpx drops the credentials on a redirect to another host), and read the body in chunks, stopping past
MAX_MEDIA_BYTES: no body is read whole into memory before its size is known."""

from __future__ import annotations

import asyncio
import mimetypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import msgspec
import structlog
from cryptography.fernet import InvalidToken

from net.guard import Resolve, TargetRefused, guarded_client, system_resolve
from processors.helpdesk.inbound.email import MAX_ATTACHMENT_BYTES
from processors.helpdesk.inbound.service import Context, put_blob
from storage.common.secrets import Cipher
from storage.helpdesk import channels

log = structlog.get_logger("signalyard.processors.helpdesk")

MAX_MEDIA_BYTES = MAX_ATTACHMENT_BYTES
"""A fetched medium is kept up to the size an inbound mail's attachment may be (20 MiB); a larger one keeps its
reference, refused."""
TIMEOUT_S = 10.0
"""Each step of a fetch (connecting, each read of the body) waits at most this long."""
DEADLINE_S = 60.0
"""A whole fetch (a media id's lookup, redirects, the body) takes at most this long: past it, a transient failure."""
MEDIA_TRIES = 3
"""How many times an event's media are tried (the first handling and its redeliveries) before the ones a provider
still does not give are kept as references, with the reason."""
MAX_LOOKUP_BYTES = 64 * 1024
"""The most a media id's lookup (the Graph API's JSON) may answer."""
REMEMBERED_EVENTS = 10_000
"""The most events whose failed tries a fetcher remembers (the oldest are forgotten first)."""
TOO_LARGE = f"over the {MAX_MEDIA_BYTES // 2**20} MiB an inbound attachment may be"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class Medium:
    """One medium a provider holds, and how it is fetched."""

    reference: dict[str, Any]
    """What the provider said of it (its URL or media id, its type...): kept on the attachment, stored or not."""
    name: str
    """The file's name (the provider's, or one made of the medium's kind)."""
    url: str | None = None
    media_id: str | None = None
    """A business messaging medium: looked up at the Graph API (`GET {graph_api_url}/{media_id}`) for its URL."""
    basic: tuple[str, str] | None = None
    """The names of the channel secrets sent as HTTP basic auth (user, password)."""
    bearer: str | None = None
    """The name of the channel secret sent as `Authorization: Bearer`."""
    sign_in_page: bool = False
    """The provider answers a request it does not authorize with its sign-in page, an HTML page (the team chat does):
    such an answer, for a medium that is no HTML page, is a refusal, not the file."""

    @property
    def secrets(self) -> tuple[str, ...]:
        return (*(self.basic or ()), *((self.bearer,) if self.bearer else ()))


@dataclass(frozen=True, slots=True)
class Fetched:
    data: bytes
    content_type: str | None


class Refused(Exception):
    """A fetch no later try mends (the message says why)."""


class Unreachable(Exception):
    """A fetch a later try may mend (the message says why)."""


class MediaUnavailable(OSError):
    """An event's media could not be fetched this time: its batch is redelivered (service.TRANSIENT)."""


class GraphMedium(msgspec.Struct):
    """The Graph API's answer for a media id (its other fields, `sha256`, `id`, `messaging_product`, are not read)."""

    url: str
    mime_type: str | None = None
    file_size: int | None = None


_GRAPH_MEDIUM = msgspec.json.Decoder(GraphMedium)


class MediaFetcher:
    """Fetches media with a channel's credentials (one per processors process: it keeps connections open, and counts
    the failed tries of the events it handles)."""

    def __init__(
        self,
        cipher: Cipher,
        *,
        graph_api_url: str,
        allow_private_targets: bool = False,
        max_bytes: int = MAX_MEDIA_BYTES,
        timeout_s: float = TIMEOUT_S,
        deadline_s: float = DEADLINE_S,
        tries: int = MEDIA_TRIES,
        resolve: Resolve = system_resolve,
    ) -> None:
        self.cipher = cipher
        self.graph_api_url = graph_api_url.rstrip("/")
        self.max_bytes = max_bytes
        self.deadline_s = deadline_s
        self.tries = tries
        self.client = guarded_client(
            allow_private_targets=allow_private_targets, timeout_s=timeout_s, max_connections=16, resolve=resolve
        )
        self._failed: dict[str, int] = {}

    async def close(self) -> None:
        await self.client.aclose()

    def failed(self, event_id: str) -> int:
        """One more failed try of the event's media: how many there were."""
        tries = self._failed.pop(event_id, 0) + 1
        self._failed[event_id] = tries
        while len(self._failed) > REMEMBERED_EVENTS:
            self._failed.pop(next(iter(self._failed)))
        return tries

    def forget(self, event_id: str) -> None:
        self._failed.pop(event_id, None)

    async def fetch(self, medium: Medium, secrets: Mapping[str, str]) -> Fetched:
        """The medium's bytes; Refused or Unreachable when it cannot be had."""
        missing = [name for name in medium.secrets if not secrets.get(name)]
        if missing:
            raise Refused(f"the channel has no {' or '.join(missing)} to fetch it with")
        auth = httpx.BasicAuth(secrets[medium.basic[0]], secrets[medium.basic[1]]) if medium.basic else None
        headers = {"Authorization": f"Bearer {secrets[medium.bearer]}"} if medium.bearer else {}
        try:
            async with asyncio.timeout(self.deadline_s):
                if medium.media_id:
                    return await self._by_media_id(medium.media_id, headers)
                if not medium.url:
                    raise Refused("the provider named no media id or URL")
                fetched = await self._get(medium.url, headers, auth, self.max_bytes)
        except TimeoutError:
            raise Unreachable(f"no answer within {self.deadline_s:g} s") from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.TooManyRedirects) as error:
            raise Refused(f"{type(error).__name__}: {error}") from None
        except httpx.TransportError as error:
            if _refused_target(error):
                raise Refused(str(error)) from None
            raise Unreachable(f"{type(error).__name__}: {error or 'no answer'}") from None
        expected = str(medium.reference.get("content_type") or "")
        if medium.sign_in_page and _html(fetched.content_type) and not _html(expected):
            raise Refused(f"{urlsplit(medium.url).hostname} answered its sign-in page: it did not take the credentials")
        return fetched

    async def _by_media_id(self, media_id: str, headers: dict[str, str]) -> Fetched:
        lookup = await self._get(f"{self.graph_api_url}/{quote(media_id, safe='')}", headers, None, MAX_LOOKUP_BYTES)
        try:
            found = _GRAPH_MEDIUM.decode(lookup.data)
        except msgspec.DecodeError as error:
            raise Refused(f"the media id's lookup answered no media URL: {error}") from None
        if found.file_size is not None and found.file_size > self.max_bytes:
            raise Refused(f"{TOO_LARGE} ({found.file_size} bytes)")
        fetched = await self._get(found.url, headers, None, self.max_bytes)
        return Fetched(fetched.data, found.mime_type or fetched.content_type)

    async def _get(self, url: str, headers: dict[str, str], auth: httpx.Auth | None, limit: int) -> Fetched:
        host = urlsplit(url).hostname or url
        async with self.client.stream("GET", url, headers=headers, auth=auth, follow_redirects=True) as answer:
            status = answer.status_code
            if status in (408, 429) or status >= 500:
                raise Unreachable(f"{host} answered {status}")
            if status != 200:
                raise Refused(f"{host} answered {status}")
            declared = answer.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise Refused(f"{TOO_LARGE} ({declared} bytes)")
            chunks, size = [], 0
            async for chunk in answer.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise Refused(f"{TOO_LARGE} (more than {limit} bytes)")
                chunks.append(chunk)
            return Fetched(b"".join(chunks), answer.headers.get("content-type"))


def _html(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "text/html"


def _refused_target(error: BaseException) -> bool:
    """The SSRF guard refused the address (httpx wraps the guard's error)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TargetRefused):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def file_name(given: str | None, url: str | None, content_type: str | None, made: str) -> str:
    """A medium's file name: the provider's, else the last part of its URL's path when it has an extension, else
    `made` with the extension of its content type."""
    if given and given.strip():
        return given.strip()
    last = urlsplit(url).path.rsplit("/", 1)[-1] if url else ""
    if "." in last.strip("."):
        return last
    extension = mimetypes.guess_extension((content_type or "").split(";")[0].strip()) or ""
    return made + extension


async def kept(context: Context, event: Any, media: Sequence[Medium]) -> list[dict[str, Any]]:
    """The event's media as attachments, each fetched and stored, or its reference with why it was not; raises
    MediaUnavailable while a try may still mend a transient failure. A context without a fetcher keeps the references
    as they came."""
    fetcher = context.media
    if fetcher is None or not media:
        return [medium.reference for medium in media]
    secrets: Mapping[str, str] | None = {}
    unopened = None
    if any(medium.secrets for medium in media):
        try:
            secrets = await context.db.read(channels.secrets_of, fetcher.cipher, event.channel_id)
        except InvalidToken:
            secrets, unopened = None, "the channel's secrets cannot be opened (sealed with a key no longer configured)"
    attachments, tries = [], 0
    for index, medium in enumerate(media):
        if secrets is None and medium.secrets:
            attachments.append(medium.reference | {"refused": unopened or "the channel is deleted: no credentials"})
            continue
        try:
            fetched = await fetcher.fetch(medium, secrets or {})
        except Refused as error:
            attachments.append(medium.reference | {"refused": str(error)})
            continue
        except Unreachable as error:
            tries = tries or fetcher.failed(event.id)
            log.warning("inbound_media_unavailable", event_id=event.id, tries=tries, reason=str(error))
            if tries < fetcher.tries:
                raise MediaUnavailable(f"medium {index} of event {event.id}: {error}") from None
            attachments.append(medium.reference | {"refused": f"{error} (tried {tries} time{'s' * (tries != 1)})"})
            continue
        content_type = medium.reference.get("content_type") or fetched.content_type or "application/octet-stream"
        safe = _UNSAFE.sub("_", medium.name)[:100] or "media"
        key = f"helpdesk/{event.organization_id}/inbound/{event.id}/{index}-{safe}"
        await put_blob(context, key, fetched.data, content_type)
        stored = {"blob": key, "name": medium.name, "content_type": content_type, "size": len(fetched.data)}
        attachments.append(medium.reference | stored)
    fetcher.forget(event.id)
    return attachments
