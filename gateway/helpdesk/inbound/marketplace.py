"""`POST /api/marketplace/webhook`: a marketplace's order and return notifications, delivered through a notification
topic service in the shape of Amazon SNS's HTTP(S) deliveries (section 4.6, "Marketplace").

- **Routing: the allow-list.** The message's `TopicArn` must be an address (kind `topic_arn`) of a live marketplace
  channel: the address is both the allow-list entry and the route. Any other topic is 404, before anything is
  fetched.
- **Signature.** SNS's: `SignatureVersion` 1 (SHA1withRSA) or 2 (SHA256withRSA) over its canonical string (the
  fields of the message's type, each as "Name\\nvalue\\n", `Subject` only when present), checked with
  `cryptography` against the certificate at `SigningCertURL`. That URL must be https on a host of exactly the shape
  `sns.<region>.amazonaws.com`, on the default port; the certificate is fetched through `SnsClient` (below) and
  cached. `Timestamp` must be within an hour of now (SNS's retries of a delivery keep its timestamp).
- **Subscription.** A `SubscriptionConfirmation` is confirmed here, by a GET of its `SubscribeURL` (which must pass
  the same host check) through the same client, before it is stored; an `UnsubscribeConfirmation` is stored, and
  the subscription is not renewed.
- **Notifications.** `Message` is JSON: an order or a return (docs/helpdesk.md, "Marketplace"); anything else is
  400. Stored under its `MessageId`; one order's notifications share a partition.

`SnsClient` fetches only from SNS's hosts, through the guarded client the webhook deliveries use (net/guard.py: only
addresses the platform's address policy allows are dialled). Its resolver and its TLS trust are parameters, so that
tests map `sns.us-east-1.amazonaws.com` to a local HTTPS peer; the host check itself is the same in every run."""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import ssl
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
import structlog
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from litestar import Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, decoded, refused
from net.guard import Resolve, guarded_client, system_resolve
from topics.helpdesk.inbound import (
    MARKETPLACE_NOTICE,
    SNS_MESSAGE,
    Provider,
    SnsMessage,
    SnsNotification,
    SnsSubscriptionConfirmation,
)

log = structlog.get_logger("signalyard.gateway.helpdesk.marketplace")

PATH = "/api/marketplace/webhook"
PROVIDER: Provider = "marketplace"
MAX_BODY_BYTES = 256 * 1024
REPLAY_WINDOW_S = 3600
SNS_HOST = re.compile(r"sns\.[a-z0-9]+(?:-[a-z0-9]+)*\.amazonaws\.com")
"""`sns.<region>.amazonaws.com`, and nothing else (no other suffix, no deeper subdomain)."""
SIGNED_FIELDS = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"),
    "UnsubscribeConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"),
}
HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {"1": hashes.SHA1, "2": hashes.SHA256}
MAX_CERTIFICATE_BYTES = 64 * 1024


class UntrustedUrl(ValueError):
    """A SigningCertURL or SubscribeURL that is not SNS's: the message is refused (401)."""


class FetchFailed(Exception):
    """SNS's host could not be reached, or answered no certificate (503: SNS retries)."""


def sns_url(url: str) -> str:
    """`url` if it is https on `sns.<region>.amazonaws.com` (default port, no credentials); UntrustedUrl if not."""
    parts = urlsplit(url)
    host = parts.netloc.lower()  # the whole authority: no credentials, no port, no trailing dot
    if parts.scheme != "https" or not SNS_HOST.fullmatch(host):
        raise UntrustedUrl(f"{url[:200]!r} is not an https URL on sns.<region>.amazonaws.com")
    return url


def canonical(message: SnsMessage) -> bytes:
    """SNS's string to sign for the message's type: each signed field present as "Name\\nvalue\\n", in order."""
    fields = msgspec.to_builtins(message)
    return "".join(
        f"{name}\n{fields[name]}\n" for name in SIGNED_FIELDS[message.type] if fields[name] is not None
    ).encode()


class SnsClient:
    """Fetches SNS signing certificates (cached by URL, until `cache_ttl_s` or the certificate's expiry) and confirms
    subscriptions, from SNS's hosts only, through the address policy. Production: the system's resolver and CAs,
    private addresses refused; `resolve` and `tls` are for tests."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        tls: ssl.SSLContext | None = None,
        resolve: Resolve = system_resolve,
        timeout_s: float = 10.0,
        cache_ttl_s: float = 24 * 3600,
        cache_size: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.allow_private = allow_private
        self.tls = tls or ssl.create_default_context()
        self.resolve = resolve
        self.timeout_s = timeout_s
        self.cache_ttl_s = cache_ttl_s
        self.cache_size = cache_size
        self.clock = clock
        self._cache: OrderedDict[str, tuple[rsa.RSAPublicKey, float]] = OrderedDict()
        self._fetching: dict[str, asyncio.Future[rsa.RSAPublicKey]] = {}

    async def _get(self, url: str, *, limit: int) -> bytes:
        try:
            async with (
                guarded_client(
                    allow_private_targets=self.allow_private,
                    tls=self.tls,
                    resolve=self.resolve,
                    timeout_s=self.timeout_s,
                    max_connections=1,
                ) as client,
                client.stream("GET", url) as answer,
            ):
                if answer.status_code != 200:
                    raise FetchFailed(f"{urlsplit(url).hostname} answered {answer.status_code}")
                content = b""
                async for chunk in answer.aiter_bytes():
                    content += chunk
                    if len(content) > limit:
                        raise FetchFailed(f"{urlsplit(url).hostname} answered more than {limit} bytes")
                return content
        except httpx.HTTPError as error:
            raise FetchFailed(f"{urlsplit(url).hostname}: {type(error).__name__}: {error}") from None

    async def public_key(self, url: str) -> rsa.RSAPublicKey:
        """The RSA key of the signing certificate at `url` (cached)."""
        sns_url(url)
        now = self.clock()
        cached = self._cache.get(url)
        if cached is not None and cached[1] > now:
            self._cache.move_to_end(url)
            return cached[0]
        if url in self._fetching:  # one fetch for concurrent messages signed with a new certificate
            return await asyncio.shield(self._fetching[url])
        future: asyncio.Future[rsa.RSAPublicKey] = asyncio.get_running_loop().create_future()
        self._fetching[url] = future
        try:
            key, until = self._certificate(await self._get(url, limit=MAX_CERTIFICATE_BYTES), now)
            self._cache[url] = (key, until)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            future.set_result(key)
            return key
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        finally:
            del self._fetching[url]

    def _certificate(self, pem: bytes, now: float) -> tuple[rsa.RSAPublicKey, float]:
        try:
            certificate = x509.load_pem_x509_certificate(pem)
        except ValueError:
            raise FetchFailed("the SigningCertURL serves no PEM certificate") from None
        start = certificate.not_valid_before_utc.timestamp()
        end = certificate.not_valid_after_utc.timestamp()
        if not start <= now <= end:
            raise UntrustedUrl("the signing certificate is not valid now")
        key = certificate.public_key()
        if not isinstance(key, rsa.RSAPublicKey):
            raise UntrustedUrl("the signing certificate holds no RSA key")
        return key, min(now + self.cache_ttl_s, end)

    async def confirm(self, url: str) -> None:
        """Confirm a subscription: GET its SubscribeURL (SNS answers a ConfirmSubscriptionResponse)."""
        sns_url(url)
        await self._get(url, limit=MAX_CERTIFICATE_BYTES)


def client_of(inbound: Inbound) -> SnsClient:
    given = inbound.providers.get(PROVIDER)
    return given if isinstance(given, SnsClient) else SnsClient()


def _timestamp(value: str) -> float | None:
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


@post(PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def marketplace_notifications(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, str]]:
    body = await request.body()
    message = decoded(SNS_MESSAGE, body)
    header = request.headers.get("x-amz-sns-message-type")
    if header is not None and header != message.type:
        raise refused(400, f"x-amz-sns-message-type {header!r} is not the message's Type {message.type!r}")
    channel = await inbound.route("topic_arn", message.topic_arn)
    at = _timestamp(message.timestamp)
    if at is None or abs(time.time() - at) > REPLAY_WINDOW_S:
        raise refused(401, f"Timestamp is not within {REPLAY_WINDOW_S} seconds of now (a replay?)")
    algorithm = HASHES.get(message.signature_version)
    if algorithm is None:
        raise refused(401, "SignatureVersion must be 1 or 2")
    client = client_of(inbound)
    try:
        key = await client.public_key(message.signing_cert_url)
        signature = base64.b64decode(message.signature, validate=True)
        key.verify(signature, canonical(message), padding.PKCS1v15(), algorithm())
    except UntrustedUrl as error:
        raise refused(401, str(error)) from None
    except (binascii.Error, ValueError, InvalidSignature):
        raise refused(401, "Signature is not SNS's signature of this message") from None
    except FetchFailed as error:
        log.warning("sns_certificate_unavailable", reason=str(error))
        raise refused(503, "The signing certificate could not be fetched: retry") from None
    notice = (
        decoded(MARKETPLACE_NOTICE, message.message, "The notification's Message")
        if isinstance(message, SnsNotification)
        else None
    )
    if isinstance(message, SnsSubscriptionConfirmation):
        try:
            await client.confirm(message.subscribe_url)
        except UntrustedUrl as error:
            raise refused(401, str(error)) from None
        except FetchFailed as error:
            log.warning("sns_confirmation_failed", reason=str(error))
            raise refused(503, "The subscription could not be confirmed: retry") from None
    stored = await inbound.accept(
        channel,
        PROVIDER,
        dedup_key=message.message_id,
        body=body,
        content_type="application/json",
        partition_key=f"{channel.channel_id}:{notice.order_id if notice else message.type}",
        details={
            "type": message.type,
            "topic_arn": message.topic_arn,
            "confirmed": isinstance(message, SnsSubscriptionConfirmation),
        },
    )
    return Response({"status": "accepted" if stored else "duplicate"}, status_code=200)


ROUTES = [marketplace_notifications]
