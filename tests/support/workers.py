"""What a real Celery worker subprocess needs to work on the test database."""

import os
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
