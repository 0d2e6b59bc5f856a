"""The `signalyard` console script: run everything, run one part, or do an operator task."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog
import uvloop
from prometheus_client import start_http_server

from processors.phone.service import RECONCILE_OUTCOMES, reconcile
from signalyard import bootstrap, logs
from signalyard.settings import Settings
from storage import tenants
from storage.db import Database, migrate
from storage.models import Tenant
from topics.asyncapi import asyncapi_document

log = structlog.get_logger("signalyard")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = Settings()
    logs.configure(settings.log_level)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(args.run(settings, args)) or 0
    except KeyboardInterrupt:
        return 130
    except (LookupError, ValueError) as error:
        print(f"signalyard: {error}", file=sys.stderr)
        return 2


async def up(settings: Settings, _: argparse.Namespace) -> int | None:
    """Everything on one machine: embedded broker (unless configured), SQLite (unless configured), the phone
    gateway in this process and the phone processors in a child process. If the child dies, everything stops."""
    async with bootstrap.platform(settings) as p:
        demo_key = await _demo_key(settings, p.db)
        app = bootstrap.phone_gateway(p)
        await p.broker.start()
        processors = bootstrap.ProcessorsProcess(p)
        await processors.start()
        bootstrap.freeze_startup_heap()
        base = f"http://{settings.host}:{settings.phone_port}"
        banner = (
            f"signalyard is up (broker {p.bootstrap}, database {p.db.engine.url.render_as_string()})\n"
            f"  phone API      {base}/v1\n"
            f"  OpenAPI docs   {base}/docs\n"
            f"  metrics        {base}/metrics (gateway), {processors.metrics_url} (processors)\n"
            f"  sandbox key    {demo_key}\n"
            f"Try:\n"
            f"  curl -s {base}/v1/verify -H 'Authorization: Bearer {demo_key}' -H 'Idempotency-Key: try-1' \\\n"
            f"    -H 'Content-Type: application/json' \\\n"
            f'    -d \'{{"phone": "+14155550100", "name": "John Smith", "subject_type": "person"}}\'\n'
            f"Ctrl-C stops everything."
        )
        exited = asyncio.ensure_future(processors.exited())
        try:
            await bootstrap.serve(app, settings.host, settings.phone_port, lambda: print(banner, flush=True), exited)
        finally:
            died = exited.done()
            exited.cancel()
            await processors.stop()
        if died:
            log.error("processors_exited", status=exited.result())
            return 1
        return None


async def _demo_key(settings: Settings, db: Database) -> str:
    """First run: a demo tenant and its sandbox key, kept in the data directory so later runs can print it again."""
    path = settings.data_dir / "demo-sandbox-key"
    if path.exists():
        return path.read_text().strip()
    async with db.write() as session:
        tenant_id = await tenants.create_tenant(session, "demo")
        _, key = await tenants.create_key(session, tenant_id, "test")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(key + "\n")
    path.chmod(0o600)
    return key


async def run_gateway(settings: Settings, args: argparse.Namespace) -> None:
    async with bootstrap.platform(settings) as p:
        app = bootstrap.phone_gateway(p)
        await p.broker.start()
        bootstrap.freeze_startup_heap()
        log.info("gateway_started", service=args.service, url=f"http://{settings.host}:{settings.phone_port}/v1")
        await bootstrap.serve(app, settings.host, settings.phone_port)


async def run_processors(settings: Settings, args: argparse.Namespace) -> None:
    async with bootstrap.platform(settings) as p:
        processor = bootstrap.phone_processor(p)
        await p.broker.start()
        bootstrap.freeze_startup_heap()
        if settings.processor_metrics_port:
            start_http_server(settings.processor_metrics_port, addr=settings.host)
        log.info("processors_started", service=args.service)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        import signal

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        sweeper = asyncio.create_task(bootstrap.sweep_forever(processor, settings.sweep_every_s))
        await stop.wait()
        sweeper.cancel()


async def run_migrate(settings: Settings, _: argparse.Namespace) -> None:
    await asyncio.to_thread(migrate, bootstrap.database_url(settings))
    print("database is at the newest schema")


def _with_db(task: Callable[[Database, argparse.Namespace], Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def run(settings: Settings, args: argparse.Namespace) -> Any:
        url = bootstrap.database_url(settings)
        await asyncio.to_thread(migrate, url)
        db = Database(url)
        try:
            return await task(db, args)
        finally:
            await db.dispose()

    return run


@_with_db
async def tenants_create(db: Database, args: argparse.Namespace) -> None:
    async with db.write() as session:
        tenant_id = await tenants.create_tenant(
            session, args.name, skus=args.sku, spend_cap_microdollars=args.spend_cap_microdollars
        )
    print(tenant_id)


def _tenant_update(**values: object) -> Callable[..., Awaitable[Any]]:
    @_with_db
    async def run(db: Database, args: argparse.Namespace) -> None:
        async with db.write() as session:
            if not await tenants.update_tenant(session, args.tenant_id, **values):
                raise LookupError(f"no tenant {args.tenant_id}")
        print(f"tenant {args.tenant_id}: {values}")

    return run


@_with_db
async def tenants_set_cap(db: Database, args: argparse.Namespace) -> None:
    async with db.write() as session:
        if not await tenants.update_tenant(session, args.tenant_id, spend_cap_microdollars=args.microdollars):
            raise LookupError(f"no tenant {args.tenant_id}")
    print(f"tenant {args.tenant_id}: monthly spend cap {args.microdollars} microdollars")


@_with_db
async def tenants_list(db: Database, _: argparse.Namespace) -> None:
    from sqlalchemy import select

    async with db.read() as session:
        for tenant in await session.scalars(select(Tenant).order_by(Tenant.created_at)):
            print(f"{tenant.id}\t{tenant.status}\t{tenant.name}")


@_with_db
async def keys_create(db: Database, args: argparse.Namespace) -> None:
    async with db.write() as session:
        _, key = await tenants.create_key(session, args.tenant, args.env, args.scope)
    print(key)


@_with_db
async def keys_revoke(db: Database, args: argparse.Namespace) -> None:
    async with db.write() as session:
        if not await tenants.revoke_key(session, args.key):
            raise LookupError("no such active key")
    print("revoked")


@_with_db
async def prices_set(db: Database, args: argparse.Namespace) -> None:
    async with db.write() as session:
        await tenants.set_price(session, args.tenant, args.sku, args.microdollars)
    print(f"{args.sku} for tenant {args.tenant}: {args.microdollars} microdollars")


@_with_db
async def requests_reconcile(db: Database, args: argparse.Namespace) -> None:
    state = await reconcile(db, args.request_id, args.outcome)
    print(f"request {args.request_id}: {state}")


async def print_asyncapi(settings: Settings, _: argparse.Namespace) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(asyncapi_document(settings.topic_prefix)).decode()))
    sys.stdout.write("\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="signalyard", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(name: str, run: Callable[..., Awaitable[Any]], help_text: str, parent: Any = commands) -> Any:
        sub = parent.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    command("up", up, "start everything on embedded defaults (broker, SQLite, gateways, processors)")
    command("gateway", run_gateway, "run one gateway").add_argument("service", choices=["phone"])
    command("processors", run_processors, "run one service's processors").add_argument("service", choices=["phone"])
    command("migrate", run_migrate, "bring the database schema to the newest version")
    command("asyncapi", print_asyncapi, "print the AsyncAPI document of the topics")

    tenant_commands = commands.add_parser("tenants", help="create, suspend or reactivate tenants").add_subparsers(
        required=True, metavar="ACTION"
    )
    create = command("create", tenants_create, "create a tenant and print its id", tenant_commands)
    create.add_argument("name")
    create.add_argument("--sku", action="append", help="a SKU the tenant may use (repeatable; default: all)")
    create.add_argument("--spend-cap-microdollars", type=int, help="monthly spend cap per environment")
    command("suspend", _tenant_update(status="suspended"), "suspend a tenant", tenant_commands).add_argument(
        "tenant_id"
    )
    command("activate", _tenant_update(status="active"), "reactivate a tenant", tenant_commands).add_argument(
        "tenant_id"
    )
    cap = command("set-cap", tenants_set_cap, "set a tenant's monthly spend cap", tenant_commands)
    cap.add_argument("tenant_id")
    cap.add_argument("microdollars", type=int)
    command("list", tenants_list, "list tenants", tenant_commands)

    key_commands = commands.add_parser("keys", help="create or revoke API keys").add_subparsers(
        required=True, metavar="ACTION"
    )
    key = command("create", keys_create, "create a key and print it (alone) on stdout", key_commands)
    key.add_argument("--tenant", required=True)
    key.add_argument("--env", required=True, choices=["test", "live"])
    key.add_argument("--scope", action="append", choices=list(tenants.ALL_SCOPES), help="repeatable; default: all")
    command("revoke", keys_revoke, "revoke a key (by key or key id)", key_commands).add_argument("key")

    price_commands = commands.add_parser("prices", help="set prices").add_subparsers(required=True, metavar="ACTION")
    price = command("set", prices_set, "set a tenant's unit price for a SKU", price_commands)
    price.add_argument("--tenant", required=True)
    price.add_argument("--sku", default="core_phone")
    price.add_argument("--microdollars", type=int, required=True)

    request_commands = commands.add_parser("requests", help="operator actions on requests").add_subparsers(
        required=True, metavar="ACTION"
    )
    rec = command("reconcile", requests_reconcile, "resolve a pending_reconciliation request", request_commands)
    rec.add_argument("request_id")
    rec.add_argument("--outcome", required=True, choices=RECONCILE_OUTCOMES)
    return parser


if __name__ == "__main__":
    sys.exit(main())
