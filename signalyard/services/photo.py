"""The photo compliance service's wiring (docs/photo.md): its topics, gateway, processors and first-run demo customer;
`signalyard/registry/photo.py` describes it to the CLI, `signalyard/tasks/photo.py` holds its operator tasks."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog
from litestar.types import ASGIApp
from sqlalchemy.engine import Connection

from gateway.common.limits import RateLimits
from gateway.common.waiter import ResultWaiter
from gateway.photo.app import create_photo_app
from gateway.photo.auth import PhotoAuthenticator
from gateway.photo.deps import Dashboard, PhotoGateway
from gateway.photo.images import IMAGES_PATH
from gateway.photo.pages.sessions import DashboardSessions
from gateway.photo.pages.site import limits_unavailable, sign_in_limited
from gateway.photo.webhooks import WORDS
from operations.common.links import MailedLinks
from operations.common.mail import KeptMail, Mailer, SmtpMail, SmtpServer
from operations.common.webhooks import Endpoints
from processors.common.outbox import Sweeper
from processors.photo import retention
from processors.photo.checks import CheckPool
from processors.photo.router import photo_router
from processors.photo.service import PhotoProcessor, PhotoProcessorConfig, photo_outbox
from signalyard import secrets
from signalyard.bootstrap import Background, Platform, sweeping, webhook_engine
from signalyard.registry.photo import PhotoSettings
from signalyard.service import Wiring
from storage.common.blobs import BlobStore, open_blobs
from storage.common.db import Database
from storage.photo import customers, verifications
from topics import photo as photo_topics
from topics.common.webhooks import event_message, events_channel
from topics.photo import WEBHOOKS, PhotoTopics, VerificationRequested, partition_key
from wire.signed_urls import SignedUrls

log = structlog.get_logger("signalyard.photo")


def _public_url(p: Platform, s: PhotoSettings) -> str:
    return s.public_url or f"http://{p.settings.host}:{s.port}"


def _signing_key(p: Platform, s: PhotoSettings) -> str:
    return s.url_signing_key or secrets.kept(p.settings.data_dir, "photo-url-signing-key")


def _signer(p: Platform, s: PhotoSettings) -> SignedUrls:
    return SignedUrls(_public_url(p, s), IMAGES_PATH, _signing_key(p, s).encode(), s.image_url_ttl_s)


def _blobs(p: Platform, s: PhotoSettings) -> BlobStore:
    blobs = open_blobs(s.blob_url, p.settings.data_dir)
    p.closers.append(blobs.close)
    return blobs


def _publish_event(p: Platform) -> Callable[[str, str], Awaitable[None]]:
    async def publish_event(customer_id: str, event_id: str) -> None:
        await p.publish(*event_message("photo", customer_id, event_id, p.settings.topic_prefix))

    return publish_event


def gateway(p: Platform, s: PhotoSettings) -> ASGIApp:
    """The photo gateway app; its result subscription is added to the platform's broker (start it afterwards)."""
    names = PhotoTopics(p.settings.topic_prefix)
    waiter = ResultWaiter(p.db, verifications.load, verifications.OPEN_STATES, id_field="verification_id")
    p.broker.include_router(waiter.router(names.completed, "photo-gateway", wait_ms=photo_topics.CONSUME_WAIT_MS))

    async def publish(message: VerificationRequested) -> None:
        await p.publish(message, names.requested, partition_key(message.verification_id))

    authenticator = PhotoAuthenticator(p.db, p.settings.redis_url)
    public_url = _public_url(p, s)
    mailer: Mailer = KeptMail(p.db, customers.SERVICE)
    if s.smtp_url is not None:
        mailer = SmtpMail(SmtpServer.parse(s.smtp_url), s.mail_from)
    signing_key = _signing_key(p, s)
    dashboard = Dashboard(
        sessions=DashboardSessions(p.db, secure=public_url.startswith("https://")),
        links=MailedLinks(p.db, customers.SERVICE, mailer, public_url, token_prefix="pc"),
        limits=RateLimits(p.settings.redis_url, limited=sign_in_limited, unavailable=limits_unavailable),
        csrf_secret=hmac.new(signing_key.encode(), b"dashboard-csrf", hashlib.sha256).hexdigest(),
    )
    photo = PhotoGateway(
        db=p.db,
        blobs=_blobs(p, s),
        waiter=waiter,
        publish=publish,
        publish_event=_publish_event(p),
        urls=_signer(p, s),
        webhooks=Endpoints(
            p.db, WEBHOOKS, secrets.secrets_cipher(p.settings), WORDS, p.settings.webhook_allow_private_targets
        ),
        wait_s=s.wait_ms / 1000,
        dashboard=dashboard,
        public_url=public_url,
    )
    readiness = {"database": p.db.ping, "broker": p.ping_broker, "rate_limit_store": authenticator.ping}
    return create_photo_app(photo, authenticator, readiness)


def processors(p: Platform, s: PhotoSettings) -> list[Background]:
    """The image-check processor (a consumer-group member), the webhook fan-out and deliverer, and their sweepers."""
    names = PhotoTopics(p.settings.topic_prefix)
    config = PhotoProcessorConfig(requested_topic=names.requested, completed_topic=names.completed)
    checks = CheckPool(s.check_workers or os.cpu_count() or 1)
    p.closers.append(_closing(checks.close))
    blobs = _blobs(p, s)
    processor = PhotoProcessor(
        p.db,
        blobs=blobs,
        checks=checks,
        urls=_signer(p, s),
        publish=p.publish,
        publish_event=_publish_event(p),
        config=config,
    )
    p.broker.include_router(photo_router(processor, prefix=p.settings.topic_prefix))
    sweeper = Sweeper(
        p.db,
        photo_outbox(config),
        p.publish,
        after=timedelta(seconds=p.settings.sweep_after_s),
        ensure_topics=p.ensure_topics,
        timeout_s=p.settings.publish_timeout_s,
    )
    return [
        sweeping(sweeper, p.settings.sweep_every_s),
        *webhook_engine(p, photo_topics.WEBHOOKS),
        lambda: retention.keep_images_for(p.db, blobs, timedelta(days=s.retention_days)),
    ]


def _closing(close: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        close()

    return run


async def demo(db: Database, data_dir: Path, _settings: PhotoSettings) -> list[tuple[str, str]]:
    """First run: a demo customer and its sandbox key, kept in the data directory so later runs print it again."""
    path = data_dir / "demo-photo-sandbox-key"
    key = secrets.read(path)
    if key is None:
        key = (await db.write(_demo_customer))[1]
        secrets.keep(path, key)
    return [("sandbox key", key)]


def _demo_customer(connection: Connection) -> tuple[Any, str]:
    customer_id = customers.create_customer(connection, "demo")
    return customers.create_key(connection, customer_id, "test", name="demo sandbox key")


def example(base: str, demo_lines: list[tuple[str, str]]) -> str:
    key = dict(demo_lines)["sandbox key"]
    return f"curl -s {base}/v1/verify -H 'X-API-Key: {key}' -F image=@photo.jpg -F policy=us_passport"


WIRING = Wiring(
    channels=lambda prefix: {**photo_topics.channels(prefix), **events_channel("photo", prefix)},
    gateway=gateway,
    processors=processors,
    demo=demo,
    example=example,
)
