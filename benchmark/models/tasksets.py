"""Frozen, versioned snapshots of curated tasks."""

from django.conf import settings
from django.db import models

from .base import TimeStamped
from .tasks import Task


class TaskSet(TimeStamped):
    """A named, versioned set of tasks. Once frozen, ``snapshot`` (our JSONL) never changes."""

    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1)
    description = models.TextField(blank=True)
    tasks = models.ManyToManyField(Task, related_name="task_sets", blank=True)
    frozen_at = models.DateTimeField(null=True, blank=True)
    frozen_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    content_hash = models.CharField(max_length=64, blank=True)
    snapshot = models.TextField(blank=True)
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="next_versions")
    pilot = models.BooleanField(
        default=False, help_text="frozen with draft or in-review tasks (a pilot version), not every task curated")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="taskset_unique_version")]
        ordering = ["name", "-version"]

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"
