"""Rate limit benchmark: the gateways' in-memory per-key limit (gateway/common/limits.py, `RateLimits` without Redis)
against `limits`' asynchronous in-memory storage, the one it replaced, as the baseline, and `limits`' synchronous
in-memory storage as it is (its expiry passes on a new timer thread every 10 ms), in the same run: CPU per request,
each charging one busy key's windows.

    python bench/rate_limits.py [--seconds 8] [--callers 32] [--windows "100000/minute;1000000/hour"] [--rounds 2]

`--callers` tasks on one event loop (uvloop, as the gateways') each charge the key, then wait 50 ms (a request's
I/O), about 600 requests a second with 32 callers. The CPU measured is this process's, every thread's (`getrusage`:
the library's storages hand their expiry passes to threads), over the requests made; it includes the loop's own work
for the callers, the same for all. Each round runs the baseline, the library's synchronous storage, then ours; the
last round is printed, with the ratio of ours to the baseline. Not a test: it exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import uvloop
from limits import RateLimitItem, parse_many, strategies
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import MemoryStorage, storage_from_string

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.common.limits import RateLimits


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _refused(_window: RateLimitItem, _retry_after_s: int) -> Exception:
    return RuntimeError("the bench's key is limited: give it larger windows")


async def baseline(windows: Sequence[RateLimitItem]) -> Callable[[], Awaitable[None]]:
    limiter = MovingWindowRateLimiter(storage_from_string("async+memory://"))

    async def charge() -> None:
        for window in windows:
            if not await limiter.hit(window, "key"):
                raise _refused(window, 0)

    return charge


async def library_sync(windows: Sequence[RateLimitItem]) -> Callable[[], Awaitable[None]]:
    limiter = strategies.MovingWindowRateLimiter(MemoryStorage())

    async def charge() -> None:
        for window in windows:
            if not limiter.hit(window, "key"):
                raise _refused(window, 0)

    return charge


async def ours(windows: Sequence[RateLimitItem]) -> Callable[[], Awaitable[None]]:
    limits = RateLimits(None, limited=_refused, unavailable=lambda: RuntimeError("unavailable"))

    async def charge() -> None:
        await limits.hit("key", windows)

    return charge


async def measure(charge: Callable[[], Awaitable[None]], seconds: float, callers: int) -> tuple[float, float]:
    """CPU microseconds a request and requests a second."""
    done = 0
    end = time.monotonic() + seconds

    async def caller() -> None:
        nonlocal done
        while time.monotonic() < end:
            await charge()
            done += 1
            await asyncio.sleep(0.05)

    began = _cpu()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return (_cpu() - began) / done * 1e6, done / seconds


async def run(args: argparse.Namespace) -> None:
    windows = parse_many(args.windows)
    results: dict[str, tuple[float, float]] = {}
    for _ in range(args.rounds):
        for name, make in (
            ("limits' async memory storage (baseline)", baseline),
            ("limits' sync memory storage, as it is", library_sync),
            ("RateLimits in memory", ours),
        ):
            results[name] = await measure(await make(windows), args.seconds, args.callers)
    print(f"\nper request, {args.callers} callers, windows {args.windows}, round {args.rounds} of {args.rounds}:")
    for name, (cpu_us, rate) in results.items():
        print(f"  {name:42} {cpu_us:7.1f} us of CPU  {rate:6.0f} requests/s")
    first, *_, last = results.values()
    print(f"ratio (ours / baseline, CPU a request) = {last[0] / first[0]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8, help="measured seconds per client and round (default 8)")
    parser.add_argument("--callers", type=int, default=32, help="callers at once (default 32)")
    parser.add_argument(
        "--windows", default="100000/minute;1000000/hour", help="the key's windows, never full in a run (the default)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds; the last is printed (default 2)")
    uvloop.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
