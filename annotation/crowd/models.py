"""A project's crowd study, its workers and its attention checks."""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from ..models.workspace import AnnotationItem, AnnotationProject

# An attention check is labelled by every worker who reaches it, not by k of them: its overlap is
# set this high (within a PositiveSmallIntegerField on every database) so the loop never fills it.
CHECK_OVERLAP = 30000


def is_attention_check(item) -> bool:
    """Whether an item (its project read along) is an attention check, without a query: only
    ``attention_check_set`` gives an item this overlap, and a crowd study refuses projects whose
    own overlap reaches it. The loop asks it to keep checks out of what the metrics read."""
    return item.project.has_crowd_study and item.labels_needed == CHECK_OVERLAP


def crowd_token_new() -> str:
    return secrets.token_urlsafe(24)


def completion_code_new() -> str:
    return secrets.token_hex(4).upper()


class CrowdStudy(models.Model):
    """A project opened to a crowd platform: the entry link ``/join/<token>/`` and what it does.

    ``worker_param``, ``study_param`` and ``session_param`` name the query parameters the platform
    appends (Prolific: ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``; MTurk: ``workerId``,
    ``hitId``, ``assignmentId``)."""

    project = models.OneToOneField(AnnotationProject, on_delete=models.CASCADE, related_name="crowd_study")
    token = models.CharField(max_length=64, unique=True, default=crowd_token_new)
    open = models.BooleanField(default=True, help_text="whether the entry link admits workers")
    worker_param = models.CharField(max_length=40, default="PROLIFIC_PID")
    study_param = models.CharField(max_length=40, default="STUDY_ID")
    session_param = models.CharField(max_length=40, default="SESSION_ID")
    quota = models.PositiveSmallIntegerField(default=10, help_text="items each worker labels, attention checks included")
    check_rate = models.FloatField(default=0.1, help_text="share of a worker's items that are attention checks")
    max_failures = models.PositiveSmallIntegerField(
        default=1, help_text="a worker who fails this many attention checks is flagged")
    completion_code = models.CharField(max_length=40, default=completion_code_new)
    completion_url = models.URLField(blank=True, help_text="where a worker who finished is sent, e.g."
                                     " https://app.prolific.com/submissions/complete?cc=CODE")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(check_rate__gte=0, check_rate__lt=1), name="crowd_check_rate_unit"),
            models.CheckConstraint(condition=Q(quota__gte=1), name="crowd_quota_positive"),
        ]

    def __str__(self) -> str:
        return f"crowd study of project {self.project_id}"


class CrowdWorker(models.Model):
    """A platform worker and the pseudonymous account they label under (one per worker id and study)."""

    study = models.ForeignKey(CrowdStudy, on_delete=models.CASCADE, related_name="workers")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_worker")
    worker_id = models.CharField(max_length=200)
    platform_study = models.CharField(max_length=200, blank=True)
    platform_session = models.CharField(max_length=200, blank=True)
    joined_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "worker_id"], name="crowd_worker_unique")]

    def __str__(self) -> str:
        return f"{self.worker_id} in {self.study}"


class AttentionCheck(models.Model):
    """An item with a known answer: a label passes when every field of ``expected`` has the
    given value (``{"choice": "left"}``, ``{"label": "correct"}``)."""

    item = models.OneToOneField(AnnotationItem, on_delete=models.CASCADE, related_name="attention_check")
    expected = models.JSONField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"attention check on item {self.item_id}"
