"""``make faults`` stopped at a time limit leaves no process behind: with SIGTERM (``timeout``'s
signal) it runs every cleanup step; killed with SIGKILL, the kernel stops what it started
(``faults.services.die_with_parent``). Runs the real orchestrator (``python -m faults``) until its
Celery workers are up, then stops it."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.services import MACHINE_REDIS, answers

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def descendants(pid: int) -> dict[int, str]:
    """Every living process below ``pid`` (by parent links), with its command line."""
    parents, commands = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found[child] = commands.get(child, "")
                frontier.append(child)
    return found


def alive(pid: int, command: str) -> bool:
    """The same process still there, not a zombie (nobody may reap in a container)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        same = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace") == command
    except OSError:
        return False
    return same and state != "Z"


def orchestrator_with_workers() -> tuple[subprocess.Popen, dict[int, str]]:
    process = subprocess.Popen([sys.executable, "-m", "faults", "--only", "batch-providers"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        below = descendants(process.pid)
        if sum("celery" in command and " worker" in command for command in below.values()) >= 2:
            time.sleep(2)  # the scenario is under way: probes, evaluate, fake servers
            return process, descendants(process.pid)
        if process.poll() is not None:
            raise AssertionError(f"python -m faults exited with {process.returncode} before its workers started")
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError("the faults workers did not start within 240 s")


def drop_databases(pid: int) -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        for (name,) in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"ses_faults_%_{pid}"]):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def machine_services():
    if not answers(("127.0.0.1", 5432)) or not answers(MACHINE_REDIS):
        pytest.skip("needs the machine's PostgreSQL and Redis, as make faults uses them")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_stopping_make_faults_stops_every_process_it_started(how):
    process, started = orchestrator_with_workers()
    workers = [pid for pid, command in started.items() if "celery" in command]
    assert len(workers) >= 2, started
    try:
        os.kill(process.pid, how)
        process.wait(120)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(pid, command) for pid, command in started.items()):
            time.sleep(0.5)
        left = {pid: command for pid, command in started.items() if alive(pid, command)}
        assert not left, f"left running after {how.name}: {left}"
    finally:
        for pid, command in started.items():
            if alive(pid, command):
                os.kill(pid, signal.SIGKILL)
        drop_databases(process.pid)
