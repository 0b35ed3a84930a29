"""Pairwise preferences between two reports, imported or written by the workspace."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchmark.models import Report, Task, TimeStamped

from ..signals import preferences_recorded


class PreferenceQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        """``QuerySet.bulk_create`` sends no ``post_save``; the rows' projects are announced by
        ``preferences_recorded`` (adaptive pairwise projects choose their next pairs from them)."""
        created = super().bulk_create(objs, *args, **kwargs)
        if any(row.project_id is not None for row in created):
            preferences_recorded.send(sender=self.model, preferences=created)
        return created


class PairwisePreference(TimeStamped):
    """One annotator's choice between two reports on the same task.

    ``report_left`` is the report shown on the left; the choice is recorded in those
    positional terms so position bias can be measured.
    """

    class Choice(models.TextChoices):
        LEFT = "left", "Left better"
        RIGHT = "right", "Right better"
        TIE = "tie", "Tie"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="preferences")
    report_left = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="+")
    report_right = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="preferences")
    component = models.CharField(max_length=30, default="report", help_text="report, outline, section ...")
    choice = models.CharField(max_length=10, choices=Choice.choices)
    dimensions = models.JSONField(default=dict, blank=True, help_text="per-dimension choices")
    reason = models.TextField(blank=True)
    seconds_taken = models.FloatField(null=True, blank=True)
    labeled_at = models.DateTimeField()
    source = models.CharField(max_length=100, blank=True)
    external_id = models.CharField(max_length=200, blank=True)
    # What the annotator saw on each side when it was not the whole report: a released study
    # (SurveyLens) shows one component, and the system's report on the task may be its full survey.
    shown_left = models.TextField(blank=True, help_text="text shown on the left, when not the whole report")
    shown_right = models.TextField(blank=True, help_text="text shown on the right, when not the whole report")
    # Set only on rows the annotation workspace wrote (``label_submit``); importers leave them empty.
    project = models.ForeignKey(
        "AnnotationProject", null=True, blank=True, on_delete=models.SET_NULL, related_name="preferences"
    )
    label = models.OneToOneField("Label", null=True, blank=True, on_delete=models.SET_NULL, related_name="preference")

    objects = PreferenceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(report_left=models.F("report_right")), name="preference_distinct_reports"),
            models.UniqueConstraint(
                fields=["source", "annotator", "external_id"],
                condition=~Q(external_id=""),
                name="preference_unique_external_id",
            ),
        ]
        ordering = ["-labeled_at"]

    def save(self, *args, **kwargs) -> None:
        super().save(*args, **kwargs)
        if self.project_id is not None:
            preferences_recorded.send(sender=type(self), preferences=[self])

    def __str__(self) -> str:
        return f"{self.annotator}: {self.report_left.system} vs {self.report_right.system} → {self.choice}"
