"""Systems under evaluation, the other spellings of their names, and the reports they generated."""

import re

from django.db import models

from ..naming import system_label
from .base import TimeStamped
from .tasks import Task


class System(TimeStamped):
    class Workflow(models.TextChoices):
        DEEP_RESEARCH = "deep_research", "Deep-research agent"
        SURVEY_PIPELINE = "survey_pipeline", "Survey-generation pipeline"
        RAG = "rag", "Retrieval-augmented LLM"
        LLM = "llm", "LLM without retrieval"
        HUMAN = "human", "Human-written"
        OTHER = "other", "Other"

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True)
    base_model = models.CharField(max_length=200, blank=True)
    workflow = models.CharField(max_length=30, choices=Workflow.choices, default=Workflow.OTHER)
    description = models.TextField(blank=True)
    display_name = models.CharField(
        max_length=200, blank=True,
        help_text="how pages name the system; empty: its name in words (benchmark.naming)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="system_unique_name_version")]
        ordering = ["name", "version"]

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()

    @property
    def label(self) -> str:
        """What people read (``benchmark.naming.system_label``); ``str()`` stays the identifier."""
        return system_label(self.name, self.version, self.display_name)


_SEPARATORS = re.compile(r"[\s_\-]+")


def system_key(name: str) -> str:
    """A system name up to case and separators: ``LLMxMapReduce_V2`` and ``llmxmapreduce-v2`` are
    one system; ``AutoSurvey2`` and ``Autosurvey`` are not (only an alias joins those)."""
    return _SEPARATORS.sub("", name).casefold()


class SystemAlias(TimeStamped):
    """Another spelling of a system's name, which every importer reads as ``canonical``.

    Written only through ``benchmark.services.systems`` (each change with its revision row)."""

    alias = models.CharField(max_length=200)
    key = models.CharField(max_length=200, unique=True, help_text="the alias up to case and separators")
    canonical = models.CharField(max_length=200, help_text="the System name imports use for this alias")
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["alias"]
        verbose_name_plural = "system aliases"

    def __str__(self) -> str:
        return f"{self.alias} → {self.canonical}"


class Report(TimeStamped):
    """What one system wrote for one task, with its parsed form.

    ``parsed`` is ``benchmark.parsing.ParsedReport.to_dict()``; ``stats`` its structural
    statistics, kept apart so lists and dashboards need not load the whole parse.
    """

    class Format(models.TextChoices):
        MARKDOWN = "markdown", "Markdown"
        TEXT = "text", "Plain text"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reports")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="reports")
    text = models.TextField()
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.MARKDOWN)
    content_hash = models.CharField(max_length=64, db_index=True)
    submitted_at = models.DateTimeField()
    parsed = models.JSONField(default=dict, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    sources = models.JSONField(default=list, blank=True, help_text="documents the system retrieved, when released")
    source_path = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "system"], name="report_unique_task_system")]
        ordering = ["task", "system"]

    def __str__(self) -> str:
        return f"{self.system} on {self.task.key}"
