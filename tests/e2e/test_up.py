"""`signalyard up` started as a user starts it, driven over HTTP, then stopped with Ctrl-C / SIGTERM."""

from __future__ import annotations

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

from signalyard.embedded_broker import free_port


class Up:
    """`signalyard up` as a user starts it, with only the given SIGNALYARD_* settings."""

    def __init__(self, data_dir: Path, port: int, settings: dict[str, str] | None = None) -> None:
        self.port = port
        self.log = data_dir / "stderr.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")}
        env |= {
            "SIGNALYARD_DATA_DIR": str(data_dir),
            "SIGNALYARD_PHONE_PORT": str(port),
            "SIGNALYARD_PHOTO_PORT": str(free_port()),
            **(settings or {}),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "signalyard.cli", "up"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log.open("wb"),
            text=True,
            start_new_session=True,  # a process group of its own, as a shell gives a foreground job
        )
        self.banner = self._read_banner()

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
    running = Up(tmp_path, free_port())
    yield running
    if running.process.poll() is None:
        running.process.kill()


def verify(base: str, key: str, idempotency_key: str) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/verify",
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key},
        json={"phone": "+14155550100", "name": "John Smith", "subject_type": "person"},
        timeout=30,
    )


def test_up_prints_urls_and_a_sandbox_key_and_the_readme_curl_returns_a_completed_result(up: Up) -> None:
    base = f"http://127.0.0.1:{up.port}"
    assert f"{base}/v1" in up.banner
    assert f"{base}/docs" in up.banner
    assert f"{base}/metrics" in up.banner

    # The consumer group takes a few seconds to join: the first answer may be 202, then it completes.
    response = verify(base, up.key, "readme-1")
    deadline = time.monotonic() + 30
    while response.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.5)
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
    first = Up(tmp_path, free_port())
    key = first.key
    base = f"http://127.0.0.1:{first.port}"
    response = verify(base, key, "persisted-1")
    deadline = time.monotonic() + 30
    while response.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.5)
        response = verify(base, key, "persisted-1")
    assert first.stop() == 0

    second = Up(tmp_path, free_port())
    try:
        assert second.key == key
        again = verify(f"http://127.0.0.1:{second.port}", key, "persisted-1")
        assert again.status_code == 200
        assert again.json() == response.json()
    finally:
        second.stop()


def children_of(pid: int) -> list[int]:
    """Every thread's children (the broker is started from a worker thread)."""
    return [
        int(child) for task in Path(f"/proc/{pid}/task").iterdir() for child in (task / "children").read_text().split()
    ]


def descendants_of(pid: int) -> list[int]:
    found = []
    for child in children_of(pid):
        found += [child, *descendants_of(child)]
    return found


def test_up_runs_the_processors_in_a_child_and_stops_everything_if_that_child_dies(up: Up) -> None:
    processors = [
        child for child in children_of(up.process.pid) if b"processors" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]
    assert len(processors) == 2, children_of(up.process.pid)  # one per service
    broker_port = up.broker_port

    os.kill(processors[0], signal.SIGKILL)

    assert up.process.wait(30) == 1
    assert '"processors_exited"' in up.log.read_text()
    with pytest.raises(ConnectionRefusedError):  # the embedded broker went down with the launcher
        socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{up.port}/healthz")


def test_up_killed_outright_leaves_no_process_behind(up: Up) -> None:
    assert len(children_of(up.process.pid)) == 3, children_of(up.process.pid)  # the broker, each service's processors
    children = descendants_of(up.process.pid)  # the photo processors' image-check workers too
    up.process.kill()
    up.process.wait(10)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{child}").exists() for child in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [child for child in children if Path(f"/proc/{child}").exists()]
    assert not alive, alive
