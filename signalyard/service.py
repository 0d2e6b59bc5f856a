"""What a service is to the launcher: a light description the CLI is built from (name, settings, operator commands),
and its wiring (topics, gateway, processors, demo, operator tasks), imported only when a command runs it."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the wiring's types: importing them here would put the whole stack on `signalyard --help`'s path
    from litestar.types import ASGIApp

    from signalyard.bootstrap import Background, Platform
    from storage.common.db import Database
    from topics.common.asyncapi import Channel

Task = Callable[["Database", argparse.Namespace], Awaitable[None]]
"""An operator task on the database: the body of an operator command (`signalyard tenants create ...`)."""

Command = Callable[..., argparse.ArgumentParser]
"""command(name, run, help, parent) -> the command's parser: `run` names a task of the service's wiring."""


@dataclass(frozen=True)
class Wiring:
    """The heavy parts of a service, in `signalyard/services/<name>.py` as `WIRING`."""

    channels: Callable[[str], Mapping[str, Channel]]
    """topic prefix -> its topics (name -> message type and description): created at start, in the AsyncAPI doc."""
    gateway: Callable[[Platform, Any], ASGIApp]
    """The gateway app; its result subscriptions are added to the platform's broker (started afterwards)."""
    processors: Callable[[Platform, Any], list[Background]]
    """Subscribes its processors on the platform's broker; returns the tasks to run beside them (sweepers...)."""
    demo: Callable[[Database, Path, Any], Awaitable[list[tuple[str, str]]]]
    """First run of `up`: create a demo account; returns banner lines (label, value) such as its sandbox key."""
    example: Callable[[str, list[tuple[str, str]]], str]
    """base URL, demo lines -> a ready-to-paste request for the banner."""


@dataclass(frozen=True)
class Service:
    """A service as `signalyard/registry/<name>.py` describes it: what the CLI needs, nothing heavier."""

    name: str
    """As in `signalyard gateway NAME`, `signalyard processors NAME` and `signalyard up --services NAME`."""
    title: str
    api: str
    """The API's root path on its gateway, for the banner (`/v1`)."""
    settings: type[Any]
    """Its settings group (a dataclass of `signalyard.settings.setting` fields), with a `port` for its gateway."""
    commands: Callable[[Any, Command], None]
    """Adds its operator commands to the CLI: commands(subparsers, command); see `signalyard.cli`."""
    wiring: str
    """The module holding its `WIRING`."""
    tasks: str
    """The module holding its operator tasks (`TASKS`, by the name its commands give): lighter than the wiring, so
    that an operator command loads the database's code alone."""

    @functools.cached_property
    def parts(self) -> Wiring:
        wiring: Wiring = importlib.import_module(self.wiring).WIRING
        return wiring

    def task(self, name: str) -> Task:
        """The operator task its command `name` runs."""
        tasks: Mapping[str, Task] = importlib.import_module(self.tasks).TASKS
        return tasks[name]

    def port(self, group: Any) -> int:
        """The port its gateway listens on."""
        return int(group.port)

    @property
    def port_variable(self) -> str:
        """The environment variable that sets `port`."""
        return next(spec.metadata["env"] for spec in dataclasses.fields(self.settings) if spec.name == "port")

    def channels(self, prefix: str) -> Mapping[str, Channel]:
        return self.parts.channels(prefix)

    def gateway(self, p: Platform, group: Any) -> ASGIApp:
        return self.parts.gateway(p, group)

    def processors(self, p: Platform, group: Any) -> list[Background]:
        return self.parts.processors(p, group)


def topics_of(services: Sequence[Service], prefix: str) -> list[str]:
    """Every topic of these services under `prefix`: what a process running them creates when missing."""
    return [name for service in services for name in service.channels(prefix)]
