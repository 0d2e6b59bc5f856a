"""The photo walkthrough of docs/photo.md, run as written against `signalyard up`: a narrow key, a webhook endpoint,
the documented receiver, a verified photo and its signed delivery, at the first attempt."""

from __future__ import annotations

import io
import os
import re
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path

from PIL import Image

from signalyard.embedded_broker import free_port
from tests.e2e.test_up import Up

DOC = Path(__file__).parents[2] / "docs" / "photo.md"


def block(info: str) -> str:
    """The document's fenced block whose info string is `info` (e.g. ```sh photo-try)."""
    found = re.search(rf"^```{re.escape(info)}\n(.*?)^```$", DOC.read_text(), re.S | re.M)
    assert found, f"docs/photo.md has no ```{info} block"
    return found.group(1)


def read_until(fd: int, *wanted: str, timeout_s: float) -> str:
    """What a pipe gives until every one of `wanted` and the end of its line have come (in any order: two processes
    may write to the pipe), or until `timeout_s` is over."""
    output = b""
    deadline = time.monotonic() + timeout_s
    while True:
        text = output.decode(errors="replace")
        if (all(w in text for w in wanted) and text.endswith("\n")) or (remaining := deadline - time.monotonic()) <= 0:
            return text
        if not select.select([fd], [], [], remaining)[0]:
            return text
        chunk = os.read(fd, 65536)
        if not chunk:
            return text
        output += chunk


def test_the_photo_walkthrough_delivers_a_signed_event(tmp_path: Path) -> None:
    setup = block("sh photo-setup").replace("\\\n", "")
    *prepare, up_line = [line for line in setup.splitlines() if line.strip()]
    subprocess.run(["bash", "-ec", "\n".join(prepare)], cwd=tmp_path, check=True)
    words = shlex.split(up_line)
    assert words[-4:] == [".venv/bin/signalyard", "up", "--services", "photo"]
    settings = dict(word.split("=", 1) for word in words[:-4])
    settings["SIGNALYARD_WEBHOOK_CA_BUNDLE"] = str(tmp_path / settings["SIGNALYARD_WEBHOOK_CA_BUNDLE"])
    image = io.BytesIO()
    Image.new("RGB", (600, 600), (236, 236, 236)).save(image, "JPEG")
    (tmp_path / "photo.jpg").write_bytes(image.getvalue())

    photo_port, receiver_port = free_port(), free_port()
    (tmp_path / ".signalyard").mkdir()
    up = Up(
        tmp_path / ".signalyard", free_port(), settings | {"SIGNALYARD_PHOTO_PORT": str(photo_port)}, services="photo"
    )
    (tmp_path / "receiver.py").write_text(block("python receiver.py").replace("9443", str(receiver_port)))
    script = block("sh photo-try").replace("127.0.0.1:8002", f"127.0.0.1:{photo_port}")
    script = script.replace("localhost:9443", f"localhost:{receiver_port}")
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
        # A failed first attempt is retried a minute later: the line must come well before that. The receiver may
        # print it before curl prints the verify's answer.
        output = read_until(
            walkthrough.stdout.fileno(), '"status":"completed"', "verification.completed ver_", timeout_s=40
        )
        verification = re.search(r'\{"id":"(ver_\w+)","status":"completed"', output)
        assert verification, f"{output}\n--- signalyard up's log:\n{up.log.read_text()[-4000:]}"
        assert f"verification.completed {verification[1]}\n" in output, output
    finally:
        os.killpg(walkthrough.pid, signal.SIGKILL)
        assert up.ctrl_c() == 0
