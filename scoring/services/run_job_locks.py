"""How evaluation jobs (``RunJob``) are claimed: a worker holds the job's PostgreSQL session
advisory lock while executing it, so recovery tells a job that no live worker executes (its
lock is free) from a busy one. Elsewhere (SQLite) the worker hostname on the row and the
heartbeats decide. The other job kinds use only the hostname (``core.jobs``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)

# Advisory lock keys are one bigint: this namespace plus the job id (ids below 2**40).
_LOCK_NAMESPACE = 0x5E5 << 40


@contextlib.contextmanager
def job_lock(job_id: int) -> Iterator[bool]:
    """Hold the job's session advisory lock while executing it (PostgreSQL; elsewhere always granted)."""
    if connection.vendor != "postgresql":
        yield True
        return
    key = _LOCK_NAMESPACE + int(job_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
            except DatabaseError:  # the connection is gone, and with it the lock
                logger.warning("could not release the lock of job %s; the connection was lost", job_id)


def orphaned_jobs(running_jobs, *, lost: Sequence[str] | None = None) -> set[int]:
    """Of these running jobs, those no live worker executes. On PostgreSQL: those whose advisory
    lock is free, taken with a transaction lock so no worker claims them until the caller commits.
    Elsewhere, for recovery (``lost`` given): those claimed by a worker that is lost or has no
    live heartbeat (a command's jobs, with no worker, are left alone); for an explicit resume
    (``lost`` None): all of them (see the module doc)."""
    if connection.vendor != "postgresql":
        if lost is None:
            return set(running_jobs.values_list("pk", flat=True))
        from scoring.workers import live_workers  # scoring.workers imports runs, which imports this module

        alive = {w.hostname for w in live_workers()} - set(lost)
        return set(running_jobs.exclude(worker="").exclude(worker__in=alive).values_list("pk", flat=True))
    ids = list(running_jobs.values_list("pk", flat=True))
    if not ids:
        return set()
    orphans = set()
    with connection.cursor() as cursor:
        for job_id in ids:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_LOCK_NAMESPACE + job_id])
            if cursor.fetchone()[0]:
                orphans.add(job_id)
    return orphans
