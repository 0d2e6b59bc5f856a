"""The `signalyard` console script: run everything, run one part, or do an operator task. The parser is built from
light modules only, so that `--help` answers at once; what a command runs is imported when it runs."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from signalyard.exits import INTERRUPTED, USAGE
from signalyard.registry import SERVICES
from signalyard.service import Command
from signalyard.settings import SettingError, load_settings


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings(os.environ, {name: service.settings for name, service in SERVICES.items()})
    except SettingError as error:
        print(f"signalyard: {error}", file=sys.stderr)
        return USAGE
    # Importing the stack takes seconds and starts nothing: a signal meanwhile ends the process at once (Python's
    # KeyboardInterrupt could be swallowed by some library's `except:` around an import, and the start go on).
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_at_once)
    from signalyard import commands  # the whole stack: only now that a command runs

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return commands.run(args, settings)


def _exit_at_once(_signum: int, _frame: object) -> None:
    os._exit(INTERRUPTED)


def services(raw: str) -> list[str]:
    """`--services phone,photo`: registered names, in the registry's order."""
    names = [name.strip() for name in raw.split(",") if name.strip()]
    unknown = [name for name in names if name not in SERVICES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown service {', '.join(map(repr, unknown)) or repr(raw)} (choose from {', '.join(SERVICES)})"
        )
    return [name for name in SERVICES if name in names]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="signalyard",
        description="Run everything, run one part, or do an operator task.",
        epilog="Settings are environment variables (SIGNALYARD_...), listed in docs/operations.md.",
    )
    subparsers = top.add_subparsers(required=True, metavar="COMMAND")

    def adder(owner: str | None) -> Command:
        """command(name, run, help, parent): `run` names what `signalyard.commands` runs (with `owner`, a task of
        that service's wiring)."""

        def command(name: str, run: str, help_text: str, parent: Any = subparsers) -> argparse.ArgumentParser:
            sub: argparse.ArgumentParser = parent.add_parser(name, help=help_text, description=help_text)
            sub.set_defaults(run=run, owner=owner)
            return sub

        return command

    command, names = adder(None), list(SERVICES)
    up = command("up", "up", "start everything on embedded defaults (broker, SQLite, gateways, processors)")
    up.add_argument(
        "--services",
        type=services,
        default=names,
        metavar="NAME[,NAME...]",
        help=f"the services to start, comma-separated: {', '.join(names)} (default: all of them)",
    )
    what = "the service: " + ", ".join(names)
    command("gateway", "gateway", "run one service's gateway").add_argument("service", choices=names, help=what)
    command("processors", "processors", "run one service's processors").add_argument(
        "service", choices=names, help=what
    )
    command("migrate", "migrate", "bring the database schema to the newest version")
    command("asyncapi", "asyncapi", "print the AsyncAPI document of every service's topics")
    for service in SERVICES.values():
        service.commands(subparsers, adder(service.name))
    return top


if __name__ == "__main__":
    sys.exit(main())
