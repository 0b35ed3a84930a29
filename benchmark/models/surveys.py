"""Gold surveys, their disciplines and their bibliographies."""

from django.db import models
from django.db.models import Q

from .base import TimeStamped


class Discipline(TimeStamped):
    """A field of study. SurveyLens' ten disciplines and ReportBench's domains A–K are both taxonomies."""

    taxonomy = models.CharField(max_length=30, help_text="surveylens, reportbench, arxiv, ...")
    code = models.CharField(max_length=50)
    name = models.CharField(max_length=200)
    # Declared here, not on the profile, so that core depends on no app; the table is the one
    # the profile's field made (same columns), so no row moved.
    annotators = models.ManyToManyField(
        "core.AnnotatorProfile", blank=True, related_name="disciplines", db_table="annotation_annotatorprofile_disciplines"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["taxonomy", "code"], name="discipline_unique_code")]
        ordering = ["taxonomy", "code"]

    def __str__(self) -> str:
        return self.name


class BibEntry(TimeStamped):
    """One publication, shared by every survey and task that cites it.

    Deduplicated on DOI, then arXiv id, then normalized title (``bib_entry_upsert``).
    """

    title = models.TextField()
    normalized_title = models.CharField(max_length=500, db_index=True)
    authors = models.TextField(blank=True)
    year = models.PositiveSmallIntegerField(null=True, blank=True)
    venue = models.CharField(max_length=500, blank=True)
    arxiv_id = models.CharField(max_length=40, blank=True, db_index=True)
    doi = models.CharField(max_length=255, blank=True, db_index=True)
    url = models.URLField(max_length=1000, blank=True)
    abstract = models.TextField(blank=True)
    citation_count = models.PositiveIntegerField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name_plural = "bib entries"
        constraints = [
            models.UniqueConstraint(fields=["doi"], condition=~Q(doi=""), name="bibentry_unique_doi"),
            models.UniqueConstraint(fields=["arxiv_id"], condition=~Q(arxiv_id=""), name="bibentry_unique_arxiv"),
            models.CheckConstraint(condition=~Q(normalized_title=""), name="bibentry_has_title"),
        ]

    def __str__(self) -> str:
        return self.title[:120]


class Survey(TimeStamped):
    """A human-written survey (or related-work exemplar) that serves as the gold standard.

    ``outline``, ``content`` and ``references`` hold SurveyLens' Structured Survey
    Representation: ``[[level, title], ...]``, ``[{heading, level, text}]`` and
    ``[{number, text, title}]``; ``stats`` its structural statistics.
    """

    class Kind(models.TextChoices):
        SURVEY = "survey", "Survey"
        RELATED_WORK = "related_work", "Related-work exemplar"
        TOPIC = "topic", "Topic only"

    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.SURVEY)
    title = models.TextField()
    abstract = models.TextField(blank=True)
    authors = models.TextField(blank=True)
    venue = models.CharField(max_length=500, blank=True)
    year = models.PositiveSmallIntegerField(null=True, blank=True)
    publication_date = models.DateField(null=True, blank=True)
    arxiv_id = models.CharField(max_length=40, blank=True, db_index=True)
    doi = models.CharField(max_length=255, blank=True)
    url = models.URLField(max_length=1000, blank=True)
    categories = models.CharField(max_length=300, blank=True)
    discipline = models.ForeignKey(Discipline, null=True, blank=True, on_delete=models.SET_NULL)
    outline = models.JSONField(default=list, blank=True)
    content = models.JSONField(default=list, blank=True)
    references = models.JSONField(default=list, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    full_text = models.TextField(blank=True)
    bibliography = models.ManyToManyField(BibEntry, through="SurveyCitation", related_name="cited_by_surveys")
    source = models.CharField(max_length=100, blank=True, help_text="dataset it was imported from")
    external_id = models.CharField(max_length=200, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "external_id"], condition=~Q(external_id=""), name="survey_unique_external_id"
            )
        ]

    def __str__(self) -> str:
        return self.title[:120]

    @property
    def known_title(self) -> str:
        """The title, or "" while only an identifier stands in for it (DeepSynth-Eval's release names
        each survey by its arXiv id: the importer stores ``arXiv:<id>`` until a curator writes the title)."""
        stand_ins = {f"arxiv:{name}".lower() for name in (self.arxiv_id, self.external_id) if name}
        return "" if self.title.strip().lower() in stand_ins else self.title


class SurveyCitation(models.Model):
    """A survey's bibliography entry, in the order the survey lists it."""

    survey = models.ForeignKey(Survey, on_delete=models.CASCADE, related_name="citations")
    bib_entry = models.ForeignKey(BibEntry, on_delete=models.CASCADE, related_name="survey_citations")
    position = models.PositiveIntegerField()
    key = models.CharField(max_length=200, blank=True, help_text="bib key or number in the survey")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["survey", "bib_entry"], name="surveycitation_unique")]
        ordering = ["survey", "position"]
