"""What a service is to the launcher: everything needed to run it, described once in `signalyard/services/<name>.py`."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar.types import ASGIApp

from signalyard.bootstrap import Background, Platform
from storage.common.db import Database
from topics.common.asyncapi import Channel

WithDb = Callable[[Callable[[Database, argparse.Namespace], Awaitable[Any]]], Callable[..., Awaitable[Any]]]
"""What `Service.commands` gets to run an operator task on the database (`signalyard.cli`)."""


@dataclass(frozen=True)
class Service:
    name: str
    """As in `signalyard gateway NAME` and `signalyard processors NAME`."""
    title: str
    api: str
    """The API's root path on its gateway, for the banner (`/v1`)."""
    settings: type[Any]
    """Its settings group (a dataclass of `signalyard.settings.setting` fields)."""
    channels: Callable[[str], Mapping[str, Channel]]
    """topic prefix -> its topics (name -> message type and description): created at start, in the AsyncAPI doc."""
    port: Callable[[Any], int]
    """settings group -> the port its gateway listens on."""
    gateway: Callable[[Platform, Any], ASGIApp]
    """The gateway app; its result subscriptions are added to the platform's broker (started afterwards)."""
    processors: Callable[[Platform, Any], list[Background]]
    """Subscribes its processors on the platform's broker; returns the tasks to run beside them (sweepers...)."""
    commands: Callable[[Any, Callable[..., Any], WithDb], None]
    """Adds its operator commands to the CLI: commands(subparsers, command, with_db); see `signalyard.cli`."""
    demo: Callable[[Database, Path, Any], Awaitable[list[tuple[str, str]]]]
    """First run of `up`: create a demo account; returns banner lines (label, value) such as its sandbox key."""
    example: Callable[[str, list[tuple[str, str]]], str]
    """base URL, demo lines -> a ready-to-paste request for the banner."""


def topics_of(services: Sequence[Service], prefix: str) -> list[str]:
    """Every topic of these services under `prefix`: what a process running them creates when missing."""
    return [name for service in services for name in service.channels(prefix)]
