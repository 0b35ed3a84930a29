"""Statistics the dashboards serve from storage rather than compute in a request."""

from django.db import models

from .workspace import AnnotationProject


class ProjectStatistics(models.Model):
    """One project's figures of one kind as last computed, with the version of the inputs they
    are of (``annotation.dashboards.stored``): the dashboards serve ``values`` while ``version``
    equals the inputs' version read now, and ask a worker for new ones when it does not.

    Derived data, never curated: recomputing it from the labels gives it back, so it is written
    without an audit row."""

    class Kind(models.TextChoices):
        INTER_ANNOTATOR = "inter_annotator", "Inter-annotator agreement"

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="statistics")
    kind = models.CharField(max_length=30, choices=Kind.choices)
    version = models.CharField(max_length=100, blank=True, help_text="the inputs' version the values are of")
    values = models.JSONField(null=True, blank=True, help_text="the figures, as plain JSON (null: never computed)")
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="how long the computation took")
    requested_at = models.DateTimeField(
        null=True, blank=True, help_text="a worker's computation was asked for then and has not ended (null: none)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "kind"], name="project_statistics_one_per_kind")]
        verbose_name_plural = "project statistics"

    def __str__(self) -> str:
        return f"{self.kind} of project {self.project_id} ({self.version or 'never computed'})"
