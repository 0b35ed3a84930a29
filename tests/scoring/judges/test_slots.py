"""Endpoint slots shared by processes: two real processes, three threads each, a limit of two."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from scoring.judges.slots import FileSlots, SharedSlots, SlotTimeout

ROOT = Path(settings.BASE_DIR)
HOLDER = """
import json, os, sys, threading, time
import django
django.setup()
from scoring.judges.slots import SHARED_SLOTS
from scoring.judges.slots import FileSlots
if os.environ.get("SLOTS_DIR"):
    SHARED_SLOTS.use(FileSlots(__import__("pathlib").Path(os.environ["SLOTS_DIR"])))
held, lock = [], threading.Lock()
print("ready", flush=True)
sys.stdin.readline()  # start together: the parent says go once both processes are set up
def hold():
    for _ in range(6):
        with SHARED_SLOTS.slot("http://endpoint.test/v1", 2, deadline=time.monotonic() + 60):
            start = time.time()
            time.sleep(0.05)
            with lock:
                held.append((start, time.time()))
threads = [threading.Thread(target=hold) for _ in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps(held))
"""


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals],
                    key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    now = top = 0
    for _, step in events:
        now += step
        top = max(top, now)
    return top


def hold_in_two_processes(env: dict) -> list[list[tuple[float, float]]]:
    processes = [subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
                 for _ in range(2)]
    # Django's setup takes each process a different time; without this barrier one process could
    # be done before the other starts, and the endpoint would never be shared.
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.close()
    results = []
    for process in processes:
        out = process.stdout.read()
        assert process.wait(timeout=120) == 0
        results.append([tuple(pair) for pair in json.loads(out)])
    return results


def check(first: list, second: list) -> None:
    assert len(first) == len(second) == 18
    assert most_at_once(first + second) == 2  # never more than the limit, across both processes
    # and the processes really did share the endpoint: some slot of one was held while the other held one
    assert any(a0 < b1 and b0 < a1 for a0, a1 in first for b0, b1 in second)


def test_file_slots_hold_the_limit_across_processes(tmp_path):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings_test", SLOTS_DIR=str(tmp_path))
    check(*hold_in_two_processes(env))


@pytest.mark.django_db
def test_postgresql_slots_hold_the_limit_across_processes():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    db = connection.settings_dict
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings_test",
               DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}")
    env.pop("SLOTS_DIR", None)
    check(*hold_in_two_processes(env))


def test_a_slot_is_released_when_its_holder_leaves_and_waiting_ends_at_the_deadline(tmp_path):
    slots = SharedSlots()
    slots.use(FileSlots(tmp_path))
    with slots.slot("e", 1) as index:
        assert index == 0
        started = time.monotonic()
        with pytest.raises(SlotTimeout, match="no free slot for e before the deadline"):
            with slots.slot("e", 1, deadline=time.monotonic() + 0.2):
                pass
        assert 0.2 <= time.monotonic() - started < 1.0
        with slots.slot("e", 2) as second:  # a wider limit takes the next slot
            assert second == 1
    with slots.slot("e", 1) as index:
        assert index == 0
