"""The annotation workspace: an ``AnnotationProject`` holds ``AnnotationItem`` rows (one per
thing to label), annotators claim items through ``Assignment`` rows, submit ``Label`` rows, and
curators settle disagreements with a ``GoldLabel``. Every change writes a ``core.AuditLog`` row
in the same transaction (see ``annotation.services.audit``).
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from core.models import Role
from benchmark.models import (
    ChecklistGroup,
    ChecklistItem,
    ConstraintQuestion,
    GoldReference,
    Nugget,
    Report,
    RubricCriterion,
    System,
    Task,
    TaskPrompt,
    TaskSet,
    TimeStamped,
)

from .preferences import PairwisePreference



class TargetKind(models.TextChoices):
    """What an ``AnnotationItem`` points at (``target_kind`` + ``target_id``)."""

    PROMPT = "prompt", "Task prompt"
    CONSTRAINT_QUESTION = "constraint_question", "Constraint question"
    CHECKLIST_GROUP = "checklist_group", "Checklist group"
    CHECKLIST_ITEM = "checklist_item", "Checklist item"
    GOLD_REFERENCE = "gold_reference", "Gold reference"
    NUGGET = "nugget", "Nugget"
    RUBRIC_CRITERION = "rubric_criterion", "Rubric criterion"
    REPORT_PAIR = "report_pair", "Report pair"
    VERDICT = "verdict", "Judge verdict"
    REPORT = "report", "Report"


# The benchmark proposable models a ``verify`` project can review, and the lookup from the
# model to its task (``None``: the kind's rows reach a task only through ``task``, which may be null).
VERIFY_TARGETS: dict[str, tuple[type[models.Model], str]] = {
    TargetKind.PROMPT: (TaskPrompt, "task"),
    TargetKind.CONSTRAINT_QUESTION: (ConstraintQuestion, "task"),
    TargetKind.CHECKLIST_GROUP: (ChecklistGroup, "task"),
    TargetKind.CHECKLIST_ITEM: (ChecklistItem, "group__task"),
    TargetKind.GOLD_REFERENCE: (GoldReference, "task"),
    TargetKind.NUGGET: (Nugget, "task"),
    TargetKind.RUBRIC_CRITERION: (RubricCriterion, "task"),
}

DEFAULT_HOLD = timedelta(minutes=15)
# Adaptive pairwise: the share of pairs drawn uniformly (docs/statistics.md, "Designs tried on these
# settings": 0.1 needed fewer labels than 0.25 at every setting simulated from known strengths).
DEFAULT_UNIFORM_SHARE = 0.1


class AnnotationProject(TimeStamped):
    """One labelling job: which targets, how many independent labels each, and how to label them.

    ``label_set`` maps each constrained field of a label's value to its allowed values
    (``{"decision": [...], "reason": [...]}`` for verify, ``{"choice": [...]}`` for pairwise,
    ``{"label": [...]}`` for agreement); ``dimensions`` lists the pairwise dimensions.
    ``label_level`` declares how the main label field is measured, which fixes Krippendorff's α
    (nominal; ordinal: ordered as the label set lists them; interval: the labels are numbers).
    """

    class LabelLevel(models.TextChoices):
        NOMINAL = "nominal", "Nominal (categories)"
        ORDINAL = "ordinal", "Ordinal (ordered as the label set lists them)"
        INTERVAL = "interval", "Interval (numeric labels)"

    class Kind(models.TextChoices):
        VERIFY = "verify", "Verify proposed items"
        PAIRWISE = "pairwise", "Pairwise preferences"
        AGREEMENT = "agreement", "Label judge verdicts"
        RATING = "rating", "Rate reports on rubric criteria"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"

    class Reveal(models.TextChoices):
        """When a blind project reveals what it hides of an item (others' labels, gold label,
        judge's verdict, which reports and systems it compares) to an annotator who labelled it
        (``annotation.blind``); everyone sees it all once the study closes (``Status.CLOSED``)."""

        AT_CLOSE = "close", "When the study closes"
        AFTER_LABEL = "label", "After each label"

    class Sampling(models.TextChoices):
        """How an agreement project chose its verdicts (``annotation.calibration.sampling``): what
        a calibrated score may assume of its labels (``AnnotationItem.inclusion_probability``)."""

        ALL = "all", "Every verdict in scope"
        CHOSEN = "chosen", "Chosen by hand (not a random sample)"
        UNIFORM = "uniform", "Uniform random sample"
        STRATIFIED = "stratified", "Uniform random sample within each system and step"
        ADAPTIVE = "adaptive", "Random sample favouring uncertain verdicts (weighted)"

    class SamplingUnit(models.TextChoices):
        """What a sampled agreement project's design draws (``annotation.calibration.unit_groups``):
        single verdicts, or units of several verdicts whose metric is a function of all of them;
        the project then holds every verdict of a drawn unit, each with its unit's π."""

        VERDICT = "verdict", "Each verdict"
        GROUP = "group", "Each DeepSynth checklist group (all its items' verdicts)"
        SENTENCE = "sentence", "Each DeepScholar claim sentence (all its citation verdicts)"

    class PairChoice(models.TextChoices):
        """How a pairwise project picks its pairs (``annotation.services.adaptive_pairs``)."""

        ROUND_ROBIN = "round_robin", "Double round-robin: every pair of reports, once on each side"
        ADAPTIVE = "adaptive", "Adaptive: the pairs whose Bradley–Terry outcome is least certain"

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    guidelines = models.TextField(blank=True, help_text="markdown: what annotators read before and while labelling")
    guidelines_version = models.PositiveIntegerField(
        default=0, help_text="0 until guidelines are first written, then one more on every change of their text"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    task_set = models.ForeignKey(TaskSet, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    tasks = models.ManyToManyField(Task, blank=True, related_name="annotation_projects")
    item_kinds = models.JSONField(default=list, blank=True, help_text="verify: which proposable kinds to review")
    systems = models.ManyToManyField(System, blank=True, related_name="+", help_text="pairwise/agreement: empty = all")
    component = models.CharField(max_length=30, default="report", help_text="pairwise: report, outline, ...")
    judge_config = models.ForeignKey(
        "scoring.JudgeConfig", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    steps = models.JSONField(default=list, blank=True, help_text="agreement: judge steps; empty = all")
    overlap = models.PositiveSmallIntegerField(default=1, help_text="independent annotators per item (k)")
    blind = models.BooleanField(default=True)
    reveal = models.CharField(
        max_length=10, choices=Reveal.choices, default=Reveal.AFTER_LABEL,
        help_text="blind: when an annotator who labelled an item learns what it hid (default: pairwise at close,"
                  " others after the label)",
    )
    label_set = models.JSONField(default=dict, blank=True)
    label_help = models.JSONField(
        default=dict, blank=True,
        help_text="{label: what it means}: shown beside the controls; a label without one reads the protocol's "
                  "default (annotation.label_help); a change is a new guidelines version")
    label_level = models.CharField(max_length=10, choices=LabelLevel.choices, default=LabelLevel.NOMINAL)
    dimensions = models.JSONField(default=list, blank=True)
    criteria = models.JSONField(default=list, blank=True,
                                help_text="rating: the criteria every report is rated on; empty: each task's rubric")
    scale = models.JSONField(default=dict, blank=True,
                             help_text="rating: {min, max, anchors: {point: text}, adjudicate_beyond}")
    hold_duration = models.DurationField(default=DEFAULT_HOLD, help_text="how long a claimed item stays reserved")
    seed = models.BigIntegerField(default=0, help_text=(
        "seed of the randomized schedule, sample and adaptive draws; a blind project's is drawn by the server"
        " (annotation.blind.secret_seed) and never shown"))
    sampling = models.CharField(
        max_length=12, choices=Sampling.choices, default=Sampling.ALL,
        help_text="agreement: how the verdicts were chosen; a random sample records each item's inclusion probability",
    )
    sampling_unit = models.CharField(
        max_length=10, choices=SamplingUnit.choices, default=SamplingUnit.VERDICT,
        help_text="agreement, sampled: what the design draws (a verdict, or every verdict of a checklist group or "
                  "claim sentence)",
    )
    pair_choice = models.CharField(max_length=12, choices=PairChoice.choices, default=PairChoice.ROUND_ROBIN,
                                   help_text="pairwise: how the next pair is chosen")
    uniform_share = models.FloatField(default=DEFAULT_UNIFORM_SHARE,
                                      help_text="adaptive pairwise: share of pairs chosen uniformly")
    pairs_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="adaptive pairwise: pairs to label in all; empty: every pair of reports")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    has_crowd_study = models.BooleanField(
        default=False, editable=False,
        help_text="set by annotation.crowd when the project is opened to a crowd platform: the loop's claim hook"
                  " and the item counts read it without a query")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="project_overlap_positive"),
            models.CheckConstraint(condition=~Q(kind="verify") | Q(overlap__gte=2), name="project_verify_two_stage"),
            models.CheckConstraint(condition=Q(hold_duration__gt=timedelta(0)), name="project_hold_positive"),
            models.CheckConstraint(condition=Q(uniform_share__gte=0, uniform_share__lte=1),
                                   name="project_uniform_share_unit"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class ProjectMembership(TimeStamped):
    """A user's role inside one project (independent of their global ``AnnotatorProfile.role``)."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    guidelines_seen = models.PositiveIntegerField(
        default=0, help_text="the project's guidelines version the workspace last showed this member open"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project.name} ({self.role})"


class ReportPair(models.Model):
    """One scheduled comparison of a pairwise project, in the position it is shown (left, right)."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="pairs")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    report_left = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="+")
    report_right = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="+")
    leg = models.PositiveSmallIntegerField(default=1, help_text="1 or 2: the second leg swaps positions")
    round = models.PositiveSmallIntegerField(default=0, help_text="round of the round-robin schedule")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "report_left", "report_right"], name="reportpair_unique"),
            models.CheckConstraint(condition=~Q(report_left=F("report_right")), name="reportpair_distinct"),
        ]

    def __str__(self) -> str:
        return f"{self.report_left_id} vs {self.report_right_id} (leg {self.leg})"


class AnnotationItem(models.Model):
    """One thing to label ``labels_needed`` times.

    ``labels_done`` is maintained by ``label_submit``/``label_undo_last`` under a row lock.
    ``disagreement`` is decided when the item completes; ``conflict`` explains why an
    agreed verify decision could not be applied (the benchmark row moved on meanwhile).
    ``target_version`` is the benchmark row's version the reviews are based on (verify).
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        COMPLETE = "complete", "Complete"
        ADJUDICATED = "adjudicated", "Adjudicated"

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="items")
    target_kind = models.CharField(max_length=30, choices=TargetKind.choices)
    target_id = models.BigIntegerField()
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField(default=0)
    labels_needed = models.PositiveSmallIntegerField()
    labels_done = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    disagreement = models.BooleanField(default=False)
    conflict = models.TextField(blank=True)
    target_version = models.PositiveIntegerField(null=True, blank=True)
    applied_revision = models.ForeignKey(  # the audit row of the decision applied to the benchmark row
        "core.AuditLog", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    completed_at = models.DateTimeField(null=True, blank=True)
    inclusion_probability = models.FloatField(
        null=True, blank=True,
        help_text="agreement: the probability this verdict had of being chosen (1: every verdict in scope); "
                  "null when chosen by hand. Calibrated scores weight its label by 1/π",
    )

    class Meta:
        ordering = ["project", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "target_kind", "target_id"], name="item_unique_target"),
            models.CheckConstraint(condition=Q(labels_needed__gte=1), name="item_needs_labels"),
            models.CheckConstraint(condition=Q(labels_done__lte=F("labels_needed")), name="item_overlap_not_exceeded"),
            models.CheckConstraint(
                condition=Q(inclusion_probability__isnull=True)
                | Q(inclusion_probability__gt=0, inclusion_probability__lte=1),
                name="item_inclusion_probability_range",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "status", "position"]),
            # claim_next_item's order (fewest labels still needed first): with it the claim query
            # walks the index and stops at the first free item instead of sorting every open one
            models.Index(
                "project", "status", F("labels_needed") - F("labels_done"), "labels_done", "position", "id",
                name="item_next_order",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.target_kind}#{self.target_id} ({self.labels_done}/{self.labels_needed})"


class Assignment(models.Model):
    """A user's claim on an item (held until ``expires_at``), and how it ended.

    A skipped assignment is never offered again to that user; ``undone`` marks a
    submission or skip reverted by ``label_undo_last``.
    """

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"
        RELEASED = "released", "Released"
        UNDONE = "undone", "Undone"

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="assignments")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-claimed_at", "-id"]
        constraints = [
            # No "one active claim per user" constraint: a client may hold a batch of claims
            # (``claim_next_items``, at most ``MAX_CLAIMS``); overlap k is checked per item.
            models.UniqueConstraint(fields=["item", "user"], condition=Q(status="skipped"), name="assignment_one_skip"),
        ]
        indexes = [
            models.Index(fields=["item", "status", "expires_at"]),
            models.Index(fields=["project", "user", "status"]),
        ]

    def __str__(self) -> str:
        return f"{self.user} → item {self.item_id} ({self.status})"


class Label(models.Model):
    """One annotator's label for one item. ``client_token`` makes resubmitting a form idempotent."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="labels")
    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="labels")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="labels")
    value = models.JSONField()
    client_token = models.UUIDField()
    assignment = models.ForeignKey(Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source_preference = models.ForeignKey(
        PairwisePreference, null=True, blank=True, on_delete=models.SET_NULL, related_name="imported_labels",
        help_text="the imported preference this label reflects (project_from_preferences)",
    )
    guidelines_version = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="the project's guidelines version the annotator had been shown when labelling (0: none shown);"
                  " null: labels made before guidelines were recorded, or imported",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    seconds_taken = models.FloatField(
        null=True, blank=True,
        help_text="seconds between the item's form appearing and its submission, as the client measured them",
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["annotator", "client_token"], name="label_unique_client_token"),
            models.UniqueConstraint(fields=["item", "annotator"], name="label_one_per_annotator"),
        ]
        indexes = [
            models.Index(fields=["project", "annotator", "created_at"]),
            # a project's newest label in one index step: the agreement dashboard's fingerprint
            models.Index(fields=["project", "id"], name="label_project_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on item {self.item_id}"


class GoldLabel(models.Model):
    """A curator's final decision on an item whose labels disagreed."""

    item = models.OneToOneField(AnnotationItem, on_delete=models.CASCADE, related_name="gold")
    value = models.JSONField()
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"gold for item {self.item_id}"
