"""CPU per phone verify against the offered rate: what each process of the stack spends at light and heavy load.

    python bench/phone_load_curve.py [--rates 25,100,200,300] [--duration 8]

Starts `signalyard up --services phone` as bench/phone.py does (SQLite in a temp dir, the same load generator and
numbers), then, for each rate, an open loop of `--duration` s (p50 and p99 from each request's scheduled send time),
and last `--duration` s with no traffic. Prints, per rate, the answers a second, the latencies, the CPU per answer of
the whole stack, and each process's share of a core (the gateway, the broker, the processors), read from /proc.
A stack whose CPU grew with the requests alone would show the same CPU per answer at every rate. Not a test: exits 0
when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import phone  # noqa: E402
from breakdown import name_of  # noqa: E402


async def run(args: argparse.Namespace, servers: list[phone.Server], workdir: Path) -> dict[str, Any]:
    stack, client, _ = await phone.start_stack(args, servers, workdir)
    names = {pid: name_of(pid) for pid in [stack.pid, *stack.children]}
    rows = []

    def measured(began: float, before: dict[int, float]) -> dict[str, float]:
        elapsed = time.monotonic() - began
        share: dict[str, float] = {}
        for pid, name in names.items():
            share[name] = share.get(name, 0.0) + 100 * (phone.cpu_seconds(pid) - before[pid]) / elapsed
        return share

    for rate in args.rates:
        began, before = time.monotonic(), {pid: phone.cpu_seconds(pid) for pid in names}
        phase = await phone.open_loop(client, stack, servers, rate, duration_s=args.duration, warmup_s=args.warmup)
        share = measured(began, before)
        row = {"rate": rate, "ok_per_s": phase.throughput, "p50_ms": phase.p50_ms, "p99_ms": phase.p99_ms}
        row |= {"cpu_ms_per_ok": phase.cpu_ms_per_ok, "cpu_percent": share}
        rows.append(row)
        phone.log(f"{rate:g}/s: {phase.throughput:.1f} ok/s, p99 {phase.p99_ms} ms, {phase.cpu_ms_per_ok} ms CPU/ok")
        await asyncio.sleep(args.pause)
    began, before = time.monotonic(), {pid: phone.cpu_seconds(pid) for pid in names}
    await asyncio.sleep(args.duration)
    return {"benchmark": "phone_load_curve", "rates": rows, "idle_cpu_percent": measured(began, before)}


def report(result: dict[str, Any]) -> str:
    names = list(result["idle_cpu_percent"])
    head = f"{'rate/s':>7} {'ok/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/ok':>10} "
    lines = [
        "phone verify, open loops on one stack (SQLite, the embedded broker); % = share of one core",
        "",
        head + " ".join(f"{n:>24}" for n in names),
    ]
    for row in result["rates"]:
        shares = " ".join(f"{row['cpu_percent'].get(name, 0):>23.0f}%" for name in names)
        lines.append(
            f"{row['rate']:>7g} {row['ok_per_s']:>7.1f} {phone.ms_text(row['p50_ms']):>7} "
            f"{phone.ms_text(row['p99_ms']):>7} {row['cpu_ms_per_ok'] or 0:>10.2f} {shares}"
        )
    idle = result["idle_cpu_percent"]
    lines.append(f"{'idle':<{len(head)}}" + " ".join(f"{idle.get(n, 0):>23.0f}%" for n in names))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = phone.arguments("phone_load_curve", __doc__, "a first verify 200")
    parser.add_argument("--rates", type=lambda text: [float(r) for r in text.split(",")], default=[25, 100, 200, 300])
    parser.set_defaults(duration=8)
    return phone.execute(phone.parse(parser, argv), "phone_load_curve", run, report)


if __name__ == "__main__":
    raise SystemExit(main())
