"""Photo checks benchmark: CPU and wall time of decode + detection + every check, per 600 x 600 JPEG.

    python bench/photo_checks.py [--samples 500] [--policy us_passport] [--workers N]

Builds 600 x 600 JPEGs from scikit-image's astronaut portrait (the compliant US passport framing and a few variants:
rolled, dark, blurred, busy backdrop, a second face, a group photo, no face; test-only dependency), warms the
detector, then evaluates `--samples` images round-robin in this process, timing each with time.process_time (CPU of
every thread of the process) and perf_counter (wall). Prints CPU per image (mean, p50, p99), wall p50/p99 and
images/s and the mean CPU of each variant; then, in the same run, the detector's MediaPipe graphs alone and MediaPipe's
stock FaceMesh on the same images, the baseline the checks are a ratio of (machines differ from day to day by a third;
the ratio does not). With --workers, also images/s through a CheckPool of that many processes.
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processors.photo.checks import CheckPool, evaluate
from processors.photo.checks.decode import decode, open_image
from processors.photo.checks.detector import shared_detector

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


def _mean_cpu_ms(samples: int, calls: list[Callable[[], object]]) -> float:
    started = time.process_time()
    for i in range(samples):
        calls[i % len(calls)]()
    return (time.process_time() - started) * 1000 / samples


def measure(samples: int, policy: str = "us_passport") -> dict[str, float]:
    """The checks per image, then, in the same run and on the same decoded images, two baselines: our detector's
    MediaPipe graphs alone (the models' share of the checks) and MediaPipe's stock FaceMesh solution (short-range
    detector and mesh with attention), a fixed workload that shows how fast the machine is that day."""
    from mediapipe.python.solutions.face_mesh import FaceMesh

    named = list(images().items())
    for _, blob in named:
        evaluate(blob, policy)  # warm: detector graphs built, caches filled
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
    rgbs = [decode(*open_image(blob)).rgb for _, blob in named]
    detector = shared_detector()
    with FaceMesh(static_image_mode=True, refine_landmarks=True) as stock:
        for rgb in rgbs:
            stock.process(rgb)
        baselines = {
            "graphs_mean_ms": _mean_cpu_ms(samples, [functools.partial(detector.detect, rgb) for rgb in rgbs]),
            "facemesh_mean_ms": _mean_cpu_ms(samples, [functools.partial(stock.process, rgb) for rgb in rgbs]),
        }
    return (
        {name: statistics.fmean(values) for name, values in per_variant.items() if values}
        | baselines
        | {
            "cpu_mean_ms": statistics.fmean(cpu),
            "cpu_p50_ms": _percentile(cpu, 0.5),
            "cpu_p99_ms": _percentile(cpu, 0.99),
            "wall_p50_ms": _percentile(wall, 0.5),
            "wall_p99_ms": _percentile(wall, 0.99),
            "images_per_s": samples / elapsed,
        }
    )


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
    graphs, facemesh = figures["graphs_mean_ms"], figures["facemesh_mean_ms"]
    print(f"of which the detector's MediaPipe graphs: {graphs:.2f} ms ({graphs / figures['cpu_mean_ms']:.0%})")
    print(
        f"baseline, MediaPipe's stock FaceMesh on the same images: {facemesh:.2f} ms; "
        f"checks / baseline {figures['cpu_mean_ms'] / facemesh:.2f}"
    )
    if args.workers:
        rate = asyncio.run(pool_rate(args.workers, args.samples, args.policy))
        print(f"CheckPool({args.workers}) on {os.cpu_count()} CPUs: {rate:.0f} images/s")


if __name__ == "__main__":
    main()
