"""What each command of `signalyard` runs: imported by `signalyard.cli` only once a command runs. The commands that
start processes import `signalyard.bootstrap` (the broker's client, the servers) when they run: an operator task
loads only the database's code (signalyard/tasks/)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import msgspec
import structlog
import uvloop
from prometheus_client import start_http_server

from signalyard import logs
from signalyard.database import database_url
from signalyard.exits import INTERRUPTED, PORT_UNAVAILABLE, PROCESSORS_EXITED, USAGE, PortUnavailable
from signalyard.registry import SERVICES
from signalyard.service import Task, topics_of
from signalyard.settings import Settings
from storage.common.db import Database, SchemaOutOfDate, check_schema, migrate
from topics.common.asyncapi import asyncapi_document

if TYPE_CHECKING:
    from signalyard.bootstrap import Platform, ProcessorsProcess

log = structlog.get_logger("signalyard")
VERSION = "2026-11"


def run(args: argparse.Namespace, settings: Settings) -> int:
    logs.configure(settings.platform.log_level)
    command = _with_db(SERVICES[args.owner].task(args.run)) if args.owner else RUNS[args.run]
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(command(settings, args)) or 0
    except (KeyboardInterrupt, asyncio.CancelledError):
        return INTERRUPTED
    except PortUnavailable as error:
        print(f"signalyard: {error}", file=sys.stderr)
        return PORT_UNAVAILABLE
    except (LookupError, ValueError, SchemaOutOfDate) as error:
        print(f"signalyard: {error}", file=sys.stderr)
        return USAGE


async def up(settings: Settings, args: argparse.Namespace) -> int | None:
    """Everything on one machine: embedded broker (unless configured), SQLite (unless configured), each chosen
    service's gateway in this process and its processors in a child process. If a child dies, everything stops."""
    from signalyard import bootstrap
    from signalyard.bootstrap import Listener

    stop = bootstrap.Stop()
    p_settings = settings.platform
    services = [SERVICES[name] for name in args.services]
    # The ports first: one in use stops `up` before anything is started.
    sockets = [
        bootstrap.listen(p_settings.host, service.port(settings.services[service.name]), service.port_variable)
        for service in services
    ]
    print(f"signalyard: starting {', '.join(args.services)}", flush=True)
    async with (
        # The broker and the schema, then the children at once: they import their code and join their consumer
        # groups while this process imports the services' wiring and sets up the gateways.
        bootstrap.platform(p_settings, [], upgrade=True) as p,
        bootstrap.processors_children(p, args.services) as children,
    ):
        p.topics = topics_of(services, p_settings.topic_prefix)
        await p.ensure_topics()
        listeners, lines = [], []
        for service, sock in zip(services, sockets, strict=True):
            group = settings.services[service.name]
            listeners.append(Listener(service.gateway(p, group), sock))
            demo = await service.parts.demo(p.db, p_settings.data_dir, group)
            lines.append((service, listeners[-1].url, demo))
        await p.broker.start()
        bootstrap.freeze_startup_heap()
        async with bootstrap.serving(listeners):
            exited = asyncio.ensure_future(bootstrap.first_exit(children))
            ready = asyncio.gather(*(child.ready() for child in children))
            try:
                # The banner promises a first request answered at once: it waits for every processors child.
                await bootstrap.first_of(ready, exited)
                if not exited.done():
                    print(_banner(p, lines, children), flush=True)
                    await bootstrap.first_of(stop.requested(), exited)
            finally:
                died = exited.done() and not exited.cancelled()
                exited.cancel()
                ready.cancel()
        if died:
            service_name, status = exited.result()
            log.error("processors_exited", service=service_name, status=status)
            return PROCESSORS_EXITED
        return None


def _banner(p: Platform, lines: list[Any], children: list[ProcessorsProcess]) -> str:
    banner = [f"signalyard is up (broker {p.bootstrap}, database {p.db.engine.url.render_as_string()})"]
    for (service, base, demo), child in zip(lines, children, strict=True):
        banner.append(f"  {service.title:<14} {base}{service.api}  (OpenAPI docs {base}/docs)")
        banner.append(f"  {'':<14} metrics {base}/metrics (gateway), {child.metrics_url} (processors)")
        banner.extend(f"  {'':<14} {label} {value}" for label, value in demo)
    banner.append("Try:")
    banner.extend(f"  {service.parts.example(base, demo)}" for service, base, demo in lines)
    banner.append("Ctrl-C stops everything.")
    return "\n".join(banner)


async def gateway(settings: Settings, args: argparse.Namespace) -> None:
    from signalyard import bootstrap
    from signalyard.bootstrap import Listener

    stop = bootstrap.Stop()
    service, group = SERVICES[args.service], settings.services[args.service]
    sock = bootstrap.listen(settings.platform.host, service.port(group), service.port_variable)
    async with bootstrap.platform(settings.platform, topics_of([service], settings.platform.topic_prefix)) as p:
        listener = Listener(service.gateway(p, group), sock)
        await p.broker.start()
        bootstrap.freeze_startup_heap()
        async with bootstrap.serving([listener]):
            log.info("gateway_started", service=service.name, url=listener.url)
            await stop.requested()


async def processors(settings: Settings, args: argparse.Namespace) -> None:
    from signalyard import bootstrap

    stop = bootstrap.Stop()
    service, group = SERVICES[args.service], settings.services[args.service]
    async with bootstrap.platform(settings.platform, topics_of([service], settings.platform.topic_prefix)) as p:
        await p.broker.start()
        background = service.processors(p, group)
        await p.consume()  # returns once every consumer group is joined
        bootstrap.freeze_startup_heap()
        port, ready = settings.platform.processor_metrics_port, os.environ.get(bootstrap.READY_FD)
        if port or ready:
            # Opened last: as `signalyard up` starts a child, the port it got (any free one, unless set) tells it that
            # the processors consume.
            try:
                server, _ = start_http_server(port or 0, addr=settings.platform.host)
            except OSError:
                raise PortUnavailable(
                    f"port {port} is in use; set SIGNALYARD_PROCESSOR_METRICS_PORT to another port"
                ) from None
            if ready:
                with os.fdopen(int(ready), "w") as parent:
                    parent.write(f"{server.server_port}\n")
        log.info("processors_started", service=service.name)
        running = bootstrap.run_background(background)
        try:
            await stop.requested()
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)


async def run_migrate(settings: Settings, _: argparse.Namespace) -> None:
    await asyncio.to_thread(migrate, database_url(settings.platform))
    print("database is at the newest schema")


def _with_db(task: Task) -> Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, Any]]:
    """An operator task on the database, which must be at the newest schema."""

    async def run(settings: Settings, args: argparse.Namespace) -> Any:
        url = database_url(settings.platform)
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


RUNS: dict[str, Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, Any]]] = {
    "up": up,
    "gateway": gateway,
    "processors": processors,
    "migrate": run_migrate,
    "asyncapi": print_asyncapi,
}
"""What each built-in command of `signalyard.cli` runs, by the name its parser gives."""
