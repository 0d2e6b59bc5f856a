"""Running evaluate() off the event loop: a pool of worker processes, each holding one warm detector."""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from processors.photo.checks.detector import shared_detector
from processors.photo.checks.evaluate import evaluate
from processors.photo.checks.policies import POLICIES
from processors.photo.checks.verdict import Verdict

# The fork server imports these once; every worker forked from it starts with them loaded (~ms, not ~1 s), and,
# unlike a plain fork of the processor, without the event loop's or the Kafka client's threads and sockets.
_PRELOAD = ["processors.photo.checks.evaluate", "mediapipe.python.solution_base"]


def _context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def _warm() -> None:
    shared_detector()


class CheckPool:
    """`workers` processes, started at once and kept; each builds its detector once, in its initialiser."""

    def __init__(self, workers: int) -> None:
        self._workers = max(workers, 1)
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(self._workers, mp_context=_context(), initializer=_warm)
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
        self._executor.shutdown(wait=True, cancel_futures=True)
