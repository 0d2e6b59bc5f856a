"""The signed examples of docs/helpdesk.md's "Inbound channels", run as written against `signalyard up`: each makes its
channel with the operator command, signs its call as its provider does, and is answered as the provider expects;
then the inbound processors have made every stored call into what the docs say, none `failed`."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx

from signalyard.embedded_broker import free_port
from tests.e2e.test_up import Up

DOC = Path(__file__).parents[2] / "docs" / "helpdesk.md"
EXAMPLES = {
    "helpdesk-inbound-email-a": '"status":"accepted"',
    "helpdesk-inbound-email-b": '"status":"accepted"',
    "helpdesk-inbound-email-c": '"status":"accepted"',
    "helpdesk-inbound-email-d": '"status":"accepted"',
    "helpdesk-inbound-sms": "<Response><Message>Thanks, we will text you back soon.</Message></Response>",
    "helpdesk-inbound-business": '"status":"accepted"',
    "helpdesk-inbound-voice": '"status":"accepted"',
    "helpdesk-inbound-commerce": '"status":"accepted"',
    "helpdesk-inbound-payments": '"status":"accepted"',
    "helpdesk-inbound-chat": '"status":"accepted"',
    "helpdesk-inbound-email-provider": '"status":"accepted"',
}
"""Each signed example, and what its answer says when the call was taken."""
STRIPE = {"STRIPE_WEBHOOK_SECRET": "whsec_docs_example", "STRIPE_CONNECT_WEBHOOK_SECRET": "whsec_docs_connect"}


def block(info: str) -> str:
    found = re.search(rf"^```{re.escape(info)}\n(.*?)^```$", DOC.read_text(), re.S | re.M)
    assert found, f"docs/helpdesk.md has no ```{info} block"
    return found.group(1)


def test_every_signed_inbound_example_is_taken_and_processed(tmp_path: Path) -> None:
    setup = shlex.split(block("sh helpdesk-inbound-payments-setup"))
    assert setup[-4:] == [".venv/bin/signalyard", "up", "--services", "helpdesk"]
    settings = {
        name: value.replace("$STRIPE_WEBHOOK_SECRET", STRIPE["STRIPE_WEBHOOK_SECRET"]).replace(
            "$STRIPE_CONNECT_WEBHOOK_SECRET", STRIPE["STRIPE_CONNECT_WEBHOOK_SECRET"]
        )
        for name, value in (word.split("=", 1) for word in setup[:-4])
    }
    shim = tmp_path / ".venv" / "bin" / "signalyard"
    shim.parent.mkdir(parents=True)
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m signalyard.cli "$@"\n')
    shim.chmod(0o755)
    port = free_port()
    (tmp_path / ".signalyard").mkdir()
    up = Up(
        tmp_path / ".signalyard", free_port(), settings | {"SIGNALYARD_HELPDESK_PORT": str(port)}, services="helpdesk"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")} | STRIPE
    try:
        for name, taken in EXAMPLES.items():
            script = block(f"sh {name}").replace("127.0.0.1:8003", f"127.0.0.1:{port}")
            run = subprocess.run(
                ["bash", "-ec", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert run.returncode == 0, f"{name}:\n{run.stdout}\n{run.stderr}"
            assert taken in run.stdout, f"{name} answered:\n{run.stdout}\n{run.stderr}"

        key = (tmp_path / ".signalyard" / "demo-helpdesk-key").read_text().strip()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}) as api:
            deadline = time.monotonic() + 60
            while True:
                messages = api.get("/api/v1/inbound-messages", params={"limit": 100}).json()["data"]
                if all(m["state"] == "processed" for m in messages) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            outcomes = {(m["provider"], m["outcome"]) for m in messages}
            assert all(m["state"] == "processed" for m in messages), outcomes
            assert not [o for o in outcomes if str(o[1]).startswith("failed")], outcomes
            providers = {m["provider"] for m in messages}
            assert {"email_a", "email_b", "email_c", "email_d", "sms", "voice", "chat"} <= providers, providers
            subjects = [t["subject"] for t in api.get("/api/v1/tickets", params={"limit": 100}).json()["data"]]
            assert subjects.count("Printer on fire") == 4, subjects
            assert "SMS from +15550100002" in subjects, subjects
    finally:
        assert up.ctrl_c() == 0
