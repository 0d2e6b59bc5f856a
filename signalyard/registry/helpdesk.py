"""The helpdesk service (docs/helpdesk.md) as the CLI knows it: its settings and its operator commands
(`signalyard helpdesk ...`); its wiring is `signalyard/services/helpdesk.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signalyard.service import Command, Service
from signalyard.settings import at_least, port, positive, setting, text, url
from topics.helpdesk.inbound import CHANNEL_KINDS


def shop_url(raw: str) -> str:
    """An http(s) URL template holding `{shop}`."""
    url("http", "https")(raw)
    if "{shop}" not in raw:
        raise ValueError("a URL holding {shop}, where the shop's domain goes (https://{shop})")
    return raw


@dataclass(frozen=True)
class HelpdeskSettings:
    port: int = setting("SIGNALYARD_HELPDESK_PORT", 8003, port)
    """Port of the helpdesk gateway: its REST API at http://HOST:PORT/api/v1, its procedures at /api/trpc."""
    public_url: str | None = setting("SIGNALYARD_HELPDESK_PUBLIC_URL", None, url("http", "https"))
    """Base of every link the helpdesk sends (sign-in links, social sign-in's callback, checkout's return); cookies
    are `Secure` when it is https (default: http://HOST:PORT)."""
    session_key: str | None = setting("SIGNALYARD_HELPDESK_SESSION_KEY", None, text)
    """Secret that signs access tokens and social sign-in's flow cookie; every gateway must share it (default: a
    random key kept in the data directory)."""
    smtp_url: str | None = setting("SIGNALYARD_HELPDESK_SMTP_URL", None, url("smtp", "smtp+starttls", "smtps"))
    """SMTP server for sign-in links and password resets: smtp://[user:password@]host:port (plain),
    smtp+starttls://... or smtps://... Unset: mails are kept in the database (`signalyard helpdesk mails`)."""
    mail_from: str = setting("SIGNALYARD_HELPDESK_MAIL_FROM", "helpdesk@localhost", text)
    """The From address of the mail the helpdesk sends."""
    reply_lease_s: int = setting("SIGNALYARD_HELPDESK_REPLY_LEASE_S", 90, positive(int))
    """How long a reply a sender claimed is that sender's: past it (the sender died), another sends it. Longer than
    a round of sends (each bounded by 30 s)."""
    sms_api_url: str = setting("SIGNALYARD_HELPDESK_SMS_API_URL", "https://api.twilio.com", url("http", "https"))
    """Base URL of the SMS provider's REST API, through which SMS replies are sent."""
    graph_api_url: str = setting(
        "SIGNALYARD_HELPDESK_GRAPH_API_URL", "https://graph.facebook.com/v21.0", url("http", "https")
    )
    """Base URL (with its version) of the messaging provider's Graph API, through which business and page messaging
    replies are sent and their media fetched."""
    chat_api_url: str = setting("SIGNALYARD_HELPDESK_CHAT_API_URL", "https://slack.com/api", url("http", "https"))
    """Base URL of the team chat's Web API, through which replies are posted in their thread and files fetched."""
    password_memory_kib: int = setting("SIGNALYARD_HELPDESK_PASSWORD_MEMORY_KIB", 19456, at_least(int, 8))
    """argon2id memory cost of a password hash, in KiB (OWASP's 19 MiB by default)."""
    password_passes: int = setting("SIGNALYARD_HELPDESK_PASSWORD_PASSES", 2, positive(int))
    """argon2id passes over that memory (OWASP's 2 by default)."""
    stripe_secret_key: str | None = setting("SIGNALYARD_HELPDESK_STRIPE_SECRET_KEY", None, text)
    """Stripe secret key for paid plans (Checkout); unset: paid plans answer PRECONDITION_FAILED."""
    stripe_api_base: str = setting(
        "SIGNALYARD_HELPDESK_STRIPE_API_BASE", "https://api.stripe.com", url("http", "https")
    )
    """Base URL of the Stripe API."""
    stripe_price_pro: str | None = setting("SIGNALYARD_HELPDESK_STRIPE_PRICE_PRO", None, text)
    """The Stripe price id (price_...) of the pro plan: Checkout sells it, and a subscription on it is the pro plan
    (list it in the customer portal's configuration so that admins can switch to it); unset: Checkout sells $29 a
    month inline, a price the portal cannot switch to or from."""
    stripe_price_business: str | None = setting("SIGNALYARD_HELPDESK_STRIPE_PRICE_BUSINESS", None, text)
    """The Stripe price id of the business plan, as SIGNALYARD_HELPDESK_STRIPE_PRICE_PRO ($99 a month inline unset)."""
    stripe_webhook_secret: str | None = setting("SIGNALYARD_HELPDESK_STRIPE_WEBHOOK_SECRET", None, text)
    """Signing secret (whsec_...) of the Stripe endpoint /api/webhooks/payments (the platform's billing events); unset:
    that endpoint receives nothing (404)."""
    stripe_connect_webhook_secret: str | None = setting("SIGNALYARD_HELPDESK_STRIPE_CONNECT_WEBHOOK_SECRET", None, text)
    """Signing secret of the Stripe Connect endpoint /api/webhooks/payments-connect (connected accounts' events);
    unset: that endpoint receives nothing (404)."""
    url_signing_key: str | None = setting("SIGNALYARD_HELPDESK_URL_SIGNING_KEY", None, text)
    """Secret that signs attachment URLs; every gateway must share it (default: a random key kept in the data
    directory)."""
    attachment_url_ttl_s: int = setting("SIGNALYARD_HELPDESK_ATTACHMENT_URL_TTL_S", 600, positive(int))
    """How long a signed attachment URL stays valid."""
    blob_url: str = setting("SIGNALYARD_HELPDESK_BLOB_URL", "", text)
    """Where inbound attachments, uploads and exports are stored: empty for DATA_DIR/helpdesk-blobs, file:///path, or
    s3://bucket/prefix?... (as SIGNALYARD_PHOTO_BLOB_URL, and never the same place: photo deletes what is old in its
    store)."""
    oidc_issuer: str | None = setting("SIGNALYARD_HELPDESK_OIDC_ISSUER", None, url("http", "https"))
    """Issuer of the OpenID Connect provider for social sign-in (its discovery document is at
    ISSUER/.well-known/openid-configuration); unset: social sign-in answers PRECONDITION_FAILED."""
    oidc_client_id: str | None = setting("SIGNALYARD_HELPDESK_OIDC_CLIENT_ID", None, text)
    """This helpdesk's client id at that provider (its redirect URI: PUBLIC_URL/auth/callback)."""
    oidc_client_secret: str | None = setting("SIGNALYARD_HELPDESK_OIDC_CLIENT_SECRET", None, text)
    """Its client secret."""
    commerce_client_id: str | None = setting("SIGNALYARD_HELPDESK_COMMERCE_CLIENT_ID", None, text)
    """The helpdesk's app at the commerce platform: its client id (API key). With the client secret, admins connect a
    store by its app install (its redirect URL: PUBLIC_URL/settings/channels/commerce/callback); unset: commerce
    channels are added by hand."""
    commerce_client_secret: str | None = setting("SIGNALYARD_HELPDESK_COMMERCE_CLIENT_SECRET", None, text)
    """That app's client secret (API secret key), which signs the install's answers and the shops' webhooks."""
    commerce_shop_url: str = setting("SIGNALYARD_HELPDESK_COMMERCE_SHOP_URL", "https://{shop}", shop_url)
    """Where a shop's admin answers, `{shop}` standing for its domain (tea-shop.myshopify.com): the app-install pages,
    the token exchange and the webhooks API are under it (tests: http://127.0.0.1:PORT/{shop})."""


ORGANIZATION_ID = "an organization's id, as `helpdesk organizations` lists it"


def commands(parent: Any, command: Command) -> None:
    group = parent.add_parser("helpdesk", help="helpdesk: kept mail, organizations, REST API keys, inbound channels")
    actions = group.add_subparsers(required=True, metavar="ACTION")
    mails = command("mails", "mails", "print the mail kept while no SMTP server is configured, newest first", actions)
    mails.add_argument("--to", metavar="EMAIL", help="only the mail sent to this address")
    mails.add_argument("--limit", type=int, default=20, metavar="N", help="at most N mails (default: %(default)s)")
    command("organizations", "organizations", "list organizations (id, slug, plan, billing, name)", actions)
    keys = actions.add_parser("keys", help="REST API keys of an organization")
    keys = keys.add_subparsers(required=True, metavar="ACTION")
    create = command("create", "keys_create", "create a key and print it (shown this once)", keys)
    create.add_argument("organization_id", help=ORGANIZATION_ID)
    create.add_argument(
        "--scope",
        action="append",
        required=True,
        metavar="SCOPE",
        help="a scope it grants (repeatable): *, or RESOURCE:read, RESOURCE:write or RESOURCE:* (tickets, customers, "
        "conversations, events, webhooks, ...)",
    )
    create.add_argument("--name", default="operator key", help="a name to tell it apart (default: %(default)s)")
    create.add_argument("--per-minute", type=int, metavar="N", help="requests per minute (default: 600)")
    create.add_argument("--per-hour", type=int, metavar="N", help="requests per hour (default: 20000)")
    command("list", "keys_list", "list an organization's keys (id, prefix, scopes, state, name)", keys).add_argument(
        "organization_id", help=ORGANIZATION_ID
    )
    command("revoke", "keys_revoke", "revoke a key at once, by its id", keys).add_argument(
        "key_id", help="the key's id, as `helpdesk keys list` lists it"
    )
    channels = actions.add_parser("channels", help="inbound channels of an organization")
    channels = channels.add_subparsers(required=True, metavar="ACTION")
    create = command(
        "create", "channels_create", "create a channel; print its id and the secrets made for it", channels
    )
    create.add_argument("organization_id", help=ORGANIZATION_ID)
    create.add_argument("--kind", required=True, choices=CHANNEL_KINDS, help="what the channel receives")
    create.add_argument("--name", required=True, help="a name to tell it apart")
    create.add_argument(
        "--address",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="what routes to it (repeatable): an inbound address, a phone number, a messaging number's or page's id, "
        "a shop's domain, a payments account, a chat team, an SNS topic ARN",
    )
    create.add_argument(
        "--secret", action="append", default=[], metavar="NAME=VALUE", help="a secret its provider issued (repeatable)"
    )
    create.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE", help="a setting (repeatable)")
    command(
        "list", "channels_list", "list an organization's channels (id, kind, addresses, name)", channels
    ).add_argument("organization_id", help=ORGANIZATION_ID)
    update = command(
        "update", "channels_update", "change a channel; print the secrets made anew for it (--rotate)", channels
    )
    update.add_argument("organization_id", help=ORGANIZATION_ID)
    update.add_argument("channel_id", help="the channel's id, as `helpdesk channels list` lists it")
    update.add_argument("--name", help="a new name")
    update.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a secret its provider issued, set anew; NAME= removes it (repeatable)",
    )
    update.add_argument(
        "--rotate",
        action="append",
        default=[],
        metavar="NAME",
        help="a secret the helpdesk made for it, made anew (repeatable); the old one stops working at once",
    )
    update.add_argument(
        "--setting", action="append", default=[], metavar="NAME=VALUE", help="a setting; NAME= removes it (repeatable)"
    )
    delete = command("delete", "channels_delete", "delete a channel: it receives nothing from now on", channels)
    delete.add_argument("organization_id", help=ORGANIZATION_ID)
    delete.add_argument("channel_id", help="the channel's id, as `helpdesk channels list` lists it")


SERVICE = Service(
    name="helpdesk",
    title="helpdesk API",
    api="/api/v1",
    settings=HelpdeskSettings,
    commands=commands,
    wiring="signalyard.services.helpdesk",
    tasks="signalyard.tasks.helpdesk",
)
