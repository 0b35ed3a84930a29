"""Models every app needs: the timestamp base, and people with their global role."""

from django.conf import settings
from django.db import models


class TimeStamped(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Role(models.TextChoices):
    CURATOR = "curator", "Curator"
    ANNOTATOR = "annotator", "Annotator"
    VIEWER = "viewer", "Viewer"


class AnnotatorProfile(TimeStamped):
    """A person's global role. Their disciplines are ``benchmark.Discipline.annotators`` (reached
    here as ``profile.disciplines``): the many-to-many is declared on the benchmark side so that
    core depends on no app."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    qualification = models.JSONField(default=list, blank=True, help_text="answers to qualification questions")
    external_id = models.CharField(max_length=200, blank=True, help_text="annotator id in an imported dataset")

    class Meta:
        db_table = "annotation_annotatorprofile"  # moved from annotation with its rows

    def __str__(self) -> str:
        return f"{self.user} ({self.role})"
