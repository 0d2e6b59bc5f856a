"""`signalyard --help` and every command's help: printed at once (no broker, database or image library is imported
to print them), and saying what each argument wants."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from signalyard import cli

HEAVY = [
    "aiokafka",
    "faststream",
    "sqlalchemy",
    "asyncpg",
    "aiosqlite",
    "alembic",
    "PIL",
    "mediapipe",
    "numpy",
    "cv2",
    "litestar",
    "uvicorn",
    "phonenumbers",
    "boto3",
]


def command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and sub-command, as the words a user types: ("up",), ("keys", "create"), ..."""
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += command_paths(sub, (*path, name))
    return found


PROBE = """
import contextlib, io, json, sys
from signalyard import cli

heavy, paths = json.loads(sys.argv[1]), json.loads(sys.argv[2])
report = []
for path in paths:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main([*path, "--help"])
            status = None
        except SystemExit as exit:
            status = exit.code
    loaded = sorted({name.split(".")[0] for name in sys.modules} & set(heavy))
    report.append({"path": path, "status": status, "help": out.getvalue(), "loaded": loaded})
print(json.dumps(report))
"""


def test_the_help_of_every_command_imports_no_broker_database_or_image_library() -> None:
    paths = command_paths(cli.parser())
    assert ("keys", "create") in paths
    assert ("customers", "set-plan") in paths
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), json.dumps(paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    for shown in json.loads(probe.stdout):
        words = " ".join(["signalyard", *shown["path"]])
        assert shown["status"] == 0, words
        assert shown["help"].startswith(f"usage: {words}"), shown["help"]
        assert shown["loaded"] == [], f"`{words} --help` imported {shown['loaded']}"


def test_every_argument_says_what_it_wants() -> None:
    for path in command_paths(cli.parser()):
        parser = cli.parser()
        for word in path:
            parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"signalyard {' '.join(path)}: {action.dest} has no help"


def test_the_help_names_tenant_ids_environments_defaults_and_plans() -> None:
    def help_of(*words: str) -> str:
        parser = cli.parser()
        for word in words:
            parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
        return " ".join(parser.format_help().split())

    assert "--tenant TENANT_ID the key's owner: a tenant's id" in help_of("keys", "create")
    assert "--env {test,live}" in help_of("keys", "create")
    assert "(default: core_phone)" in help_of("prices", "set")
    plans = help_of("customers", "set-plan")
    for plan in ("starter (1,000 live verifications a month)", "growth (10,000", "scale (100,000"):
        assert plan in plans
    assert "the services to start, comma-separated: phone, photo, helpdesk (default: all of them)" in help_of("up")


def test_up_refuses_an_unknown_service_naming_the_choices() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "signalyard.cli", "up", "--services", "phone,inbox"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.endswith(
        "signalyard up: error: argument --services: unknown service 'inbox' (choose from phone, photo, helpdesk)\n"
    )


def test_storage_says_what_every_kind_of_helpdesk_channel_the_cli_names_is_made_of() -> None:
    """The CLI names the kinds of topics.helpdesk.inbound (the help imports no database driver); storage describes
    each of them."""
    from signalyard.registry.helpdesk import CHANNEL_KINDS
    from storage.helpdesk.channels import KINDS

    assert list(KINDS) == list(CHANNEL_KINDS)
