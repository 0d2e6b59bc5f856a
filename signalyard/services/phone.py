"""The phone verification service's wiring (docs/phone.md): its topics, gateway, processors and first-run demo tenant;
`signalyard/registry/phone.py` describes it to the CLI, `signalyard/tasks/phone.py` holds its operator tasks."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

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
from processors.phone.service import PhoneProcessor, PhoneProcessorConfig, phone_outbox
from signalyard import secrets
from signalyard.bootstrap import Background, Platform, sweeping
from signalyard.registry.phone import PhoneSettings
from signalyard.service import Wiring
from storage.common.db import Database
from storage.phone import requests, tenants
from topics import phone as phone_topics
from topics.phone import PhoneTopics, VerificationRequested, partition_key


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


WIRING = Wiring(
    channels=phone_topics.channels,
    gateway=gateway,
    processors=processors,
    demo=demo,
    example=example,
)
