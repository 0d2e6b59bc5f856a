"""The photo compliance service (docs/photo.md) as the CLI knows it: its settings and its operator commands
(`signalyard customers ...`); its wiring is `signalyard/services/photo.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signalyard.service import Command, Service
from signalyard.settings import at_least, port, positive, setting, text, url
from storage.photo.catalog import DEFAULT_PLAN, PLANS


@dataclass(frozen=True)
class PhotoSettings:
    port: int = setting("SIGNALYARD_PHOTO_PORT", 8002, port)
    """Port of the photo gateway; it serves the host root (`/v1/verify`, `/api/v1/...`)."""
    wait_ms: int = setting("SIGNALYARD_PHOTO_WAIT_MS", 10000, at_least(int, 0))
    """How long POST /v1/verify waits for its verdict; past it, 503 with Retry-After (the same Idempotency-Key later
    returns the verdict)."""
    public_url: str | None = setting("SIGNALYARD_PHOTO_PUBLIC_URL", None, url("http", "https"))
    """Base URL clients reach the photo gateway at, for `image_url` (default: http://HOST:PORT)."""
    url_signing_key: str | None = setting("SIGNALYARD_PHOTO_URL_SIGNING_KEY", None, text)
    """Secret that signs `image_url`s; every gateway and processor must share it (default: a random key kept in the
    data directory)."""
    image_url_ttl_s: int = setting("SIGNALYARD_PHOTO_IMAGE_URL_TTL_S", 3600, positive(int))
    """How long a signed `image_url` stays valid."""
    blob_url: str = setting("SIGNALYARD_PHOTO_BLOB_URL", "", text)
    """Where images are stored: empty for DATA_DIR/blobs, file:///path, or s3://bucket/prefix?endpoint_url=...&region=...
    (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)."""
    retention_days: int = setting("SIGNALYARD_PHOTO_RETENTION_DAYS", 30, positive(int))
    """Images are deleted this many days after their verification (the verdict stays; `image_url` becomes null)."""
    check_workers: int = setting("SIGNALYARD_PHOTO_CHECK_WORKERS", 0, at_least(int, 0))
    """Processes judging images in each processors process (0: one per CPU core)."""
    smtp_url: str | None = setting("SIGNALYARD_PHOTO_SMTP_URL", None, url("smtp", "smtp+starttls", "smtps"))
    """SMTP server for the dashboard's sign-in links: smtp://[user:password@]host:port (plain), smtp+starttls://...
    or smtps://... Unset: mails are kept in the database (`signalyard customers mails`)."""
    mail_from: str = setting("SIGNALYARD_PHOTO_MAIL_FROM", "photo@localhost", text)
    """The From address of the dashboard's mail."""


CUSTOMER_ID = "a customer's id (cus_...), as `customers create` prints it and `customers list` lists it"
PLAN_CAPS = ", ".join(f"{plan} ({cap:,} live verifications a month)" for plan, cap in PLANS.items())


def commands(parent: Any, command: Command) -> None:
    group = parent.add_parser("customers", help="photo: customer accounts, plans, subscriptions and key limits")
    group = group.add_subparsers(required=True, metavar="ACTION")
    create = command("create", "customers_create", "create a customer; print its id, sandbox key and live key", group)
    create.add_argument("name", help="the customer's name, for operators")
    create.add_argument(
        "--plan", default=DEFAULT_PLAN, metavar="PLAN", help=f"one of {PLAN_CAPS} (default: %(default)s)"
    )
    create.add_argument(
        "--monthly-cap",
        type=int,
        metavar="N",
        help="live verifications per calendar month (default: the plan's); with it, PLAN may be any name",
    )
    create.add_argument(
        "--no-subscription", action="store_true", help="live verifications answer 403 until `customers activate`"
    )
    command("list", "customers_list", "list customers (id, plan, monthly cap, subscription, name), oldest first", group)
    plan = command("set-plan", "customers_set_plan", "change a customer's plan or monthly cap", group)
    plan.add_argument("customer_id", help=CUSTOMER_ID)
    plan.add_argument("plan", help=f"one of {PLAN_CAPS}; with --monthly-cap, any name")
    plan.add_argument("--monthly-cap", type=int, metavar="N", help="live verifications per month (default: the plan's)")
    for action, what in (("activate", "live keys work"), ("deactivate", "live verifications answer 403")):
        command(action, f"customers_{action}", f"{action} a customer's subscription: {what}", group).add_argument(
            "customer_id", help=CUSTOMER_ID
        )
    mails = command(
        "mails", "customers_mails", "print the dashboard's mail kept while no SMTP server is configured", group
    )
    mails.add_argument("--to", metavar="EMAIL", help="only the mail sent to this address")
    mails.add_argument("--limit", type=int, default=20, metavar="N", help="at most N mails (default: %(default)s)")
    limits = command("key-limits", "customers_key_limits", "set one key's requests per minute and per hour", group)
    limits.add_argument("key_id", help="the key's id (key_...), as GET /api/v1/api-keys lists it")
    limits.add_argument("--per-minute", type=int, required=True, metavar="N", help="requests per minute")
    limits.add_argument("--per-hour", type=int, required=True, metavar="N", help="requests per hour")


SERVICE = Service(
    name="photo",
    title="photo API",
    api="/v1",
    settings=PhotoSettings,
    commands=commands,
    wiring="signalyard.services.photo",
    tasks="signalyard.tasks.photo",
)
