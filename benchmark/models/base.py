"""Abstract bases shared by every curated model."""

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
