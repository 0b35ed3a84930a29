from django.db import models


class WorkerHeartbeat(models.Model):
    """A live Celery worker. Workers refresh their row every few seconds; see ``scoring.workers``."""

    hostname = models.CharField(max_length=255, unique=True)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.hostname
