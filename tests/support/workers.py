"""What a real Celery worker subprocess needs to work on the test database."""

import os
import threading
import time
from pathlib import Path

from django.db import connection


def worker_environment(tmp_path: Path) -> dict:
    """The test database, a filesystem broker in ``tmp_path`` and a fast heartbeat."""
    db = connection.settings_dict
    return dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="config.settings_test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        VAR_DIR=str(tmp_path),
        CELERY_BROKER_URL="filesystem://",
        WORKER_HEARTBEAT_SECONDS="1",
        LOG_LEVEL="WARNING",
    )


def deliver_on_threads(monkeypatch, task_path: str, run, *, latency: float = 1.5) -> list:
    """Replace the Celery task at ``task_path`` so that ``.delay(job_id)`` runs ``run(job_id)`` on a
    thread after ``latency`` seconds (the queue's: a page shows the job waiting first), as a
    worker would; returns the threads, for the caller to join."""
    threads = []

    def deliver(job_id: int) -> None:
        def work():
            try:
                time.sleep(latency)
                run(job_id)
            finally:
                connection.close()

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        threads.append(thread)

    monkeypatch.setattr(f"{task_path}.delay", deliver)
    return threads
