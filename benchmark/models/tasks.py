"""Tasks derived from gold surveys and everything an LLM proposes for them."""

from django.db import models
from django.db.models import Q

from .base import Proposable, TimeStamped
from .surveys import BibEntry, Discipline, Survey


class Protocol(models.TextChoices):
    DEEPSYNTH = "deepsynth", "DeepSynth-Eval"
    REPORTBENCH = "reportbench", "ReportBench"
    DEEPSCHOLAR = "deepscholar", "DeepScholar-bench"
    SURVEYLENS = "surveylens", "SurveyLens"
    SURVEYSCOPE = "surveyscope", "SciSage / SurveyScope"


class Task(TimeStamped):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        IN_REVIEW = "in_review", "In review"
        CURATED = "curated", "Curated"
        RETIRED = "retired", "Retired"

    protocol = models.CharField(max_length=20, choices=Protocol.choices, db_index=True)
    key = models.CharField(max_length=200, help_text="stable identifier within the protocol")
    survey = models.ForeignKey(Survey, on_delete=models.PROTECT, related_name="tasks")
    title = models.CharField(max_length=500, blank=True)
    cutoff_date = models.DateField(null=True, blank=True, help_text="sources after this date may not be cited")
    excluded_titles = models.JSONField(default=list, blank=True, help_text="titles that must not be cited")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True)
    source = models.CharField(max_length=100, blank=True, help_text="dataset it was imported from")
    extra = models.JSONField(default=dict, blank=True)

    # ``extra`` key naming the release file that labelled the importance of the task's gold
    # references (DeepScholar-bench's important_citations.csv): imported flags count as known.
    RELEASED_IMPORTANCE = "released_importance"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["protocol", "key"], name="task_unique_key")]
        ordering = ["protocol", "key"]

    def __str__(self) -> str:
        return f"{self.get_protocol_display()} {self.key}: {(self.title or self.survey.title)[:80]}"


class TaskPrompt(Proposable):
    """The question a system is asked: the general question or a ReportBench level variant."""

    class Level(models.TextChoices):
        GENERAL = "general", "General question"
        SENTENCE = "sentence", "Sentence"
        PARAGRAPH = "paragraph", "Paragraph"
        DETAIL = "detail", "Detail-rich"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="prompts")
    level = models.CharField(max_length=20, choices=Level.choices)
    text = models.TextField()

    tracked_fields = ("level", "text", "review_status")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "level"], name="taskprompt_unique_level")]
        ordering = ["task", "level"]

    def __str__(self) -> str:
        return f"{self.level}: {self.text[:80]}"


class ConstraintQuestion(Proposable):
    """A structure-anchored question (DeepSynth constraint task), answered by a constraint checklist."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="constraint_questions")
    position = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=500, blank=True)
    text = models.TextField()

    tracked_fields = ("title", "text", "review_status")

    class Meta:
        ordering = ["task", "position"]

    def __str__(self) -> str:
        return self.title or self.text[:80]


class ChecklistGroup(Proposable):
    """A saturated group of checklist items (DeepSynth §3.4).

    The group's score is clip(S/θ, 0, 1); θ is ``threshold`` when set, otherwise
    ``clip_factor`` × the number of items, otherwise the number of items.
    """

    class Kind(models.TextChoices):
        GENERAL = "general", "General"
        CONSTRAINT = "constraint", "Constraint"

    class Anchor(models.TextChoices):
        TOPIC = "topic", "Topic"
        STRUCTURE = "structure", "Structural element"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="checklist_groups")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    anchor = models.CharField(max_length=20, choices=Anchor.choices, default=Anchor.TOPIC)
    name = models.CharField(max_length=500)
    constraint_question = models.ForeignKey(
        ConstraintQuestion, null=True, blank=True, on_delete=models.CASCADE, related_name="groups"
    )
    threshold = models.FloatField(null=True, blank=True)
    clip_factor = models.FloatField(null=True, blank=True)
    weight = models.FloatField(default=1.0)
    position = models.PositiveIntegerField(default=0)

    tracked_fields = ("kind", "anchor", "name", "threshold", "clip_factor", "weight", "review_status")

    class Meta:
        ordering = ["task", "position"]
        constraints = [
            models.CheckConstraint(condition=Q(threshold__isnull=True) | Q(threshold__gt=0), name="group_threshold_positive"),
            models.CheckConstraint(
                condition=Q(clip_factor__isnull=True) | Q(clip_factor__gt=0), name="group_clip_factor_positive"
            ),
            models.CheckConstraint(condition=Q(weight__gte=0), name="group_weight_nonnegative"),
            models.CheckConstraint(
                condition=Q(kind="constraint") | Q(constraint_question__isnull=True),
                name="group_question_only_for_constraint",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.kind}] {self.name[:80]}"


class ChecklistItem(Proposable):
    group = models.ForeignKey(ChecklistGroup, on_delete=models.CASCADE, related_name="items")
    subgroup = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    reward = models.FloatField(default=1.0)
    position = models.PositiveIntegerField(default=0)

    tracked_fields = ("subgroup", "text", "reward", "review_status")

    class Meta:
        ordering = ["group", "position"]

    def __str__(self) -> str:
        return self.text[:100]


class GoldReference(Proposable):
    """A reference a good report on the task should cite (ReportBench, DeepScholar, SciSage)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="gold_references")
    bib_entry = models.ForeignKey(BibEntry, on_delete=models.PROTECT, related_name="gold_for")
    important = models.BooleanField(default=False)
    citation_quartile = models.PositiveSmallIntegerField(null=True, blank=True)
    position = models.PositiveIntegerField(default=0)

    tracked_fields = ("important", "citation_quartile", "review_status")

    class Meta:
        ordering = ["task", "position"]
        constraints = [
            models.UniqueConstraint(fields=["task", "bib_entry"], name="goldreference_unique"),
            models.CheckConstraint(
                condition=Q(citation_quartile__isnull=True) | Q(citation_quartile__gte=1, citation_quartile__lte=4),
                name="goldreference_quartile_range",
            ),
        ]

    def __str__(self) -> str:
        return str(self.bib_entry)


class Nugget(Proposable):
    class Importance(models.TextChoices):
        VITAL = "vital", "Vital"
        OKAY = "okay", "Okay"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="nuggets")
    text = models.TextField()
    importance = models.CharField(max_length=10, choices=Importance.choices, default=Importance.OKAY)
    position = models.PositiveIntegerField(default=0)

    tracked_fields = ("text", "importance", "review_status")

    class Meta:
        ordering = ["task", "position"]

    def __str__(self) -> str:
        return self.text[:100]


class RubricCriterion(Proposable):
    """A SurveyLens discipline-aware criterion (or a SciSage quality rubric when ``task`` is set)."""

    class Component(models.TextChoices):
        OUTLINE = "outline", "Outline"
        CONTENT = "content", "Content"
        REFERENCE = "reference", "Reference"

    discipline = models.ForeignKey(Discipline, null=True, blank=True, on_delete=models.CASCADE, related_name="criteria")
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="rubric_criteria")
    component = models.CharField(max_length=20, choices=Component.choices)
    aspect = models.CharField(max_length=200)
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    example = models.TextField(blank=True)
    weight = models.FloatField(default=1.0)
    scale_max = models.PositiveSmallIntegerField(default=5)
    position = models.PositiveIntegerField(default=0)

    tracked_fields = ("component", "aspect", "name", "description", "example", "weight", "review_status")

    class Meta:
        verbose_name_plural = "rubric criteria"
        ordering = ["component", "position"]
        constraints = [
            models.CheckConstraint(condition=Q(weight__gte=0), name="criterion_weight_nonnegative"),
            models.CheckConstraint(
                condition=Q(discipline__isnull=False) | Q(task__isnull=False), name="criterion_has_scope"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.component}/{self.aspect}: {self.name}"
