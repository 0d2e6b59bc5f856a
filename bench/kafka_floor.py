"""The transport floor for bench/phone.py: the stack's two Kafka hops alone, with no HTTP and no database.

    python bench/kafka_floor.py --bootstrap 127.0.0.1:9092 [--concurrency 1,8,32,64] [--duration 10] [--warmup 1]
        [--result captured-verify-result.json] [--hops 2] [--wait-ms 5]

Each round trip is what a verify does on the broker: publish a VerificationRequested keyed by its number to a
topic read by a consumer group, whose batch handler publishes a VerificationCompleted carrying a real result
(`--result`, as the stack's processor does) to a second topic, read by a subscriber without a group, which wakes the
waiting caller. Same client (FastStream on aiokafka), same producer and consumer settings (`topics.common.client`), same
partition count, the same broker. N callers run it in a closed loop, in this one process, on uvloop.

`--hops 1`: the group's handler wakes the callers itself (a publish and a consumer group's fetch, as a helpdesk
webhook event to its fan-out; `--wait-ms` is the group member's fetch wait while busy). `--hops 0`: a round trip is
the publish and the broker's acknowledgement alone, as a helpdesk ticket create waits for it (bench/helpdesk.py).

So nothing the stack does could make it faster than this on this broker: the floor's round trips per second divided
by the bare endpoint's throughput is the highest ratio any design of the stack could reach here.
Prints one JSON object per concurrency on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import uvloop
from fast_depends.msgspec import MsgSpecSerializer
from faststream.kafka import KafkaBroker

from signalyard.settings import PlatformSettings
from topics.common.admin import ensure_topics
from topics.common.client import FETCH_MAX_WAIT_MS, LINGER_MS, batch_subscription
from topics.common.pacing import DemandPacer, QuietPacer, pace
from topics.phone import VerificationCompleted, VerificationRequested, VerifyResult, partition_key


class _Ref(msgspec.Struct):
    request_id: str


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] * 1000, 2)


async def closed_loop(
    round_trip: Callable[[], Awaitable[float]], concurrency: int, duration_s: float, warmup_s: float
) -> dict[str, Any]:
    """`concurrency` callers, each starting its next round trip when the last one is back; figures of the window."""
    latencies: list[float] = []
    cpu: list[float] = []
    start = time.monotonic() + warmup_s
    end = start + duration_s

    async def caller() -> None:
        while time.monotonic() < end:
            latency = await round_trip()
            if start <= time.monotonic() <= end:
                latencies.append(latency)

    async def meter() -> None:
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        cpu.append(_cpu_s())
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        cpu.append(_cpu_s())

    await asyncio.gather(meter(), *(caller() for _ in range(concurrency)))
    latencies.sort()
    return {
        "concurrency": concurrency,
        "throughput": round(len(latencies) / duration_s, 1),
        "p50_ms": _percentile(latencies, 0.50),
        "p99_ms": _percentile(latencies, 0.99),
        "max_ms": round(latencies[-1] * 1000, 2) if latencies else None,
        "cpu_percent": round((cpu[1] - cpu[0]) / duration_s * 100, 1),
    }


async def floor(args: argparse.Namespace) -> None:
    suffix = uuid.uuid4().hex[:8]
    requested, completed = f"bench.floor.{suffix}.requested", f"bench.floor.{suffix}.completed"
    await ensure_topics(args.bootstrap, [requested, completed][: max(1, args.hops)], args.partitions)
    result = msgspec.Raw(args.result.read_bytes()) if args.result else None
    broker = KafkaBroker(args.bootstrap, serializer=MsgSpecSerializer(), logger=None, linger_ms=LINGER_MS)
    waiting: dict[str, asyncio.Future[None]] = {}
    demand = DemandPacer(lambda: bool(waiting))  # paced as the stack paces its processors and its gateways' waiters

    def wake(batch: list[_Ref] | list[VerificationRequested]) -> None:
        for ref in batch:
            future = waiting.pop(ref.request_id, None)
            if future is not None and not future.done():
                future.set_result(None)
        if not waiting:
            demand.changed()

    async def process(batch: list[VerificationRequested]) -> None:
        if args.hops == 1:
            wake(batch)
            return
        await asyncio.gather(
            *(
                broker.publish(
                    VerificationCompleted(
                        request_id=m.request_id,
                        tenant_id=m.tenant_id,
                        environment=m.environment,
                        phone_e164=m.phone_e164,
                        result=result,  # type: ignore[arg-type]  # the stored JSON, sent as it is
                    ),
                    completed,
                    key=partition_key(m.phone_e164),
                )
                for m in batch
            )
        )

    async def completions(batch: list[_Ref]) -> None:
        wake(batch)

    if args.hops >= 1:
        processor = broker.subscriber(
            requested,
            **batch_subscription(VerificationRequested, wait_ms=args.wait_ms),
            group_id=f"bench-floor-{suffix}",
            max_records=200,
            auto_offset_reset="earliest",
        )
        pace(processor, QuietPacer(args.wait_ms))
        processor(process)
    if args.hops == 2:
        waiter = broker.subscriber(completed, **batch_subscription(_Ref), auto_offset_reset="latest")
        pace(waiter, demand)
        waiter(completions)

    await broker.start()
    number = 2_000_000

    async def round_trip() -> float:
        nonlocal number
        number += 1
        request_id = str(uuid.uuid4())
        phone = f"+1212{number:07d}"
        message = VerificationRequested(request_id=request_id, tenant_id="bench", environment="test", phone_e164=phone)
        if not args.hops:
            started = time.perf_counter()
            await broker.publish(message, requested, key=partition_key(phone))
            return time.perf_counter() - started
        future = asyncio.get_running_loop().create_future()
        waiting[request_id] = future
        if len(waiting) == 1:
            demand.changed()
        started = time.perf_counter()
        await broker.publish(message, requested, key=partition_key(phone))
        await asyncio.wait_for(future, 30)
        return time.perf_counter() - started

    deadline = time.monotonic() + 60  # the consumer group takes a few seconds to form
    while True:
        try:
            await round_trip()
            break
        except TimeoutError:
            if time.monotonic() > deadline:
                raise
    try:
        for concurrency in args.concurrency:
            print(json.dumps(await closed_loop(round_trip, concurrency, args.duration, args.warmup)), flush=True)
            await asyncio.sleep(args.pause)
    finally:
        await broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True, help="the Kafka broker to measure (the stack's)")
    parser.add_argument("--concurrency", default="1,8,32,64", help="closed-loop concurrencies (1,8,32,64)")
    parser.add_argument("--duration", type=float, default=10, help="measured seconds per run (default 10)")
    parser.add_argument("--warmup", type=float, default=1, help="unmeasured seconds before each run (default 1)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between runs (default 0.5)")
    parser.add_argument(
        "--partitions",
        type=int,
        default=PlatformSettings().partitions(embedded=True),
        help="partitions of each topic (default: what `signalyard up` gives its topics on the embedded broker)",
    )
    parser.add_argument("--result", type=Path, help="a VerifyResult JSON to carry on the completed topic")
    parser.add_argument(
        "--hops",
        type=int,
        choices=(0, 1, 2),
        default=2,
        help="2: phone's two hops (default); 1: publish and a consumer group's fetch; 0: publish and its ack alone",
    )
    parser.add_argument(
        "--wait-ms",
        type=int,
        default=FETCH_MAX_WAIT_MS,
        help=f"the consumer group's fetch wait while busy (default {FETCH_MAX_WAIT_MS}, the platform's)",
    )
    args = parser.parse_args()
    args.concurrency = [int(part) for part in args.concurrency.split(",")]
    if args.result:
        msgspec.json.decode(args.result.read_bytes(), type=VerifyResult)  # a real result, or fail now
    uvloop.run(floor(args))


if __name__ == "__main__":
    main()
