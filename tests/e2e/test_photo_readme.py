"""The README's photo walkthrough, run as written against `signalyard up`: a narrow key, a webhook endpoint, the
README's receiver, a verified photo and its signed delivery."""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

from PIL import Image

from signalyard.embedded_broker import free_port
from tests.e2e.test_up import Up

README = Path(__file__).parents[2] / "README.md"


def block(info: str) -> str:
    """The README's fenced block whose info string is `info` (e.g. ```sh photo-try)."""
    found = re.search(rf"^```{re.escape(info)}\n(.*?)^```$", README.read_text(), re.S | re.M)
    assert found, f"the README has no ```{info} block"
    return found.group(1)


def test_the_readme_photo_walkthrough_delivers_a_signed_event(tmp_path: Path) -> None:
    setup = block("sh photo-setup").replace("\\\n", "")
    *prepare, up_line = [line for line in setup.splitlines() if line.strip()]
    subprocess.run(["bash", "-ec", "\n".join(prepare)], cwd=tmp_path, check=True)
    words = shlex.split(up_line)
    assert words[-2:] == [".venv/bin/signalyard", "up"]
    settings = dict(word.split("=", 1) for word in words[:-2])
    settings["SIGNALYARD_WEBHOOK_CA_BUNDLE"] = str(tmp_path / settings["SIGNALYARD_WEBHOOK_CA_BUNDLE"])
    image = io.BytesIO()
    Image.new("RGB", (600, 600), (236, 236, 236)).save(image, "JPEG")
    (tmp_path / "photo.jpg").write_bytes(image.getvalue())

    photo_port, receiver_port = free_port(), free_port()
    (tmp_path / ".signalyard").mkdir()
    up = Up(tmp_path / ".signalyard", free_port(), settings | {"SIGNALYARD_PHOTO_PORT": str(photo_port)})
    (tmp_path / "receiver.py").write_text(block("python receiver.py").replace("9443", str(receiver_port)))
    script = block("sh photo-try").replace("127.0.0.1:8002", f"127.0.0.1:{photo_port}")
    script = script.replace("localhost:9443", f"localhost:{receiver_port}")
    script = script.replace("python3 receiver.py &", "python3 receiver.py & sleep 1")
    walkthrough = subprocess.Popen(
        ["bash", "-ec", script],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")},
    )
    try:
        assert walkthrough.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(line.startswith("verification.completed") for line in lines):
            line = walkthrough.stdout.readline()
            if not line:
                break
            lines.append(line)
        output = "".join(lines)
        verification = re.search(r'\{"id":"(ver_\w+)","status":"completed"', output)
        assert verification, f"{output}\n--- signalyard up's log:\n{up.log.read_text()[-4000:]}"
        assert f"verification.completed {verification[1]}\n" in output, output
    finally:
        os.killpg(walkthrough.pid, signal.SIGKILL)
        assert up.ctrl_c() == 0
