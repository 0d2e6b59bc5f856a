"""What an idle consumer-group member costs the embedded broker, and what its fetch wait costs the next record.

    python bench/broker_idle.py [--members 6] [--partitions 12] [--waits 250,1000] [--seconds 20] [--records 10]

For each fetch wait, on a broker of its own (`signalyard.embedded_broker`, the Tansu binary `signalyard up` runs):
`--members` consumer-group members (aiokafka, as the processors run them), each the only member of its group on a
topic of its own with `--partitions` partitions, fetch with that wait on their quiet topics. After 8 s (every group
joined), the broker's CPU is read from /proc over `--seconds`: its share of one core for those members, nothing else
calling it. Then `--records` times a record is published to one member's topic while its fetch waits, and the time
from the publish's acknowledgement to the record in the member's hands is taken (median and max).

On Apache Kafka a waiting fetch costs nothing until a record comes, and returns when it does. Tansu looks again at
half the remaining wait (docs/operations.md, "Fetch waits"): each idle fetch costs it CPU, and a record that comes
meanwhile waits for the next look. This prints both, per wait; `topics/common/pacing.py` chooses between them. Not a
test: it exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from signalyard.embedded_broker import EmbeddedBroker
from topics.common.admin import ensure_topics

JOINED_S = 8.0


def cpu_s(pid: int) -> float:
    """utime + stime of the process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


async def fetch_forever(member: AIOKafkaConsumer) -> None:
    while True:
        await member.getmany(timeout_ms=1000)


async def next_record(member: AIOKafkaConsumer) -> float:
    while not await member.getmany(timeout_ms=5000):
        pass
    return time.perf_counter()


async def measure(wait_ms: int, args: argparse.Namespace) -> tuple[float, list[float]]:
    """(the broker's CPU as a share of one core, publish -> record in hand in ms for each record)."""
    broker = EmbeddedBroker()
    bootstrap = broker.start()
    members: list[AIOKafkaConsumer] = []
    try:
        topics = [f"idle-{n}" for n in range(args.members)]
        await ensure_topics(bootstrap, topics, args.partitions)
        for n, topic in enumerate(topics):
            member = AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, group_id=f"idle-{n}", fetch_max_wait_ms=wait_ms
            )
            await member.start()
            members.append(member)
        loops = [asyncio.create_task(fetch_forever(member)) for member in members]
        await asyncio.sleep(JOINED_S)
        assert broker.process is not None
        before, started = cpu_s(broker.process.pid), time.monotonic()
        await asyncio.sleep(args.seconds)
        share = (cpu_s(broker.process.pid) - before) / (time.monotonic() - started)
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        latencies = []
        try:
            for n in range(args.records):
                taken = asyncio.create_task(next_record(members[0]))
                await asyncio.sleep(0.3 + 0.07 * n)  # the member's fetch is waiting, at a different point each time
                await producer.send_and_wait(topics[0], b"x", partition=0)
                sent = time.perf_counter()
                latencies.append((await taken - sent) * 1000)
        finally:
            await producer.stop()
        return share, latencies
    finally:
        for member in members:
            await member.stop()
        broker.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=6, help="idle group members (signalyard up runs 6)")
    parser.add_argument("--partitions", type=int, default=1, help="1, as the embedded broker's topics")
    parser.add_argument("--waits", default="250,1000", help="fetch waits to compare, ms")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--records", type=int, default=10)
    args = parser.parse_args()
    print(f"{args.members} idle members, {args.partitions} partitions each, {args.seconds:g} s per wait")
    print(f"{'fetch wait':>10}  {'broker CPU':>12}  {'per fetch':>10}  {'record waits, median / max':>27}")
    for wait_ms in (int(wait) for wait in args.waits.split(",")):
        share, latencies = await measure(wait_ms, args)
        per_fetch_ms = share * 1000 / (args.members * 1000 / wait_ms)
        print(
            f"{wait_ms:>7} ms  {share:>10.2%}  {per_fetch_ms:>7.2f} ms  "
            f"{statistics.median(latencies):>17.1f} / {max(latencies):.1f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
