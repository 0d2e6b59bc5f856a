"""The helpdesk walkthrough of docs/helpdesk.md, run as written against `signalyard up`: sign in by a link from the
development outbox, complete signup, a REST key with `tickets:write`, a subscription, a ticket through REST, its
events paged through the procedures, and its signed `ticket.created` delivery at the documented receiver; then as a
team: an agent invited and joined by the mailed link, their ticket and reply through the procedures, a second ticket
merged into it, a search that finds it by the reply, an inbound mail's attachment downloaded by its signed URL, a
reply to that mail sent through a local SMTP server and the customer's answer threaded back onto its ticket;
and the demo organization `up` makes on its first run, as its banner says."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from signalyard.embedded_broker import free_port
from tests.e2e.test_photo_readme import read_until
from tests.e2e.test_up import Up

DOC = Path(__file__).parents[2] / "docs" / "helpdesk.md"


def block(info: str) -> str:
    """The document's fenced block whose info string is `info` (e.g. ```sh helpdesk-try)."""
    found = re.search(rf"^```{re.escape(info)}\n(.*?)^```$", DOC.read_text(), re.S | re.M)
    assert found, f"docs/helpdesk.md has no ```{info} block"
    return found.group(1)


def test_the_helpdesk_walkthrough_signs_in_creates_a_ticket_and_delivers_it_signed(tmp_path: Path) -> None:
    *settings_words, venv_signalyard, up_word, services_flag, services = shlex.split(block("sh helpdesk-setup"))
    assert (venv_signalyard, up_word, services_flag, services) == (
        ".venv/bin/signalyard",
        "up",
        "--services",
        "helpdesk",
    )
    settings = dict(word.split("=", 1) for word in settings_words)
    # The walkthrough's `.venv/bin/signalyard` is this test's interpreter.
    shim = tmp_path / ".venv" / "bin" / "signalyard"
    shim.parent.mkdir(parents=True)
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m signalyard.cli "$@"\n')
    shim.chmod(0o755)
    python = shim.parent / "python"  # and `.venv/bin/python`, for the SMTP server it starts
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)

    helpdesk_port, receiver_port = free_port(), free_port()
    (tmp_path / ".signalyard").mkdir()
    up = Up(
        tmp_path / ".signalyard",
        free_port(),
        settings | {"SIGNALYARD_HELPDESK_PORT": str(helpdesk_port)},
        services="helpdesk",
    )
    (tmp_path / "receiver.py").write_text(block("python receiver.py").replace("9000", str(receiver_port)))
    script = block("sh helpdesk-try").replace("127.0.0.1:8003", f"127.0.0.1:{helpdesk_port}")
    script = script.replace("127.0.0.1:9000", f"127.0.0.1:{receiver_port}")
    walkthrough = subprocess.Popen(
        ["bash", "-ec", script],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")},
    )
    try:
        assert walkthrough.stdout is not None
        # The delivery may come before or after the events' page: both must come, the delivery at the first attempt.
        output = read_until(walkthrough.stdout.fileno(), '"hasMore"', "ticket.created ", timeout_s=80)
        log = f"{output}\n--- signalyard up's log:\n{up.log.read_text()[-4000:]}"
        answers = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        signed_up = next(a for a in answers if "requiresPayment" in str(a))["result"]["data"]["json"]
        assert (signed_up["user"]["role"], signed_up["requiresPayment"]) == ("admin", False), log
        assert re.search(rf"^303 http://127\.0\.0\.1:{helpdesk_port}/$", output, re.M), log
        page = answers[-1]["result"]["data"]["json"]
        [event] = page["events"]
        assert (event["aggregate_type"], event["event_type"]) == ("ticket", "created"), log
        assert event["event_data"] == {"subject": "My order has not arrived", "priority": "high", "channel": "api"}
        assert (page["nextCursor"], page["hasMore"]) == (event["id"], False)
        assert f"ticket.created {event['aggregate_id']}\n" in output, log
        team = block("sh helpdesk-team").replace("127.0.0.1:8003", f"127.0.0.1:{helpdesk_port}")
        as_a_team(team.replace("127.0.0.1:8025", f"127.0.0.1:{free_port()}"), tmp_path, log)

        # The banner's demo organization: its admin signs in with the printed password, its key has scope `*`.
        signed_in = re.search(r"sign in (admin@helpdesk\.example) / (\S+) \(auth\.signInWithPassword\)", up.banner)
        assert signed_in, up.banner
        demo_key = (tmp_path / ".signalyard" / "demo-helpdesk-key").read_text().strip()
        assert f"API key {demo_key}" in up.banner
        base = f"http://127.0.0.1:{helpdesk_port}"
        with httpx.Client(base_url=base) as browser:
            password = {"json": {"email": signed_in[1], "password": signed_in[2]}}
            answer = browser.post("/api/trpc/auth.signInWithPassword", json=password)
            assert answer.status_code == 200, answer.text
            me = browser.get("/api/trpc/auth.getUser").json()["result"]["data"]["json"]
            assert (me["email"], me["role"]) == ("admin@helpdesk.example", "admin")
        for path in ("/api/v1/tickets", "/api/v1/customers", "/api/v1/webhooks"):
            assert httpx.get(base + path, headers={"Authorization": f"Bearer {demo_key}"}).status_code == 200
    finally:
        os.killpg(walkthrough.pid, signal.SIGKILL)
        assert up.ctrl_c() == 0


def as_a_team(script: str, workdir: Path, log: str) -> None:
    """The team block, run where the first one left the admin's cookies: what each step answers."""
    done = subprocess.run(
        ["bash", "-ec", script],
        check=False,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{output}\n{log}"
    lines = output.splitlines()
    answers = [json.loads(line) for line in lines if line.startswith("{")]
    results = [answer["result"]["data"]["json"] for answer in answers if "result" in answer]
    invited, reply, merged, found = results[0], results[1], results[2], results[3]
    assert (invited["email"], invited["role"]) == ("grace@example.com", "agent"), output
    assert re.search(r"^303 http://127\.0\.0\.1:\d+/$", output, re.M), output
    assert (reply["author_type"], reply["body"]) == ("agent", "A technician is on his way with an extinguisher.")
    assert reply["author_id"] is not None, output
    assert merged["id"] == reply["ticket_id"], output
    assert any(hit["kind"] == "conversation" and hit["ticket_id"] == reply["ticket_id"] for hit in found["items"])
    assert answers.count({"status": "accepted"}) == 2, output
    assert "smoke level: high" in lines, output
    replied = results[-1]
    assert (replied["body"], replied["delivery"]["state"]) == ("Unplug it and step away.", "queued"), output
    assert re.search(r"^Subject: Re: A photo of the printer \[Ticket #\d+\]$", output, re.M), output
    assert lines[-1] == "A photo of the printer", "the customer's answer made no new ticket"
