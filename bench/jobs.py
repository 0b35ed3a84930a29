"""Executing a started run's jobs the way a threaded Celery worker would, for the benches."""

from __future__ import annotations

import queue
import threading


def execute_jobs(run, judge, *, threads: int) -> list[str]:
    """Run every job of ``run`` (already started, nothing enqueued) on ``threads`` threads with
    ``judge``; the outcome of each job (``job_execute``'s answer), in completion order."""
    from django.db import connection

    from scoring.services.runs import job_execute

    jobs: queue.Queue[int] = queue.Queue()
    for pk in run.jobs.order_by("pk").values_list("pk", flat=True):
        jobs.put(pk)
    outcomes: list[str] = []

    def worker() -> None:
        try:
            while True:
                try:
                    pk = jobs.get_nowait()
                except queue.Empty:
                    return
                outcomes.append(job_execute(job_id=pk, judge=judge, enqueue=False))
        finally:
            connection.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return outcomes
