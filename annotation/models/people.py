"""People: annotator profiles and their global role."""

from django.conf import settings
from django.db import models

from benchmark.models import Discipline, TimeStamped


class Role(models.TextChoices):
    CURATOR = "curator", "Curator"
    ANNOTATOR = "annotator", "Annotator"
    VIEWER = "viewer", "Viewer"


class AnnotatorProfile(TimeStamped):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    disciplines = models.ManyToManyField(Discipline, blank=True, related_name="annotators")
    qualification = models.JSONField(default=list, blank=True, help_text="answers to qualification questions")
    external_id = models.CharField(max_length=200, blank=True, help_text="annotator id in an imported dataset")

    def __str__(self) -> str:
        return f"{self.user} ({self.role})"
