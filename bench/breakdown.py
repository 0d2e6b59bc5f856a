"""Where a request's CPU goes: per process and per step, under a benchmark's load.

    python bench/breakdown.py phone      [--seconds 10] [--rate 200] [--database-url URL]
    python bench/breakdown.py phone-open [...]            # phone's open loop at half its best rate
    python bench/breakdown.py helpdesk   [...]            # REST ticket creates
    python bench/breakdown.py replies    [...]            # helpdesk REST replies, each mailed
    python bench/breakdown.py photo      [...]

Runs the path's benchmark (bench/phone.py, bench/helpdesk.py, bench/helpdesk_replies.py, bench/photo.py) at
concurrency 32 and, a few seconds into its closed loop against the stack (phone-open: into its open loop), for
`--seconds`:

- reads each process's CPU time from /proc (`utime + stime` of the stack's process tree: the gateway, the processors,
  their image workers, the broker) before and after, so that each process's CPU per answered request is known
  (requests = the phase's answers a second, as the benchmark reports it, times the window);
- samples the Python processes with py-spy (`pip install py-spy`; `record --subprocesses --gil --format raw`: the
  thread that holds the GIL, when one does), and splits each process's CPU by step: the deepest frame of a sample
  that a step's rule names (STEPS, in order; a frame of our own code not named by any rule is shown by its module and
  function), and by layer: the innermost frame's library (LAYERS).

Prints a table per process (CPU ms per request, and each step's and layer's share of it) and writes the figures to
bench/results/breakdown-<path>-<timestamp>.json. py-spy samples without stopping the processes (`--nonblocking`),
at `--rate` a second; its own CPU is not counted, but takes a little from the two cores. Not a test: exits 0 when it
ran.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TICKS = os.sysconf("SC_CLK_TCK")

PATHS: dict[str, tuple[str, list[str], str]] = {
    # path: (the benchmark, its arguments, the line that starts the stack's closed loop at concurrency 32)
    "phone": ("phone.py", ["--concurrency", "32"], "closed loop: stack, concurrency 32"),
    "helpdesk": ("helpdesk.py", ["--concurrency", "32"], "closed loop: stack, concurrency 32"),
    "replies": ("helpdesk_replies.py", ["--concurrency", "32"], "closed loops: replies, concurrency 32"),
    "photo": ("photo.py", ["--concurrency", "32"], "closed loop: stack, concurrency 32"),
    "phone-open": ("phone.py", ["--concurrency", "32"], "open loop: stack at"),
}
ANSWERED = re.compile(r"\s([\d.]+) ok/s")
OFFERED = re.compile(r" at ([\d.]+) req/s")
"""An open loop's rate, in the line that starts it: the requests offered a second, answered as they come."""

STEPS: list[tuple[str, re.Pattern[str]]] = [
    (step, re.compile(pattern))
    for step, pattern in [
        # the request's way in and out
        ("HTTP server (uvicorn, httptools)", r"\((uvicorn|httptools|h11)/"),
        ("framework (Litestar: routing, middleware, response)", r"\(litestar/"),
        ("access log and metrics", r"\((gateway/common/http\.py|prometheus_client/|structlog/)"),
        ("auth (key look-up, scopes)", r"\(gateway/\w+/auth\.py|gateway/common/auth\.py|Authenticator"),
        ("rate limit", r"\((limits/|gateway/common/limits\.py|gateway/common/rate)"),
        ("idempotency", r"[Ii]dempoten"),
        ("request body decode", r"decode_body|\(msgspec/|_decode_"),
        # the pipeline
        ("publish (producer)", r"\(aiokafka/producer/|publish_together|Platform\.publish|\.publish \("),
        ("consume (FastStream, aiokafka consumer)", r"\((faststream/|aiokafka/consumer/)|processors/common/consumer"),
        ("offsets", r"processors/common/offsets"),
        ("waiting for a result (the waiter)", r"gateway/common/waiter"),
        ("outbox sweeper", r"processors/common/outbox"),
        ("webhook events and deliveries", r"processors/common/webhooks|storage/common/webhooks"),
        # the work
        ("phone: verify work", r"processors/phone/(?!name_match)"),
        ("phone: name match", r"processors/phone/name_match"),
        ("photo: checks", r"processors/photo/checks"),
        ("photo: processor", r"processors/photo/(?!checks)"),
        ("helpdesk: reply sender", r"processors/helpdesk/outbound"),
        ("helpdesk: activity", r"processors/helpdesk/activity"),
        ("helpdesk: inbound", r"processors/helpdesk/inbound"),
        ("helpdesk: unit of work", r"operations/helpdesk/|storage/helpdesk/"),
        ("phone: unit of work", r"operations/phone/|storage/phone/"),
        ("photo: unit of work", r"operations/photo/|storage/photo/"),
        ("database round (batching, transaction)", r"storage/common/(batching|db|later)\.py"),
    ]
]
LAYERS: list[tuple[str, re.Pattern[str]]] = [
    (layer, re.compile(pattern))
    for layer, pattern in [
        ("SQLAlchemy", r"\(sqlalchemy/"),
        ("SQLite driver", r"\((aiosqlite/|sqlite3/)|\.execute \(|commit \("),
        ("asyncpg", r"\(asyncpg/"),
        ("aiokafka", r"\(aiokafka/"),
        ("FastStream", r"\(faststream/"),
        ("Litestar", r"\(litestar/"),
        ("uvicorn, httptools", r"\((uvicorn|httptools)/"),
        ("msgspec, json", r"\((msgspec|json)/"),
        ("asyncio, uvloop", r"\((asyncio|uvloop|selectors)/|<built-in method run|_run_once"),
        ("images (numpy, PIL, OpenCV, MediaPipe)", r"\((numpy|PIL|cv2|mediapipe|skimage)/"),
        ("email, smtp", r"\((email|aiosmtplib|smtplib)/"),
        ("httpx, httpcore", r"\((httpx|httpcore|h11|anyio)/"),
        ("cryptography", r"\(cryptography/"),
        ("logging, metrics", r"\((structlog|logging|prometheus_client)/"),
        ("our code", r"\((gateway|operations|processors|storage|wire|topics|signalyard|net)/"),
    ]
]

OWN_FRAME = re.compile(r"(.+) \(((?:gateway|operations|processors|storage|wire|topics|net)/[\w/]+)\.py:\d+\)")


@dataclass
class Process:
    pid: int
    name: str
    cpu_s: float = 0.0
    steps: Counter[str] = field(default_factory=Counter)
    layers: Counter[str] = field(default_factory=Counter)


def tree(root: int) -> list[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children[int(fields[1])].append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def name_of(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [part.decode(errors="replace") for part in argv if part]
    text = " ".join(words)
    if "tansu" in text:
        return "broker (Tansu)"
    if "processors" in words:
        return "processors " + words[-1]
    if " up" in text or text.endswith("up"):
        return "gateway (signalyard up)"
    if "multiprocessing" in text or "spawn_main" in text:
        return "image worker"
    return Path(words[0]).name if words else "?"


def the_stack(bench: int) -> int | None:
    """The `signalyard up` process the benchmark started."""
    for pid in tree(bench):
        if name_of(pid) == "gateway (signalyard up)":
            return pid
    return None


def classify(frames: list[str]) -> tuple[str, str]:
    """(step, layer) of one sample: its deepest frame a step names (else its deepest frame of our own code, by module
    and function), and its innermost frame's layer."""
    step = "event loop (uvloop's I/O and callbacks)" if frames and "Runner.run" in frames[-1] else "other"
    for frame in frames:
        for name, rule in STEPS:
            if rule.search(frame):
                step = name
                break
        else:
            own = OWN_FRAME.match(frame)
            if own:
                step = f"{own.group(2)}: {own.group(1)}"
    layer = "other"
    for frame in reversed(frames):
        matched = next((name for name, rule in LAYERS if rule.search(frame)), None)
        if matched:
            layer = matched
            break
    return step, layer


def read_samples(raw: Path, processes: dict[int, Process]) -> None:
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        pid = None
        for index, frame in enumerate(frames):
            found = re.match(r"process (\d+):", frame)
            if found:
                pid, rest = int(found.group(1)), frames[index + 1 :]
        if pid is None or pid not in processes:
            continue
        step, layer = classify(rest)
        processes[pid].steps[step] += int(count)
        processes[pid].layers[layer] += int(count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", choices=sorted(PATHS))
    parser.add_argument("--seconds", type=float, default=10, help="the sampled window (default 10)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples a second (default 200)")
    parser.add_argument("--database-url", help="the benchmark's --database-url")
    parser.add_argument("--top", type=int, default=12, help="steps shown per process (default 12)")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        parser.error("py-spy is not installed: pip install py-spy")
    script, extra, marker = PATHS[args.path]
    duration = args.seconds + 8
    argv = [sys.executable, str(HERE / script), *extra, "--duration", f"{duration:g}"]
    if args.database_url:
        argv += ["--database-url", args.database_url]
    workdir = Path(tempfile.mkdtemp(prefix="breakdown-"))
    bench = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert bench.stderr is not None
    lines: list[str] = []
    started = threading.Event()
    answered: list[float] = []

    def follow() -> None:
        assert bench.stderr is not None
        waiting_for_rate = False
        for line in bench.stderr:
            lines.append(line)
            sys.stderr.write(line)
            if marker in line and not started.is_set():
                started.set()
                if offered := OFFERED.search(line):
                    answered.append(float(offered.group(1)))
                else:
                    waiting_for_rate = True
            elif waiting_for_rate and (rate := ANSWERED.search(line)):
                answered.append(float(rate.group(1)))
                waiting_for_rate = False

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    if not started.wait(600):
        bench.kill()
        print("the benchmark's closed loop did not start:\n" + "".join(lines[-20:]), file=sys.stderr)
        return 1
    time.sleep(4)  # past the phase's warm-up
    stack = the_stack(bench.pid)
    if stack is None:
        bench.kill()
        print("no `signalyard up` under the benchmark", file=sys.stderr)
        return 1
    pids = tree(stack)
    processes = {pid: Process(pid, name_of(pid)) for pid in pids}
    before = {pid: cpu_seconds(pid) for pid in pids}
    raw = workdir / "samples.txt"
    record = [spy, "record", "--pid", str(stack), "--subprocesses", "--nonblocking", "--gil", "--format", "raw"]
    record += ["--rate", str(args.rate), "--duration", f"{args.seconds:g}", "--output", str(raw)]
    spied = subprocess.run(
        record,
        capture_output=True,
        text=True,
        check=False,
    )
    after = {pid: cpu_seconds(pid) for pid in pids}
    for pid, process in processes.items():
        began, ended = before[pid], after[pid]
        process.cpu_s = (ended - began) if began is not None and ended is not None else 0.0
    bench.wait()
    reader.join(5)
    if not raw.exists():
        print(f"py-spy wrote nothing: {spied.stderr[-1000:]}", file=sys.stderr)
        return 1
    read_samples(raw, processes)
    if not answered:
        print("the benchmark did not report the phase's rate", file=sys.stderr)
        return 1
    requests = answered[0] * args.seconds
    result = report(args.path, processes, requests, answered[0], args)
    out = HERE / "results" / f"breakdown-{args.path}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nfigures written to {out.relative_to(ROOT)}")
    if not os.environ.get("BREAKDOWN_KEEP"):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"samples kept in {raw}")
    return 0


def report(path: str, processes: dict[int, Process], requests: float, rate: float, args: Any) -> dict[str, Any]:
    merged: dict[str, Process] = {}
    for process in processes.values():  # image workers (and any other repeated name) summed
        into = merged.setdefault(process.name, Process(process.pid, process.name))
        into.cpu_s += process.cpu_s
        into.steps.update(process.steps)
        into.layers.update(process.layers)
    total_ms = sum(process.cpu_s for process in merged.values()) * 1000 / requests
    load = "in its open loop" if path.endswith("-open") else "at concurrency 32"
    print(f"\n{path}: {rate:.1f} answers/s {load}; CPU per answer {total_ms:.3f} ms over the stack")
    figures: dict[str, Any] = {"path": path, "answers_per_s": rate, "cpu_ms_per_answer": round(total_ms, 4)}
    figures["processes"] = {}
    for process in sorted(merged.values(), key=lambda p: -p.cpu_s):
        ms = process.cpu_s * 1000 / requests
        if ms < 0.005:
            continue
        samples = sum(process.steps.values())
        print(f"\n  {process.name}: {ms:.3f} ms a request ({process.cpu_s / args.seconds:.0%} of a core)")
        entry: dict[str, Any] = {"cpu_ms_per_answer": round(ms, 4), "samples": samples}
        if samples:
            steps = [(name, count / samples * ms) for name, count in process.steps.most_common()]
            layers = [(name, count / samples * ms) for name, count in process.layers.most_common()]
            for name, share in steps[: args.top]:
                print(f"    {share:7.3f} ms  {name}")
            rest = sum(share for _, share in steps[args.top :])
            if rest:
                print(f"    {rest:7.3f} ms  (the rest)")
            print("    by layer: " + ", ".join(f"{name} {share:.3f}" for name, share in layers[:8]))
            entry["steps_ms"] = {name: round(share, 4) for name, share in steps}
            entry["layers_ms"] = {name: round(share, 4) for name, share in layers}
        figures["processes"][process.name] = entry
    return figures


if __name__ == "__main__":
    sys.exit(main())
