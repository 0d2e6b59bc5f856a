"""Idle benchmark: what a whole `signalyard up` costs while nobody calls it, and what the first call after a quiet
spell then waits.

    python bench/idle.py [--tree DIR ...] [--rounds 2] [--settle 20] [--idle 30] [--gaps 0,1,5,15] [--repeats 3]

For each `--tree` (a checkout; its code runs the stack through PYTHONPATH, so a baseline checkout and this one can
be compared in one session) and each round, in turn: starts `signalyard up` (phone and photo, the embedded broker,
SQLite in a temp dir), sends a phone verify and a photo verify until each answers 200 (the consumer groups have
joined), waits `--settle` seconds, then measures for `--idle` seconds the CPU used by the launcher and every process
below it (the processors children, their image-check workers, the Tansu broker), as a share of one core. Then it
times a phone verify and, at once after it, a photo verify: first right after that idle window, then `--repeats`
times after each pause of `--gaps` seconds with no traffic at all (0 = back to back: a warm stack's latency). Each
request goes on a new connection, as a client coming back after a pause would.

Prints one column per tree (the median over rounds and repeats, and the range) and writes every figure to
bench/results/idle-<timestamp>.json. Not a test: it always exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

from phone import _stat, cmdline, cpu_seconds  # noqa: E402
from photo import BOUNDARY, jpegs, multipart  # noqa: E402

from signalyard.embedded_broker import free_port  # noqa: E402

# ------------------------------------------------------------------------------------------------ processes


def descendants(root: int) -> dict[int, str]:
    """Every process below `root` and `root` itself: pid -> what it is (launcher, processors NAME, broker, ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            parents[int(entry)] = int(fields[1])
    found = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    return {pid: _role(pid, root) for pid in found}


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "launcher"
    command = cmdline(pid).replace(b"\0", b" ").decode(errors="replace")
    if "tansu" in command:
        return "broker"
    if match := re.search(r"processors (\w+)", command):
        return f"processors {match[1]}"
    return "workers"  # the image-check pool's processes and multiprocessing's helpers


def cpu_by_role(root: int) -> dict[str, float]:
    used: dict[str, float] = defaultdict(float)
    for pid, role in descendants(root).items():
        used[role] += cpu_seconds(pid)
    return dict(used)


class Stack:
    """`signalyard up` from one checkout, on free ports, with its data in a temp dir."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-idle-"))
        self.phone_port, self.photo_port = free_port(), free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNALYARD_")} | {
            "PYTHONPATH": str(tree),
            "SIGNALYARD_DATA_DIR": str(self.workdir),
            "SIGNALYARD_PHONE_PORT": str(self.phone_port),
            "SIGNALYARD_PHOTO_PORT": str(self.photo_port),
            "SIGNALYARD_LOG_LEVEL": "warning",
        }
        self.process: subprocess.Popen[str] | None = None

    def start(self, timeout_s: float = 90) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "signalyard.cli", "up"],
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        banner = ""
        deadline = time.monotonic() + timeout_s
        assert self.process.stdout is not None
        while "Ctrl-C stops everything" not in banner:
            line = self.process.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise SystemExit(f"signalyard up from {self.tree} did not start:\n{banner}")
            banner += line
        self.phone_key = (self.workdir / "demo-sandbox-key").read_text().strip()
        self.photo_key = (self.workdir / "demo-photo-sandbox-key").read_text().strip()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


# ------------------------------------------------------------------------------------------------ requests


class Caller:
    """One request at a time, each on a new connection (a quiet spell outlives the server's keep-alive)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.image = multipart(jpegs(1)[0])
        self.n = int(time.time()) % 10_000_000

    def phone(self) -> tuple[int, float]:
        self.n += 1
        body = {"phone": f"+1415{2_000_000 + self.n % 8_000_000:07d}", "name": "John Smith", "subject_type": "person"}
        headers = {"Authorization": f"Bearer {self.stack.phone_key}", "Idempotency-Key": uuid.uuid4().hex}
        return self._timed(f"http://127.0.0.1:{self.stack.phone_port}/v1/verify", headers, json.dumps(body).encode())

    def photo(self) -> tuple[int, float]:
        headers = {
            "X-API-Key": self.stack.photo_key,
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        }
        return self._timed(f"http://127.0.0.1:{self.stack.photo_port}/v1/verify", headers, self.image)

    def _timed(self, url: str, headers: dict[str, str], body: bytes) -> tuple[int, float]:
        if "Authorization" in headers:
            headers = headers | {"Content-Type": "application/json"}
        with httpx.Client(timeout=60) as client:
            started = time.perf_counter()
            response = client.post(url, headers=headers, content=body)
            return response.status_code, (time.perf_counter() - started) * 1000

    def until_200(self, call: str, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, _ = getattr(self, call)()
            if status == 200:
                return
            time.sleep(0.5)
        raise SystemExit(f"{call} verify never answered 200 from {self.stack.tree}")


# ------------------------------------------------------------------------------------------------ one run


def one_run(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    stack = Stack(tree)
    latency: dict[str, dict[str, list[float]]] = {"phone": {}, "photo": {}}
    statuses: Counter[str] = Counter()

    def timed(label: str) -> None:
        for service in ("phone", "photo"):
            status, ms = getattr(caller, service)()
            statuses[f"{service} {status}"] += 1
            if status == 200:
                latency[service].setdefault(label, []).append(round(ms, 1))

    try:
        stack.start()
        caller = Caller(stack)
        caller.until_200("phone")
        caller.until_200("photo")
        time.sleep(args.settle)
        before, wall = cpu_by_role(stack.pid), time.perf_counter()
        time.sleep(args.idle)
        after, elapsed = cpu_by_role(stack.pid), time.perf_counter() - wall
        idle = {role: 100 * (after[role] - before.get(role, 0.0)) / elapsed for role in after}
        idle["total"] = sum(idle.values())
        timed("idle")
        for gap in args.gaps:
            for _ in range(args.repeats):
                time.sleep(gap)
                timed(f"{gap:g}")
        return {
            "idle_cpu_percent": {role: round(value, 2) for role, value in idle.items()},
            "latency_ms": latency,
            "statuses": dict(statuses),
        }
    finally:
        stack.stop()


def _median(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def report(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    """One column per tree: the median over its runs (and repeats), with the range."""
    rows: list[tuple[str, list[str]]] = []
    roles = sorted({role for tree in runs.values() for run in tree for role in run["idle_cpu_percent"]})
    for role in ["total", *(role for role in roles if role != "total")]:
        values = [_median([run["idle_cpu_percent"].get(role, 0.0) for run in tree]) for tree in runs.values()]
        rows.append((f"idle CPU, % of a core: {role}", values))
    labels = [(f"{gap:g}", "back to back" if gap == 0 else f"after {gap:g} s quiet") for gap in args.gaps]
    labels.append(("idle", f"after the idle window ({args.settle + args.idle:g} s quiet)"))
    for service in ("phone", "photo"):
        for key, label in labels:
            values = [
                _median([ms for run in tree for ms in run["latency_ms"][service].get(key, [])])
                for tree in runs.values()
            ]
            rows.append((f"{service} verify ms, {label}", values))
    width = max(len(name) for name, _ in rows)
    columns = [max(len(tree), *(len(values[i]) for _, values in rows)) for i, tree in enumerate(runs)]
    lines = ["", f"{'':<{width}}  " + "  ".join(f"{tree:>{columns[i]}}" for i, tree in enumerate(runs))]
    for name, values in rows:
        lines.append(f"{name:<{width}}  " + "  ".join(f"{value:>{columns[i]}}" for i, value in enumerate(values)))
    lines.append("")
    for tree, tree_runs in runs.items():
        answers: Counter[str] = Counter()
        for run in tree_runs:
            answers.update(run["statuses"])
        lines.append(f"answers from {tree} ({len(tree_runs)} runs): {dict(sorted(answers.items()))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/idle.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tree",
        action="append",
        type=Path,
        help="a checkout whose code runs the stack (repeatable; default: this one)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="runs of each tree, interleaved (default 2)")
    parser.add_argument("--settle", type=float, default=20, help="seconds after the first 200s before measuring")
    parser.add_argument("--idle", type=float, default=30, help="seconds of idle CPU measurement (default 30)")
    parser.add_argument(
        "--gaps",
        type=lambda text: [float(part) for part in text.split(",")],
        default=[0, 1, 5, 15],
        help="quiet seconds before each timed pair of requests (default 0,1,5,15; 0 = back to back)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed requests per gap and run (default 3)")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in (args.tree or [HERE.parent])]
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {str(tree): [] for tree in trees}
    for round_ in range(args.rounds):
        for tree in trees:
            print(f"[{time.strftime('%H:%M:%S')}] round {round_ + 1}: {tree}", file=sys.stderr, flush=True)
            run = one_run(tree, args)
            runs[str(tree)].append(run)
            print(f"  idle total {run['idle_cpu_percent']['total']:.2f}% of a core", file=sys.stderr, flush=True)
    result = {
        "benchmark": "idle",
        "finished_at": datetime.now(UTC).isoformat(),
        "settings": {k: v for k, v in vars(args).items() if k != "tree"},
        "machine": {"cpus": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    output = RESULTS / f"idle-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    output.write_text(json.dumps(result, indent=2))
    print(report(runs, args))
    print(f"\nload average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; figures in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
