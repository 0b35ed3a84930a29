"""Background import jobs: an uploaded file, the format to read it as, and what the import stored
or every error it found."""

from django.conf import settings
from django.db import models

from core.models import Job


class ImportJob(Job):
    """One upload imported by a Celery worker (``benchmark.tasks.run_import_job``), never inside a
    request. The upload waits in ``VAR_DIR/imports/<upload_dir>/`` and is deleted once the job
    ends; a worker that dies mid-import is recovered like every job (``core.jobs``)
    — the import is one transaction, so a half-run import stored nothing and simply runs again."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    format = models.CharField(max_length=40, help_text="an importer of benchmark.importers.catalogue")
    original_name = models.CharField(max_length=255, help_text="the uploaded file's name, as errors name it")
    upload_dir = models.CharField(max_length=100, blank=True, help_text="folder under VAR_DIR/imports; empty once ended")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    counts = models.JSONField(default=dict, blank=True, help_text='{"task": {"created": 3, "unchanged": 1}}')
    messages = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True, help_text="[{file, line, field, message}]; nothing stored")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    queued_status, running_status = Status.QUEUED, Status.RUNNING

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    def __str__(self) -> str:
        return f"import #{self.pk} {self.format} {self.original_name} ({self.status})"
