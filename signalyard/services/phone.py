"""The phone verification service (docs/phone.md): its settings, topics, gateway, processors, operator
commands and first-run demo tenant."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from litestar.types import ASGIApp
from sqlalchemy.engine import Connection

from gateway.common.limits import windows
from gateway.common.waiter import ResultWaiter
from gateway.phone.app import create_phone_app
from gateway.phone.auth import PhoneAuthenticator
from gateway.phone.deps import PhoneGateway, batched_accept
from gateway.phone.enforcement import Enforcement
from processors.common.outbox import Sweeper
from processors.phone.lookup import Provider
from processors.phone.providers import CarrierLookup, Sandbox
from processors.phone.router import phone_router
from processors.phone.service import RECONCILE_OUTCOMES, PhoneProcessor, PhoneProcessorConfig, phone_outbox, reconcile
from signalyard import secrets
from signalyard.bootstrap import Background, Platform, sweeping
from signalyard.service import Service, WithDb
from signalyard.settings import at_least, port, positive, rate_limits, setting, text, url
from storage.common.db import Database
from storage.phone import requests, tenants
from topics import phone as phone_topics
from topics.phone import PhoneTopics, VerificationRequested, partition_key


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


def gateway(p: Platform, s: PhoneSettings) -> ASGIApp:
    """The phone gateway app; its result subscription is added to the platform's broker (start it afterwards)."""
    waiter = ResultWaiter(p.db, requests.load_requests)
    p.broker.include_router(waiter.router(PhoneTopics(p.settings.topic_prefix).completed, "phone-gateway"))
    enforcement = Enforcement(p.db, windows(s.rate_limit), p.settings.redis_url)
    requested = PhoneTopics(p.settings.topic_prefix).requested

    async def publish(message: VerificationRequested) -> None:
        await p.publish(message, requested, partition_key(message.phone_e164))

    phone = PhoneGateway(
        db=p.db,
        enforcement=enforcement,
        waiter=waiter,
        publish=publish,
        accept=batched_accept(p.db),
        wait_s=s.wait_ms / 1000,
    )
    readiness = {"database": p.db.ping, "broker": p.ping_broker, "rate_limit_store": enforcement.ping}
    return create_phone_app(phone, PhoneAuthenticator(p.db), readiness)


def processors(p: Platform, s: PhoneSettings) -> list[Background]:
    """The phone processor, subscribed on the platform's broker as a member of the processors' consumer group."""
    live = CarrierLookup(
        s.carrier_lookup_url,
        s.carrier_lookup_sid,
        s.carrier_lookup_token,
        timeout_s=s.carrier_lookup_timeout_s,
        retries=s.carrier_lookup_retries,
    )
    p.closers.append(live.aclose)
    providers: dict[str, Provider] = {"test": Sandbox(slow_delay_s=s.sandbox_slow_ms / 1000), "live": live}
    names = PhoneTopics(p.settings.topic_prefix)
    config = PhoneProcessorConfig(requested_topic=names.requested, completed_topic=names.completed)
    processor = PhoneProcessor(p.db, providers, p.publish, config)
    p.broker.include_router(phone_router(processor, prefix=p.settings.topic_prefix))
    sweeper = Sweeper(
        p.db,
        phone_outbox(config),
        p.publish,
        after=timedelta(seconds=p.settings.sweep_after_s),
        ensure_topics=p.ensure_topics,
        timeout_s=p.settings.publish_timeout_s,
    )
    return [sweeping(sweeper, p.settings.sweep_every_s)]


async def demo(db: Database, data_dir: Path, _settings: PhoneSettings) -> list[tuple[str, str]]:
    """First run: a demo tenant and its sandbox key, kept in the data directory so later runs can print it again."""
    path = data_dir / "demo-sandbox-key"
    key = secrets.read(path)
    if key is None:
        key = (await db.write(_demo_tenant))[1]
        secrets.keep(path, key)
    return [("sandbox key", key)]


def _demo_tenant(connection: Connection) -> tuple[str, str]:
    return tenants.create_key(connection, tenants.create_tenant(connection, "demo"), "test")


def example(base: str, demo_lines: list[tuple[str, str]]) -> str:
    key = dict(demo_lines)["sandbox key"]
    return (
        f"curl -s {base}/v1/verify -H 'Authorization: Bearer {key}' -H 'Idempotency-Key: try-1' \\\n"
        f"    -H 'Content-Type: application/json' \\\n"
        f'    -d \'{{"phone": "+14155550100", "name": "John Smith", "subject_type": "person"}}\''
    )


# Operator commands: `signalyard tenants|keys|prices|requests ...`


def commands(parent: Any, command: Callable[..., Any], with_db: WithDb) -> None:
    @with_db
    async def tenants_create(db: Database, args: argparse.Namespace) -> None:
        tenant_id = await db.write(
            tenants.create_tenant, args.name, skus=args.sku, spend_cap_microdollars=args.spend_cap_microdollars
        )
        print(tenant_id)

    def tenant_update(**values: object) -> Callable[..., Awaitable[Any]]:
        @with_db
        async def run(db: Database, args: argparse.Namespace) -> None:
            if not await db.write(tenants.update_tenant, args.tenant_id, **values):
                raise LookupError(f"no tenant {args.tenant_id}")
            print(f"tenant {args.tenant_id}: {values}")

        return run

    @with_db
    async def tenants_set_cap(db: Database, args: argparse.Namespace) -> None:
        if not await db.write(tenants.update_tenant, args.tenant_id, spend_cap_microdollars=args.microdollars):
            raise LookupError(f"no tenant {args.tenant_id}")
        print(f"tenant {args.tenant_id}: monthly spend cap {args.microdollars} microdollars")

    @with_db
    async def tenants_list(db: Database, _: argparse.Namespace) -> None:
        for tenant in await db.read(tenants.list_tenants):
            print(f"{tenant.id}\t{tenant.status}\t{tenant.name}")

    @with_db
    async def keys_create(db: Database, args: argparse.Namespace) -> None:
        scopes = list(dict.fromkeys(args.scope)) if args.scope else None
        _, key = await db.write(tenants.create_key, args.tenant, args.env, scopes)
        print(key)

    @with_db
    async def keys_revoke(db: Database, args: argparse.Namespace) -> None:
        if not await db.write(tenants.revoke_key, args.key):
            raise LookupError("no such active key")
        print("revoked")

    @with_db
    async def prices_set(db: Database, args: argparse.Namespace) -> None:
        await db.write(tenants.set_price, args.tenant, args.sku, args.microdollars)
        print(f"{args.sku} for tenant {args.tenant}: {args.microdollars} microdollars")

    @with_db
    async def requests_reconcile(db: Database, args: argparse.Namespace) -> None:
        state = await reconcile(db, args.request_id, args.outcome)
        print(f"request {args.request_id}: {state}")

    tenant_commands = parent.add_parser("tenants", help="phone: create, suspend or reactivate tenants")
    tenant_commands = tenant_commands.add_subparsers(required=True, metavar="ACTION")
    create = command("create", tenants_create, "create a tenant and print its id", tenant_commands)
    create.add_argument("name")
    create.add_argument("--sku", action="append", help="a SKU the tenant may use (repeatable; default: all)")
    create.add_argument("--spend-cap-microdollars", type=int, help="monthly spend cap per environment")
    for action, status in (("suspend", "suspended"), ("activate", "active")):
        command(action, tenant_update(status=status), f"{action} a tenant", tenant_commands).add_argument("tenant_id")
    cap = command("set-cap", tenants_set_cap, "set a tenant's monthly spend cap", tenant_commands)
    cap.add_argument("tenant_id")
    cap.add_argument("microdollars", type=int)
    command("list", tenants_list, "list tenants", tenant_commands)

    key_commands = parent.add_parser("keys", help="phone: create or revoke API keys")
    key_commands = key_commands.add_subparsers(required=True, metavar="ACTION")
    key = command("create", keys_create, "create a key and print it (alone) on stdout", key_commands)
    key.add_argument("--tenant", required=True)
    key.add_argument("--env", required=True, choices=["test", "live"])
    key.add_argument(
        "--scope",
        action="extend",
        nargs="+",
        choices=tenants.ALL_SCOPES,
        metavar="SCOPE",
        help=f"one or more of {', '.join(tenants.ALL_SCOPES)} (repeatable); default: all",
    )
    command("revoke", keys_revoke, "revoke a key (by key or key id)", key_commands).add_argument("key")

    price_commands = parent.add_parser("prices", help="phone: set prices")
    price_commands = price_commands.add_subparsers(required=True, metavar="ACTION")
    price = command("set", prices_set, "set a tenant's unit price for a SKU", price_commands)
    price.add_argument("--tenant", required=True)
    price.add_argument("--sku", default="core_phone")
    price.add_argument("--microdollars", type=int, required=True)

    request_commands = parent.add_parser("requests", help="phone: operator actions on requests")
    request_commands = request_commands.add_subparsers(required=True, metavar="ACTION")
    rec = command("reconcile", requests_reconcile, "resolve a pending_reconciliation request", request_commands)
    rec.add_argument("request_id")
    rec.add_argument("--outcome", required=True, choices=RECONCILE_OUTCOMES)


SERVICE = Service(
    name="phone",
    title="phone API",
    api="/v1",
    settings=PhoneSettings,
    channels=phone_topics.channels,
    port=lambda s: s.port,
    gateway=gateway,
    processors=processors,
    commands=commands,
    demo=demo,
    example=example,
)
