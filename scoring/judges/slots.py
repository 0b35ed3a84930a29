"""An endpoint's ``max_concurrency`` held across processes and machines: numbered slots, each a lock.

A request to an endpoint holds one of its slots ``0 .. limit-1`` while it is on the wire. A slot
is a lock that the operating system or the database releases by itself when its holder dies, so
a killed worker never leaks one (no lease to expire, no row to clean up):

* PostgreSQL (every process on every machine shares the database): a session advisory lock
  ``(namespace of the endpoint, slot number)`` taken on one dedicated connection per process,
  outside Django's connections (judge threads never touch the ORM).
* Any other database (the embedded SQLite default, one machine): an exclusive ``flock`` on
  ``VAR_DIR/judge-slots/<endpoint hash>/<slot>.lock``.

A caller with limit n only ever takes slots below n, so a configuration never has more than
its own ``max_concurrency`` requests in flight on the endpoint, from however many processes.
Waiting is polling (every ``POLL_SECONDS``) until a slot is free or the caller's deadline passes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

POLL_SECONDS = 0.02


class SlotTimeout(Exception):
    """No slot became free before the caller's deadline."""


def _endpoint_hash(endpoint: str) -> bytes:
    return hashlib.sha256(endpoint.encode("utf-8")).digest()


class FileSlots:
    """Slots as ``flock``-ed files: an open file description per held slot (threads and processes alike)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def try_take(self, endpoint: str, index: int) -> object | None:
        folder = self.root / _endpoint_hash(endpoint).hex()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / f"{index}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def give_back(self, endpoint: str, index: int, token: object) -> None:
        os.close(token)  # closing the description releases its flock


class PostgresSlots:
    """Slots as session advisory locks on one dedicated connection per process.

    Advisory locks are re-entrant within a session, so the process itself remembers which slots
    its threads hold and never asks for those. The connection is closed whenever the process holds
    no slot, so an idle worker keeps no extra connection open (nor a test database busy)."""

    def __init__(self, connect) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._conn = None
        self._pid = 0
        self._held: set[tuple[int, int]] = set()

    def _connection(self):
        if self._conn is None or self._pid != os.getpid() or self._conn.closed:
            self._conn, self._pid, self._held = self._connect(), os.getpid(), set()
        return self._conn

    @staticmethod
    def _key(endpoint: str, index: int) -> tuple[int, int]:
        return int.from_bytes(_endpoint_hash(endpoint)[:4], "big", signed=True), index

    def try_take(self, endpoint: str, index: int) -> object | None:
        key = self._key(endpoint, index)
        with self._lock:
            if key in self._held:
                return None
            conn = self._connection()
            try:
                taken = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()[0]
            except Exception:
                self._conn = None  # a lost connection lost its locks with it: start afresh next time
                raise
            if taken:
                self._held.add(key)
                return key
            return None

    def give_back(self, endpoint: str, index: int, token: object) -> None:
        with self._lock:
            if token not in self._held:
                return
            self._held.discard(token)
            try:
                if self._held:
                    self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", token)
                else:
                    self._conn.close()  # releases the lock with the session
                    self._conn = None
            except Exception:
                self._conn = None  # the session is gone, and its locks with it


class SharedSlots:
    """The backend for the configured database, chosen on first use."""

    def __init__(self) -> None:
        self._backend = None
        self._lock = threading.Lock()

    def backend(self):
        with self._lock:
            if self._backend is None:
                self._backend = _backend_for_settings()
            return self._backend

    def reset(self) -> None:
        """Forget the backend: the next use picks it for the settings of then (tests switch databases)."""
        with self._lock:
            self._backend = None

    def use(self, backend) -> None:
        """Hold slots with this backend from now on (a test without database access uses ``FileSlots``)."""
        with self._lock:
            self._backend = backend

    @contextmanager
    def slot(self, endpoint: str, limit: int, *, deadline: float | None = None):
        """Hold one of the endpoint's slots ``0 .. limit-1``; ``SlotTimeout`` once ``deadline`` (monotonic) passes."""
        backend = self.backend()
        while True:
            for index in range(max(1, int(limit))):
                token = backend.try_take(endpoint, index)
                if token is not None:
                    try:
                        yield index
                    finally:
                        backend.give_back(endpoint, index, token)
                    return
            if deadline is not None and time.monotonic() >= deadline:
                raise SlotTimeout(f"no free slot for {endpoint} before the deadline")
            time.sleep(POLL_SECONDS)


def _backend_for_settings():
    from django.conf import settings
    from django.db import connection

    if connection.vendor == "postgresql":
        import psycopg

        def connect():
            params = connection.get_connection_params()
            params.pop("cursor_factory", None)
            params.pop("context", None)
            return psycopg.connect(**params, autocommit=True)

        return PostgresSlots(connect)
    return FileSlots(Path(settings.VAR_DIR) / "judge-slots")


SHARED_SLOTS = SharedSlots()
