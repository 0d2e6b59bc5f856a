"""The phone verification service (docs/phone.md) as the CLI knows it: its settings and its operator commands
(`signalyard tenants|keys|prices|requests ...`); its wiring is `signalyard/services/phone.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signalyard.service import Command, Service
from signalyard.settings import at_least, port, positive, rate_limits, setting, text, url
from storage.phone.catalog import ALL_SCOPES, RECONCILE_OUTCOMES
from topics.phone import SKU


@dataclass(frozen=True)
class PhoneSettings:
    port: int = setting("SIGNALYARD_PHONE_PORT", 8001, port)
    """Port of the phone gateway; its API is at http://HOST:PORT/v1."""
    wait_ms: int = setting("SIGNALYARD_PHONE_WAIT_MS", 5000, at_least(int, 0))
    """How long POST /verify waits for its result before answering 202."""
    rate_limit: str = setting("SIGNALYARD_PHONE_RATE_LIMIT", "50/second", rate_limits)
    """Rate limit per API key, in the `limits` notation (50/second; several windows: 50/second;1000/minute)."""
    sandbox_slow_ms: int = setting("SIGNALYARD_SANDBOX_SLOW_MS", 6000, at_least(int, 0))
    """How long the sandbox's slow magic number takes (longer than the wait: it shows the 202 path)."""
    carrier_lookup_url: str = setting(
        "SIGNALYARD_CARRIER_LOOKUP_URL", "https://lookups.twilio.com", url("http", "https")
    )
    """Base URL of the Twilio Lookup v2 compatible carrier lookup used by live keys."""
    carrier_lookup_sid: str | None = setting("SIGNALYARD_CARRIER_LOOKUP_SID", None, text)
    """Account SID for the carrier lookup (basic auth user); unset: live requests get 503 provider_unconfigured."""
    carrier_lookup_token: str | None = setting("SIGNALYARD_CARRIER_LOOKUP_TOKEN", None, text)
    """Auth token for the carrier lookup (basic auth password)."""
    carrier_lookup_timeout_s: float = setting("SIGNALYARD_CARRIER_LOOKUP_TIMEOUT_S", 3.0, positive(float))
    """Timeout of one carrier lookup attempt."""
    carrier_lookup_retries: int = setting("SIGNALYARD_CARRIER_LOOKUP_RETRIES", 2, at_least(int, 0))
    """Retries after a timeout or 5xx before the request fails with provider_unavailable."""


TENANT_ID = "a tenant's id, as `tenants create` prints it and `tenants list` lists it"


def commands(parent: Any, command: Command) -> None:
    group = parent.add_parser("tenants", help="phone: create, list, suspend or reactivate tenants; spend caps")
    group = group.add_subparsers(required=True, metavar="ACTION")
    create = command("create", "tenants_create", "create a tenant and print its id", group)
    create.add_argument("name", help="the tenant's name, for operators")
    create.add_argument(
        "--sku",
        action="append",
        choices=[SKU],
        help=f"a SKU the tenant may use (repeatable; default: every SKU: {SKU})",
    )
    create.add_argument(
        "--spend-cap-microdollars",
        type=int,
        metavar="N",
        help="monthly spend cap per environment, in microdollars (default: none)",
    )
    for action, what in (("suspend", "refuse the tenant's keys"), ("activate", "let a suspended tenant's keys in")):
        command(action, f"tenants_{action}", f"{action} a tenant: {what}", group).add_argument(
            "tenant_id", help=TENANT_ID
        )
    cap = command("set-cap", "tenants_set_cap", "set a tenant's monthly spend cap", group)
    cap.add_argument("tenant_id", help=TENANT_ID)
    cap.add_argument("microdollars", type=int, help="the cap per environment and calendar month, in microdollars")
    command("list", "tenants_list", "list tenants (id, status, name), oldest first", group)

    group = parent.add_parser("keys", help="phone: create or revoke API keys")
    group = group.add_subparsers(required=True, metavar="ACTION")
    key = command("create", "keys_create", "create a key and print it (alone) on stdout", group)
    key.add_argument("--tenant", required=True, metavar="TENANT_ID", help=f"the key's owner: {TENANT_ID}")
    key.add_argument(
        "--env",
        required=True,
        choices=["test", "live"],
        help="test: a sy_test_ key, answered by the sandbox; live: a sy_live_ key, answered by the carrier lookup",
    )
    key.add_argument(
        "--scope",
        action="extend",
        nargs="+",
        choices=ALL_SCOPES,
        metavar="SCOPE",
        help=f"one or more of {', '.join(ALL_SCOPES)} (repeatable; default: all)",
    )
    revoke = command("revoke", "keys_revoke", "revoke a key: it is refused at once", group)
    revoke.add_argument("key", help="the key itself (sy_test_... or sy_live_...) or its id")

    group = parent.add_parser("prices", help="phone: set prices")
    group = group.add_subparsers(required=True, metavar="ACTION")
    price = command("set", "prices_set", "set a tenant's unit price for a SKU", group)
    price.add_argument("--tenant", required=True, metavar="TENANT_ID", help=TENANT_ID)
    price.add_argument("--sku", default=SKU, choices=[SKU], help="the SKU priced (default: %(default)s)")
    price.add_argument("--microdollars", type=int, required=True, metavar="N", help="the price of one billable request")

    group = parent.add_parser("requests", help="phone: operator actions on requests")
    group = group.add_subparsers(required=True, metavar="ACTION")
    reconcile = command("reconcile", "requests_reconcile", "resolve a pending_reconciliation request", group)
    reconcile.add_argument("request_id", help="the id of a request in pending_reconciliation")
    reconcile.add_argument(
        "--outcome",
        required=True,
        choices=RECONCILE_OUTCOMES,
        help="billable: the stored result stands and is billed; not_billable: it stands, free; "
        "failed: it becomes a failed, unbilled request",
    )


SERVICE = Service(
    name="phone",
    title="phone API",
    api="/v1",
    settings=PhoneSettings,
    commands=commands,
    wiring="signalyard.services.phone",
    tasks="signalyard.tasks.phone",
)
