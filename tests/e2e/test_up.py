"""`signalyard up` started as a user starts it, driven over HTTP, then stopped with Ctrl-C / SIGTERM: it answers, keeps
its data, refuses a port in use, and leaves no process behind."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from signalyard.embedded_broker import free_port
from tests.processes import Process, children_of, descendants_of


class Up:
    """`signalyard up --services SERVICES` as a user starts it, with only the given SIGNALYARD_* settings; `port` is
    the phone gateway's."""

    def __init__(
        self,
        data_dir: Path,
        port: int,
        settings: dict[str, str] | None = None,
        *,
        services: str = "phone,photo",
        banner: bool = True,
    ) -> None:
        self.port = port
        self.log = data_dir / "stderr.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")}
        env |= {
            "SIGNALYARD_DATA_DIR": str(data_dir),
            "SIGNALYARD_PHONE_PORT": str(port),
            "SIGNALYARD_PHOTO_PORT": str(free_port()),
            "SIGNALYARD_HELPDESK_PORT": str(free_port()),
            **(settings or {}),
        }
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, "-m", "signalyard.cli", "up", "--services", services],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log.open("wb"),
            text=True,
            start_new_session=True,  # a process group of its own, as a shell gives a foreground job
        )
        self.banner = self._read_banner() if banner else ""

    def _read_banner(self) -> str:
        assert self.process.stdout is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Ctrl-C stops everything"):
                return "".join(lines)
        raise AssertionError(f"signalyard up printed no banner: {''.join(lines)}\n{self.log.read_text()}")

    @property
    def key(self) -> str:
        found = re.search(r"sandbox key\s+(sy_test_\w+)", self.banner)
        assert found, self.banner
        return found.group(1)

    @property
    def photo_key(self) -> str:
        found = re.search(r"sandbox key\s+(pc_test_\w+)", self.banner)
        assert found, self.banner
        return found.group(1)

    @property
    def photo_base(self) -> str:
        return f"http://127.0.0.1:{self.env['SIGNALYARD_PHOTO_PORT']}"

    @property
    def broker_port(self) -> int:
        found = re.search(r"broker 127\.0\.0\.1:(\d+)", self.banner)
        assert found, self.banner
        return int(found.group(1))

    def stop(self, signum: int = signal.SIGTERM) -> int:
        self.process.send_signal(signum)
        return self.process.wait(30)

    def ctrl_c(self) -> int:
        """What a terminal does on Ctrl-C: SIGINT to every process of the foreground process group."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(30)

    def error_lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if '"level": "error"' in line]


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    """Every service."""
    running = Up(tmp_path, free_port())
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


@pytest.fixture
def phone_up(tmp_path: Path) -> Iterator[Up]:
    running = Up(tmp_path, free_port(), services="phone")
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


@pytest.fixture
def photo_up(tmp_path: Path) -> Iterator[Up]:
    running = Up(tmp_path, free_port(), services="photo")
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def verify(base: str, key: str, idempotency_key: str) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/verify",
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key},
        json={"phone": "+14155550100", "name": "John Smith", "subject_type": "person"},
        timeout=30,
    )


def test_up_prints_urls_and_a_sandbox_key_and_the_readme_curl_returns_a_completed_result(phone_up: Up) -> None:
    up = phone_up
    base = f"http://127.0.0.1:{up.port}"
    assert f"{base}/v1" in up.banner
    assert f"{base}/docs" in up.banner
    assert f"{base}/metrics" in up.banner

    # The banner comes once the processors consume: the first request is answered at once.
    response = verify(base, up.key, "readme-1")
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["result_state"] == "completed"
    assert result["name_match"]["state"] == "match"
    assert result["environment"] == "test"

    assert httpx.get(f"{base}/readyz").status_code == 200
    assert httpx.get(f"{base}/docs/openapi.json").json()["paths"]["/v1/verify"]
    assert "signalyard_http_requests_total" in httpx.get(f"{base}/metrics").text
    processors_metrics = re.search(r"\(gateway\), (http://\S+/metrics) \(processors\)", up.banner)
    assert processors_metrics, up.banner
    assert 'signalyard_processed_total{outcome="completed",service="phone"}' in httpx.get(processors_metrics[1]).text

    broker_port = up.broker_port
    assert up.ctrl_c() == 0
    assert up.error_lines() == []
    with pytest.raises(ConnectionRefusedError):  # the embedded broker went down with the launcher: no orphan process
        socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
    log = up.log.read_text()
    assert up.key not in log
    assert up.key[8:] not in log


def test_a_second_up_on_the_same_data_dir_keeps_the_data_and_prints_the_same_key(tmp_path: Path) -> None:
    first = Up(tmp_path, free_port(), services="phone")
    key = first.key
    base = f"http://127.0.0.1:{first.port}"
    response = verify(base, key, "persisted-1")
    assert response.status_code == 200, response.text

    # Started again while the first holds its port: one line naming the port and its setting, before anything else.
    refused = subprocess.run(
        [sys.executable, "-m", "signalyard.cli", "up", "--services", "phone"],
        env=first.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (refused.returncode, refused.stdout) == (3, "")
    assert refused.stderr == f"signalyard: port {first.port} is in use; set SIGNALYARD_PHONE_PORT to another port\n"
    assert httpx.get(f"{base}/readyz").status_code == 200
    assert first.stop() == 0

    second = Up(tmp_path, free_port(), services="phone")
    try:
        assert second.key == key
        again = verify(f"http://127.0.0.1:{second.port}", key, "persisted-1")
        assert again.status_code == 200
        assert again.json() == response.json()
    finally:
        second.stop()


def gone(processes: list[Process], timeout_s: float = 10) -> list[Process]:
    """Those of `processes` still running once the kernel has had time to finish killing them (a SIGKILL, a
    PDEATHSIG take effect asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while any(process.running for process in processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [process for process in processes if process.running]


def processors_children(up: Up) -> dict[str, int]:
    """service -> pid of its processors child."""
    found = {}
    for child in children_of(up.process.pid):
        words = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"processors" in words:
            found[words[words.index(b"processors") + 1].decode()] = child
    return found


def verify_photo(up: Up) -> httpx.Response:
    image = io.BytesIO()
    Image.new("RGB", (600, 600), (236, 236, 236)).save(image, "JPEG")
    return httpx.post(
        f"{up.photo_base}/v1/verify",
        headers={"X-API-Key": up.photo_key},
        files={"image": ("photo.jpg", image.getvalue(), "image/jpeg")},
        data={"policy": "us_passport"},
        timeout=30,
    )


@pytest.mark.parametrize("stop", ["ctrl_c", "sigterm"])
def test_after_a_photo_verify_stopping_up_leaves_no_process_and_its_log_is_json_lines(photo_up: Up, stop: str) -> None:
    up = photo_up
    assert verify_photo(up).status_code == 200
    stack = descendants_of(up.process.pid)  # broker, processors, their image-check workers, fork server, tracker
    assert len(stack) >= 5, stack

    assert (up.ctrl_c() if stop == "ctrl_c" else up.stop(signal.SIGTERM)) == 0

    assert gone(stack) == []
    assert up.error_lines() == []
    for line in up.log.read_text().splitlines():  # MediaPipe's own stderr lines included
        assert isinstance(json.loads(line), dict), line


def test_stopped_while_it_starts_up_stops_what_it_started_and_exits_130(tmp_path: Path) -> None:
    up = Up(tmp_path, free_port(), services="photo", banner=False)
    try:
        assert up.process.stdout is not None
        assert up.process.stdout.readline() == "signalyard: starting photo\n"
        deadline = time.monotonic() + 60
        while "photo" not in processors_children(up):  # the banner waits for its consumer groups, seconds away
            assert time.monotonic() < deadline, up.log.read_text()
            time.sleep(0.05)
        stack = descendants_of(up.process.pid)

        assert up.ctrl_c() == 130

        assert gone(stack) == []
        assert up.error_lines() == []
    finally:
        if up.process.poll() is None:
            up.process.kill()
            up.process.wait()


def test_up_runs_the_processors_in_a_child_and_stops_everything_if_that_child_dies(up: Up) -> None:
    processors = processors_children(up)
    assert sorted(processors) == ["phone", "photo"], children_of(up.process.pid)  # one child per service
    stack = descendants_of(up.process.pid)
    broker_port = up.broker_port

    os.kill(processors["photo"], signal.SIGKILL)  # no shutdown of its own: what it started is left to `up`

    assert up.process.wait(30) == 1
    assert '"processors_exited"' in up.log.read_text()
    assert gone(stack) == []  # the photo processors' image-check workers, fork server and tracker too
    with pytest.raises(ConnectionRefusedError):  # the embedded broker went down with the launcher
        socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{up.port}/healthz")


def test_up_killed_outright_leaves_no_process_behind(up: Up) -> None:
    assert len(children_of(up.process.pid)) == 3, children_of(up.process.pid)  # the broker, each service's processors
    stack = descendants_of(up.process.pid)  # the photo processors' image-check workers too
    up.process.kill()
    up.process.wait(10)
    assert gone(stack) == []
