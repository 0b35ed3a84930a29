"""Background export jobs: what was asked, how far it got, and the file it produced."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.models import Job


class ExportJob(Job):
    """One export, run by a Celery worker (``annotation.tasks.run_export``), never inside a request.

    ``file_path`` is relative to ``VAR_DIR/exports``; the file appears there only when it is
    complete (written to a temporary name, then renamed), so a failed job leaves no file.
    """

    class Kind(models.TextChoices):
        TASK_SET = "taskset", "Task set"
        ANNOTATIONS = "annotations", "Annotations"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    parameters = models.JSONField(default=dict, help_text="what to export: task set or project, format, history")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="export_jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    file_path = models.CharField(max_length=500, blank=True)
    filename = models.CharField(max_length=255, blank=True, help_text="the name the download is offered under")
    size = models.PositiveBigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    queued_status, running_status = Status.QUEUED, Status.RUNNING

    class Meta:
        db_table = "benchmark_exportjob"  # moved from benchmark with its rows
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["requested_by", "created_at"], name="benchmark_e_request_989206_idx")]
        constraints = [
            models.CheckConstraint(condition=Q(progress_done__lte=models.F("progress_total")) | Q(progress_total=0),
                                   name="exportjob_progress_bounded"),
            models.CheckConstraint(condition=~Q(status="done") | ~Q(file_path=""), name="exportjob_done_has_file"),
        ]

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return round(100 * self.progress_done / self.progress_total) if self.progress_total else 0

    def __str__(self) -> str:
        return f"export #{self.pk} {self.kind} ({self.status})"
