"""Abstract bases shared by every curated model."""

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models

from core.models import TimeStamped


class Origin(models.TextChoices):
    LLM = "llm", "LLM"
    HUMAN = "human", "Human"
    IMPORT = "import", "Import"


class ReviewStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    ACCEPTED = "accepted", "Accepted"
    EDITED = "edited", "Edited"
    REJECTED = "rejected", "Rejected"


SETTLED_STATUSES = (ReviewStatus.ACCEPTED, ReviewStatus.EDITED, ReviewStatus.REJECTED)


class Proposable(TimeStamped):
    """Anything an LLM may propose and an expert must review.

    ``version`` increases on every change and is what optimistic concurrency compares:
    an edit made against an older version is refused instead of overwriting.
    """

    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.IMPORT)
    proposed_by = models.CharField(max_length=200, blank=True, help_text="model name, user or dataset")
    prompt_version = models.CharField(max_length=100, blank=True)
    review_status = models.CharField(
        max_length=10, choices=ReviewStatus.choices, default=ReviewStatus.PROPOSED, db_index=True
    )
    version = models.PositiveIntegerField(default=1)

    class Meta:
        abstract = True

    # Fields whose before/after values the revision history records.
    tracked_fields: tuple[str, ...] = ()


class Revision(models.Model):
    """One change to a proposable item: who, when, what, before, after."""

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    target = GenericForeignKey("content_type", "object_id")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=200, blank=True, help_text="set when no user acted (import, model)")
    action = models.CharField(max_length=30)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["content_type", "object_id", "created_at"])]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        who = self.actor or self.actor_label or "system"
        return f"{self.action} {self.content_type.model}#{self.object_id} by {who}"
