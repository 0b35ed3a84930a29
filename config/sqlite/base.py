"""SQLite whose write transactions queue for the database instead of polling for it.

Every transaction starts with ``BEGIN IMMEDIATE`` (``config.settings``), so SQLite admits one
writer at a time. A writer that finds the lock taken is put to sleep by SQLite's busy handler
in growing steps (up to 100 ms each) and retries, however soon the lock came free. Under a few
concurrent annotators that polling, not the work, made most of the waiting: a submission could
sleep a second behind transactions of a few milliseconds.

Here a writer first takes an exclusive ``flock`` on a file beside the database (every thread's
connection opens its own descriptor, so threads and processes queue alike); the kernel wakes
the next writer the moment the lock is released, at commit or rollback. By the time ``BEGIN
IMMEDIATE`` runs, no other queued writer holds SQLite's lock. Single statements outside a
transaction (autocommit) do not queue and still rely on the busy timeout.
"""

import fcntl
import os

from django.db.backends.sqlite3 import base


class DatabaseWrapper(base.DatabaseWrapper):
    _queue_fd: int | None = None
    _queued = False

    def _writer_queue(self) -> int | None:
        """The descriptor of ``<database>-writers``; None for an in-memory database."""
        if self._queue_fd is None and not self.is_in_memory_db():
            self._queue_fd = os.open(f"{self.settings_dict['NAME']}-writers", os.O_RDWR | os.O_CREAT, 0o600)
        return self._queue_fd

    def _start_transaction_under_autocommit(self):
        queue = self._writer_queue()
        if queue is not None:
            fcntl.flock(queue, fcntl.LOCK_EX)
            self._queued = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._leave_queue()
            raise

    def _leave_queue(self) -> None:
        if self._queued:
            self._queued = False
            fcntl.flock(self._queue_fd, fcntl.LOCK_UN)

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self._leave_queue()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self._leave_queue()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._leave_queue()
            if self._queue_fd is not None:
                os.close(self._queue_fd)
                self._queue_fd = None
