"""The `signalyard` console script: run everything, run one part, or do an operator task."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog
import uvloop
from prometheus_client import start_http_server

from signalyard import bootstrap, logs
from signalyard.bootstrap import Listener
from signalyard.service import topics_of
from signalyard.services import SERVICES
from signalyard.settings import SettingError, Settings, load_settings
from storage.common.db import Database, SchemaOutOfDate, check_schema, migrate
from topics.common.asyncapi import asyncapi_document

log = structlog.get_logger("signalyard")
VERSION = "2026-11"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings(os.environ, {name: service.settings for name, service in SERVICES.items()})
    except SettingError as error:
        print(f"signalyard: {error}", file=sys.stderr)
        return 2
    logs.configure(settings.platform.log_level)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(args.run(settings, args)) or 0
    except KeyboardInterrupt:
        return 130
    except (LookupError, ValueError, SchemaOutOfDate) as error:
        print(f"signalyard: {error}", file=sys.stderr)
        return 2


async def up(settings: Settings, _: argparse.Namespace) -> int | None:
    """Everything on one machine: embedded broker (unless configured), SQLite (unless configured), every registered
    service's gateway in this process and its processors in a child process. If a child dies, everything stops."""
    p_settings = settings.platform
    services = list(SERVICES.values())
    async with bootstrap.platform(p_settings, topics_of(services, p_settings.topic_prefix), upgrade=True) as p:
        listeners, lines = [], []
        for service in services:
            group = settings.services[service.name]
            listeners.append(Listener(service.gateway(p, group), p_settings.host, service.port(group)))
            base = f"http://{p_settings.host}:{service.port(group)}"
            demo = await service.demo(p.db, p_settings.data_dir, group)
            lines.append((service, base, demo))
        await p.broker.start()
        children = [bootstrap.ProcessorsProcess(p, service.name) for service in services]
        for child in children:
            await child.start()
        bootstrap.freeze_startup_heap()
        banner = [f"signalyard is up (broker {p.bootstrap}, database {p.db.engine.url.render_as_string()})"]
        for (service, base, demo), child in zip(lines, children, strict=True):
            banner.append(f"  {service.title:<14} {base}{service.api}  (OpenAPI docs {base}/docs)")
            banner.append(f"  {'':<14} metrics {base}/metrics (gateway), {child.metrics_url} (processors)")
            banner.extend(f"  {'':<14} {label} {value}" for label, value in demo)
        banner.append("Try:")
        banner.extend(f"  {service.example(base, demo)}" for service, base, demo in lines)
        banner.append("Ctrl-C stops everything.")
        exited = asyncio.ensure_future(bootstrap.first_exit(children))
        try:
            await bootstrap.serve(listeners, lambda: print("\n".join(banner), flush=True), exited)
        finally:
            died = exited.done() and not exited.cancelled()
            exited.cancel()
            for child in children:
                await child.stop()
        if died:
            service_name, status = exited.result()
            log.error("processors_exited", service=service_name, status=status)
            return 1
        return None


async def run_gateway(settings: Settings, args: argparse.Namespace) -> None:
    service, group = SERVICES[args.service], settings.services[args.service]
    async with bootstrap.platform(settings.platform, topics_of([service], settings.platform.topic_prefix)) as p:
        app = service.gateway(p, group)
        await p.broker.start()
        bootstrap.freeze_startup_heap()
        url = f"http://{settings.platform.host}:{service.port(group)}"
        log.info("gateway_started", service=service.name, url=url)
        await bootstrap.serve([Listener(app, settings.platform.host, service.port(group))])


async def run_processors(settings: Settings, args: argparse.Namespace) -> None:
    service, group = SERVICES[args.service], settings.services[args.service]
    async with bootstrap.platform(settings.platform, topics_of([service], settings.platform.topic_prefix)) as p:
        background = service.processors(p, group)
        await p.broker.start()
        bootstrap.freeze_startup_heap()
        if settings.platform.processor_metrics_port:
            start_http_server(settings.platform.processor_metrics_port, addr=settings.platform.host)
        log.info("processors_started", service=service.name)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        running = bootstrap.run_background(background)
        await stop.wait()
        for task in running:
            task.cancel()


async def run_migrate(settings: Settings, _: argparse.Namespace) -> None:
    await asyncio.to_thread(migrate, bootstrap.database_url(settings.platform))
    print("database is at the newest schema")


def _with_db(task: Callable[[Database, argparse.Namespace], Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """An operator task on the database, which must be at the newest schema."""

    async def run(settings: Settings, args: argparse.Namespace) -> Any:
        url = bootstrap.database_url(settings.platform)
        await asyncio.to_thread(check_schema, url)
        db = Database(url)
        try:
            return await task(db, args)
        finally:
            await db.dispose()

    return run


async def print_asyncapi(settings: Settings, _: argparse.Namespace) -> None:
    channels = {
        name: channel
        for service in SERVICES.values()
        for name, channel in service.channels(settings.platform.topic_prefix).items()
    }
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(asyncapi_document(channels, VERSION)).decode()))
    sys.stdout.write("\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="signalyard", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(name: str, run: Callable[..., Awaitable[Any]], help_text: str, parent: Any = commands) -> Any:
        sub = parent.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    names = list(SERVICES)
    command("up", up, "start everything on embedded defaults (broker, SQLite, gateways, processors)")
    command("gateway", run_gateway, "run one service's gateway").add_argument("service", choices=names)
    command("processors", run_processors, "run one service's processors").add_argument("service", choices=names)
    command("migrate", run_migrate, "bring the database schema to the newest version")
    command("asyncapi", print_asyncapi, "print the AsyncAPI document of every service's topics")
    for service in SERVICES.values():
        service.commands(commands, command, _with_db)
    return parser


if __name__ == "__main__":
    sys.exit(main())
