"""The processes a process has started, grandchildren included: for the checks that nothing is left behind."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    pid: int
    started: int
    """Clock ticks after boot: with the pid, names one process even once the pid is reused."""
    command: str

    @property
    def running(self) -> bool:
        """Still there, and not a zombie (which runs nothing and holds nothing but its entry)."""
        stat = _stat(self.pid)
        return stat is not None and stat[1] == str(self.started) and stat[0] != "Z"

    def __str__(self) -> str:
        return f"{self.pid} {self.command}"


def children_of(pid: int) -> list[int]:
    """Every thread's children (a child is listed under the thread that started it)."""
    found = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:  # the process is gone
        return []
    for task in tasks:
        with contextlib.suppress(FileNotFoundError):  # the thread ended meanwhile
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def descendants_of(pid: int) -> list[Process]:
    """Every running process started by `pid` or by one of its descendants (at this moment)."""
    found = []
    for child in children_of(pid):
        stat = _stat(child)
        if stat is None or stat[0] == "Z":
            continue
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except FileNotFoundError:  # it ended meanwhile
            continue
        found += [Process(child, int(stat[1]), command.strip()[:160]), *descendants_of(child)]
    return found


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) from /proc/PID/stat, or None once the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (command)", which may hold spaces
    return fields[0], fields[19]
