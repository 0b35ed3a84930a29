"""Peak resident memory of a process tree, read from /proc while the tree works.

Each process's own peak is its ``VmHWM`` (the kernel's high-water mark of resident memory),
so a short spike between two samples is not missed; sampling only has to see every process
of the tree before it exits (gunicorn workers, Celery's pool, a management command).
"""

from __future__ import annotations

import threading
from pathlib import Path

PROC = Path("/proc")
MiB = 1024 * 1024


def _status_kib(pid: int, key: str) -> int | None:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            text = (task / "children").read_text().split()
            found.extend(int(child) for child in text)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants that are alive now."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(_children(current))
    return tree


def command_of(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return ""


class PeakRss:
    """Sample a process tree every ``interval`` seconds in a thread; use as a context manager.

    ``peak_by_pid`` holds each process's ``VmHWM`` in bytes; ``peak_total`` the largest sum of
    the tree's current RSS seen at one sample.
    """

    def __init__(self, pid: int, *, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_by_pid: dict[int, int] = {}
        self.commands: dict[int, str] = {}
        self.peak_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        total = 0
        for pid in process_tree(self.pid):
            hwm, rss = _status_kib(pid, "VmHWM"), _status_kib(pid, "VmRSS")
            if hwm is None or rss is None:
                continue
            total += rss * 1024
            if hwm * 1024 > self.peak_by_pid.get(pid, 0):
                self.peak_by_pid[pid] = hwm * 1024
                self.commands.setdefault(pid, command_of(pid))
        self.peak_total = max(self.peak_total, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRss":
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def peak_of(self, *, exclude_root: bool = False) -> int:
        """The largest single-process peak (``exclude_root``: among the descendants only,
        e.g. gunicorn's workers without the arbiter)."""
        values = [v for pid, v in self.peak_by_pid.items() if not (exclude_root and pid == self.pid)]
        return max(values, default=0)
