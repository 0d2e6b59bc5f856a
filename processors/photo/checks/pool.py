"""Running evaluate() off the event loop: a pool of worker processes, each holding one warm detector."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import re
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver, resource_tracker
from multiprocessing.connection import Connection

import structlog

from processors.photo.checks.detector import shared_detector
from processors.photo.checks.evaluate import evaluate
from processors.photo.checks.policies import POLICIES
from processors.photo.checks.verdict import Verdict

log = structlog.get_logger("signalyard.processors.photo.checks")

# The fork server imports these once; every worker forked from it starts with them loaded (~ms, not ~1 s), and,
# unlike a plain fork of the processor, without the event loop's or the Kafka client's threads and sockets.
_PRELOAD = ["processors.photo.checks.evaluate", "mediapipe.python.solution_base"]

# What MediaPipe, absl and TensorFlow Lite write to stderr themselves: "W0000 00:00:... file.cc:114] ...",
# "WARNING: All log messages before absl::InitializeLog() ...", "INFO: Created TensorFlow Lite XNNPACK delegate ...".
_NATIVE_LEVEL = re.compile(r"^(?:([IWEF])\d{4} |(INFO|WARNING|ERROR|FATAL): )")
_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR, "F": logging.CRITICAL}

_lock = threading.Lock()
_open_pools = 0
"""Pools of this process not closed yet: the last one to close stops the fork server and resource tracker."""


def _context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def _start_worker(stderr: Connection) -> None:
    """A worker's initialiser: its stderr into the pool's pipe, an exit with the pool's process, a warm detector."""
    os.dup2(stderr.fileno(), 2)  # native libraries write to the descriptor itself, not to sys.stderr
    stderr.close()
    # A worker is the fork server's child and blocks reading its work; were the pool's process killed outright, it
    # would wait forever, and keep the fork server (whose "alive" pipe it holds) and the resource tracker alive too.
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), name="exit-with-pool", daemon=True).start()
    shared_detector()


def _exit_with(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()  # returns when the pool's process has ended, however it ended
    os._exit(1)


def _warm() -> None:
    shared_detector()


class CheckPool:
    """`workers` processes, started at once and kept; each builds its detector once, in its initialiser.

    What the workers write to stderr (MediaPipe's native logs) comes back through a pipe and is logged as events
    like any other. `close` leaves no process behind: the workers, and with the last pool of the process the fork
    server and resource tracker that multiprocessing would otherwise keep until the process exits."""

    def __init__(self, workers: int) -> None:
        global _open_pools  # noqa: PLW0603
        self._workers = max(workers, 1)
        read, write = os.pipe()
        self._stderr = Connection(write, readable=False)
        self._reader = threading.Thread(target=_log_lines, args=(read,), name="check-workers-stderr", daemon=True)
        self._reader.start()
        with _lock:
            _open_pools += 1
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            self._workers, mp_context=_context(), initializer=_start_worker, initargs=(self._stderr,)
        )
        # Workers start on demand; asking each for nothing now keeps the first requests from paying for it.
        for _ in range(self._workers):
            executor.submit(_warm)
        return executor

    async def evaluate(self, image: bytes, policy: str) -> Verdict:
        POLICIES[policy]  # an unknown policy is the caller's error: raise KeyError here, not from a worker
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, evaluate, image, policy)
        except BrokenProcessPool:
            # A worker died (native crash, OOM kill): replace the pool and give the image one more try.
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = self._start()
            return await loop.run_in_executor(self._executor, evaluate, image, policy)

    def close(self) -> None:
        global _open_pools  # noqa: PLW0603
        self._executor.shutdown(wait=True, cancel_futures=True)
        with _lock:
            _open_pools -= 1
            if _open_pools == 0:
                # The fork server first: it holds a descriptor of the tracker's pipe, which stops at end of file.
                # Both `_stop`s wait for their process; CPython's own tests stop them so (3.11 to 3.13 at least).
                forkserver._forkserver._stop()  # type: ignore[attr-defined]
                resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]
        self._stderr.close()
        self._reader.join()  # the workers are gone, so their ends of the pipe are closed: it reads to the end


def _log_lines(fd: int) -> None:
    with open(fd, "rb") as lines:
        for raw in lines:
            line = raw.decode(errors="replace").rstrip()
            if line:
                found = _NATIVE_LEVEL.match(line)
                level = _LEVELS[(found[1] or found[2])[0]] if found else logging.WARNING
                log.log(level, "check_worker_stderr", line=line)
