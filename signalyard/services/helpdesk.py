"""The helpdesk's wiring (docs/helpdesk.md): its topics, gateway, processors and first-run demo organization;
`signalyard/registry/helpdesk.py` describes it to the CLI, `signalyard/tasks/helpdesk.py` holds its operator tasks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from secrets import token_urlsafe

from litestar.types import ASGIApp
from sqlalchemy.engine import Connection

from gateway.common.limits import RateLimits
from gateway.helpdesk.accounts.credentials import AccessTokens, PasswordCost, Passwords
from gateway.helpdesk.accounts.sessions import Sessions
from gateway.helpdesk.accounts.signin import Accounts, limits_unavailable, sign_in_limited
from gateway.helpdesk.accounts.social import SocialProvider
from gateway.helpdesk.app import create_helpdesk_app
from gateway.helpdesk.auth import HelpdeskAuthenticator
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.inbound import marketplace, payments
from gateway.helpdesk.inbound.common import Inbound
from gateway.helpdesk.inbound.sms import STATUS_PATH as SMS_STATUS_PATH
from operations.common.changes import PublishEvent
from operations.common.mail import SmtpServer
from operations.helpdesk.attachments import ATTACHMENTS_PATH
from operations.helpdesk.billing import Billing
from operations.helpdesk.commerce_app import CommerceApp
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.mail import account_mailer
from processors.common.outbox import Sweeper, relay_forever
from processors.helpdesk.activity import RELAY_EVERY_S, activity_relay
from processors.helpdesk.inbound.handlers import HANDLERS
from processors.helpdesk.inbound.media import MediaFetcher
from processors.helpdesk.inbound.router import inbound_router
from processors.helpdesk.inbound.service import Context, InboundProcessor, inbound_outbox
from processors.helpdesk.inbound.voice import waiting_voicemails_forever
from processors.helpdesk.outbound import (
    BusinessSender,
    ChatSender,
    KeptTransport,
    PageSender,
    ReplySender,
    Sender,
    SmsSender,
    SmtpTransport,
)
from signalyard import secrets
from signalyard.bootstrap import Background, Platform, sweeping, webhook_engine
from signalyard.registry.helpdesk import HelpdeskSettings
from signalyard.service import Wiring
from signalyard.settings import PlatformSettings
from storage.common.blobs import BlobStore, open_blobs
from storage.common.db import Database
from storage.helpdesk import accounts, keys, workspaces
from topics import helpdesk as helpdesk_topics
from topics.common.webhooks import event_message, events_channel
from topics.helpdesk import WEBHOOKS, HelpdeskTopics, InboundReceived
from wire.signed_urls import SignedUrls

DEMO_EMAIL = "admin@helpdesk.example"
DEMO_ORGANIZATION = "Demo"


def _public_url(p: Platform, s: HelpdeskSettings) -> str:
    return (s.public_url or f"http://{p.settings.host}:{s.port}").rstrip("/")


def _session_key(p: Platform, s: HelpdeskSettings) -> bytes:
    return (s.session_key or secrets.kept(p.settings.data_dir, "helpdesk-session-key")).encode()


BLOB_DIRECTORY = "helpdesk-blobs"
"""Under the data directory, where inbound attachments and exports are kept unless SIGNALYARD_HELPDESK_BLOB_URL says
otherwise (photo's images are elsewhere: photo's retention deletes what is old in its store)."""


def blob_store(platform: PlatformSettings, s: HelpdeskSettings) -> BlobStore:
    return open_blobs(s.blob_url, platform.data_dir, directory=BLOB_DIRECTORY)


def _passwords(s: HelpdeskSettings) -> Passwords:
    return Passwords(PasswordCost(memory_kib=s.password_memory_kib, passes=s.password_passes))


def _inbound_providers(p: Platform, s: HelpdeskSettings) -> dict[str, object]:
    """What the inbound endpoints need beyond their channels: the platform's Stripe endpoint secrets, and the client
    that fetches SNS signing certificates (the address policy of webhook deliveries, the system's CAs)."""
    return {
        payments.PROVIDER: payments.StripeWebhookSecrets(s.stripe_webhook_secret, s.stripe_connect_webhook_secret),
        marketplace.PROVIDER: marketplace.SnsClient(allow_private=p.settings.webhook_allow_private_targets),
    }


def gateway(p: Platform, s: HelpdeskSettings) -> ASGIApp:
    """The helpdesk gateway app: the REST API, the procedures and the sign-in routes."""
    public_url = _public_url(p, s)
    key = _session_key(p, s)
    social = None
    if s.oidc_issuer and s.oidc_client_id and s.oidc_client_secret:
        social = SocialProvider(s.oidc_issuer, s.oidc_client_id, s.oidc_client_secret, public_url, key)
    accounts_deps = Accounts(
        db=p.db,
        sessions=Sessions(p.db, AccessTokens(key), secure=public_url.startswith("https://")),
        passwords=_passwords(s),
        limits=RateLimits(p.settings.redis_url, limited=sign_in_limited, unavailable=limits_unavailable),
        mailer=account_mailer(p.db, s.smtp_url, s.mail_from),
        public_url=public_url,
        social=social,
    )
    billing = None
    if s.stripe_secret_key:
        billing = Billing(s.stripe_api_base, s.stripe_secret_key, public_url, _plan_prices(s))

    topics = HelpdeskTopics(p.settings.topic_prefix)

    async def publish_inbound(messages: Sequence[tuple[InboundReceived, bytes]]) -> None:
        await p.publish_together([(message, topics.inbound, key) for message, key in messages])

    authenticator = HelpdeskAuthenticator(p.db, p.settings.redis_url)
    cipher = secrets.secrets_cipher(p.settings)
    helpdesk = HelpdeskGateway(
        desk=_desk(p, s, billing),
        accounts=accounts_deps,
        inbound=Inbound(p.db, cipher, publish_inbound, public_url=public_url, providers=_inbound_providers(p, s)),
    )
    readiness = {"database": p.db.ping, "broker": p.ping_broker, "rate_limit_store": authenticator.ping}
    return create_helpdesk_app(helpdesk, authenticator, readiness)


def _publish_event(p: Platform) -> PublishEvent:
    async def publish_event(organization_id: str, event_id: str) -> None:
        await p.publish(*event_message(WEBHOOKS.service, organization_id, event_id, p.settings.topic_prefix))

    return publish_event


def _plan_prices(s: HelpdeskSettings) -> dict[str, str]:
    """The paid plans' configured Stripe price ids, by plan."""
    configured = (("pro", s.stripe_price_pro), ("business", s.stripe_price_business))
    return {plan: price for plan, price in configured if price}


def _desk(p: Platform, s: HelpdeskSettings, billing: Billing | None = None) -> Helpdesk:
    """The operations' parts, in a gateway (with the payment provider, when configured) or a processors process."""
    blobs = blob_store(p.settings, s)
    p.closers.append(blobs.close)
    return Helpdesk(
        p.db,
        _publish_event(p),
        secrets.secrets_cipher(p.settings),
        allow_private_targets=p.settings.webhook_allow_private_targets,
        mailer=account_mailer(p.db, s.smtp_url, s.mail_from),
        public_url=_public_url(p, s),
        blobs=blobs,
        files=_files(p, s),
        commerce=_commerce(s),
        billing=billing,
    )


def _commerce(s: HelpdeskSettings) -> CommerceApp | None:
    """The app admins connect their stores by, when its credentials are set."""
    if s.commerce_client_id and s.commerce_client_secret:
        return CommerceApp(s.commerce_client_id, s.commerce_client_secret, s.commerce_shop_url)
    return None


def _files(p: Platform, s: HelpdeskSettings) -> SignedUrls:
    """The signed URLs of stored attachments: issued by the gateways, and by the reply sender for the files of an
    SMS reply, which the provider fetches."""
    key = s.url_signing_key or secrets.kept(p.settings.data_dir, "helpdesk-url-signing-key")
    return SignedUrls(_public_url(p, s), ATTACHMENTS_PATH, key.encode(), s.attachment_url_ttl_s)


def processors(p: Platform, s: HelpdeskSettings) -> list[Background]:
    """The inbound processors (a consumer group) and their sweeper, the reply sender, the voicemails' wait for their
    missing parts, the outgoing webhooks (fan-out, deliverer, sweeper) and the activity log's relay to its topic."""
    topics = HelpdeskTopics(p.settings.topic_prefix)
    relay = activity_relay(p.db, topics, p.publish_together)
    blobs = blob_store(p.settings, s)
    p.closers.append(blobs.close)

    announce = _publish_event(p)
    cipher = secrets.secrets_cipher(p.settings)
    media = MediaFetcher(
        cipher,
        graph_api_url=s.graph_api_url,
        allow_private_targets=p.settings.webhook_allow_private_targets,
    )
    p.closers.append(media.close)
    plan_prices = {price: plan for plan, price in _plan_prices(s).items()}
    processor = InboundProcessor(Context(p.db, blobs, media=media, plan_prices=plan_prices), HANDLERS, announce)
    p.broker.include_router(inbound_router(processor, topics))
    sweeper = Sweeper(
        p.db,
        inbound_outbox(topics),
        p.publish,
        after=timedelta(seconds=p.settings.sweep_after_s),
        ensure_topics=p.ensure_topics,
        timeout_s=p.settings.publish_timeout_s,
    )
    transport = KeptTransport(p.db) if s.smtp_url is None else SmtpTransport(SmtpServer.parse(s.smtp_url))
    lease = timedelta(seconds=s.reply_lease_s)
    senders: dict[str, Sender] = {
        "sms": SmsSender(s.sms_api_url, f"{_public_url(p, s)}{SMS_STATUS_PATH}"),
        "business_messaging": BusinessSender(s.graph_api_url),
        "page_messaging": PageSender(s.graph_api_url),
        "chat": ChatSender(s.chat_api_url),
    }
    replies = ReplySender(
        p.db,
        cipher,
        transport,
        blobs,
        senders=senders,
        lease=lease,
        notify_from=s.mail_from,
        files=_files(p, s),
    )
    p.closers.append(replies.close)
    return [
        sweeping(sweeper, p.settings.sweep_every_s),
        replies.run,
        lambda: waiting_voicemails_forever(p.db, announce),
        *webhook_engine(p, WEBHOOKS),
        lambda: relay_forever(relay, RELAY_EVERY_S),
    ]


async def demo(db: Database, data_dir: Path, s: HelpdeskSettings) -> list[tuple[str, str]]:
    """First run: a demo organization whose admin signs in with a password, and a REST key with scope `*`, kept in
    the data directory so later runs print them again."""
    key_path, password_path = data_dir / "demo-helpdesk-key", data_dir / "demo-helpdesk-password"
    key, password = secrets.read(key_path), secrets.read(password_path)
    if key is None or password is None:
        password = token_urlsafe(12)
        password_hash = await _passwords(s).hash(password)
        key = await db.write(_demo_organization, password_hash, datetime.now(UTC))
        secrets.keep(password_path, password)
        secrets.keep(key_path, key)
    return [("sign in", f"{DEMO_EMAIL} / {password} (auth.signInWithPassword)"), ("API key", key)]


def _demo_organization(connection: Connection, password_hash: str, now: datetime) -> str:
    user = accounts.signed_in_by_email(connection, DEMO_EMAIL, now)
    workspace = workspaces.existing(connection, user.id) or workspaces.complete_signup(
        connection,
        user.id,
        name="Demo Admin",
        organization_name=DEMO_ORGANIZATION,
        plan=workspaces.FREE_PLAN,
        now=now,
        slugs=workspaces.slug_candidates,
    )
    accounts.set_password_hash(connection, user.id, password_hash, now)
    return keys.create_key(connection, workspace.organization_id, name="demo key", scopes=["*"], now=now)[1]


def example(base: str, demo_lines: list[tuple[str, str]]) -> str:
    key = dict(demo_lines)["API key"]
    return (
        f"curl -s {base}/api/v1/tickets -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' \\\n"
        f'    -d \'{{"subject": "My order has not arrived", "customer_email": "ada@example.com"}}\''
    )


WIRING = Wiring(
    channels=lambda prefix: {**helpdesk_topics.channels(prefix), **events_channel("helpdesk", prefix)},
    gateway=gateway,
    processors=processors,
    demo=demo,
    example=example,
)
