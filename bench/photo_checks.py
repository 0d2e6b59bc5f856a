"""Photo checks benchmark: CPU and wall time of decode + detection + every check, per 600 x 600 JPEG.

    python bench/photo_checks.py [--samples 500] [--policy us_passport] [--workers N]

Builds 600 x 600 JPEGs from scikit-image's astronaut portrait (the compliant US passport framing and a few variants:
rolled, dark, blurred, busy backdrop, a second face, a group photo, no face; test-only dependency), warms the
detector, then evaluates `--samples` images round-robin in this process, timing each with time.process_time (CPU of
every thread of the process) and perf_counter (wall). Prints CPU per image (mean, p50, p99), wall p50/p99 and
images/s and the mean CPU of each variant; with --workers, also images/s through a CheckPool of that many processes.
`checks_cpu_ms(samples)` is the mean CPU figure, for the pipeline benchmark to import.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processors.photo.checks import CheckPool, evaluate

SIDE = 600


@functools.cache
def images() -> dict[str, bytes]:
    from tests.unit import photos as p

    us = p.us_passport_image()
    square = functools.partial(p.frame, width=SIDE, height=SIDE)
    variants = {
        "compliant": us,
        "rolled": p.rolled(us, 15),
        "dark": p.scaled(us, 0.3),
        "blurred": p.blurred(us),
        "busy_background": square(p.busy_background(), head=0.58, eyes=0.62),
        "second_face": p.with_second_face(us),
        "group_photo": p.group_photo().resize((SIDE, SIDE)),
        "no_face": p.no_face().resize((SIDE, SIDE)),
    }
    return {name: p.encode(image) for name, image in variants.items()}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def measure(samples: int, policy: str = "us_passport") -> dict[str, float]:
    named = list(images().items())
    for _, blob in named:
        evaluate(blob, policy)  # warm: detector graph built, caches filled
    cpu: list[float] = []
    wall: list[float] = []
    per_variant: dict[str, list[float]] = {name: [] for name, _ in named}
    started = time.perf_counter()
    for i in range(samples):
        name, blob = named[i % len(named)]
        c0, w0 = time.process_time(), time.perf_counter()
        evaluate(blob, policy)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        per_variant[name].append(cpu[-1])
    elapsed = time.perf_counter() - started
    return {name: statistics.fmean(values) for name, values in per_variant.items() if values} | {
        "cpu_mean_ms": statistics.fmean(cpu),
        "cpu_p50_ms": _percentile(cpu, 0.5),
        "cpu_p99_ms": _percentile(cpu, 0.99),
        "wall_p50_ms": _percentile(wall, 0.5),
        "wall_p99_ms": _percentile(wall, 0.99),
        "images_per_s": samples / elapsed,
    }


def checks_cpu_ms(samples: int) -> float:
    """Mean CPU milliseconds per 600 x 600 JPEG for decode + detection + all checks, in this process."""
    return measure(samples)["cpu_mean_ms"]


async def pool_rate(workers: int, samples: int, policy: str) -> float:
    blobs = list(images().values())
    pool = CheckPool(workers)
    try:
        await asyncio.gather(*(pool.evaluate(blob, policy) for blob in blobs))
        started = time.perf_counter()
        await asyncio.gather(*(pool.evaluate(blobs[i % len(blobs)], policy) for i in range(samples)))
        return samples / (time.perf_counter() - started)
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--policy", default="us_passport")
    parser.add_argument("--workers", type=int, default=0, help="also measure a CheckPool of this many processes")
    args = parser.parse_args()
    figures = measure(args.samples, args.policy)
    print(f"{args.samples} images ({len(images())} variants, {SIDE}x{SIDE} JPEG), policy {args.policy}, 1 process")
    print(
        f"CPU per image: mean {figures['cpu_mean_ms']:.2f} ms, p50 {figures['cpu_p50_ms']:.2f} ms, "
        f"p99 {figures['cpu_p99_ms']:.2f} ms"
    )
    print(f"wall per image: p50 {figures['wall_p50_ms']:.2f} ms, p99 {figures['wall_p99_ms']:.2f} ms")
    print(f"throughput: {figures['images_per_s']:.0f} images/s")
    print("CPU per variant: " + ", ".join(f"{name} {figures[name]:.1f} ms" for name in images()))
    if args.workers:
        rate = asyncio.run(pool_rate(args.workers, args.samples, args.policy))
        print(f"CheckPool({args.workers}) on {os.cpu_count()} CPUs: {rate:.0f} images/s")


if __name__ == "__main__":
    main()
