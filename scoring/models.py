"""Judges, evaluation runs and everything they produce: calls, verdicts, score cards."""

import math

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils.deconstruct import deconstructible
from django.db import models
from django.db.models import Q

from benchmark.models import Protocol, Report, System, Task, TaskSet, TimeStamped
from core.models import Job


@deconstructible
class FiniteRange:
    """A validator: a finite number in [low, high] (``above``: greater than ``low``)."""

    def __init__(self, low: float, high: float, above: bool = False) -> None:
        self.low, self.high, self.above = low, high, above

    def __call__(self, value) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not (
                (value > self.low) if self.above else (value >= self.low)) or value > self.high:
            raise ValidationError(f"must be {'more than' if self.above else 'at least'} {self.low:g} and at most "
                                  f"{self.high:g}", code="out_of_range")

    def __eq__(self, other) -> bool:
        return isinstance(other, FiniteRange) and (self.low, self.high, self.above) == (other.low, other.high, other.above)


def json_object(value) -> None:
    """A validator: a JSON object (``{}``), not a list, string or number."""
    if not isinstance(value, dict):
        raise ValidationError(f"must be a JSON object ({{...}}), not {type(value).__name__}", code="not_an_object")


# What a judge configuration's numbers may be: checked by the model (forms, API, services) and
# again before a run starts (``judge_config_runnable``), for rows saved before these rules.
TEMPERATURE_MAX = 2.0
TIMEOUT_MAX_SECONDS = 24 * 3600.0
PRICE_MAX = 1e6
validate_temperature = FiniteRange(0.0, TEMPERATURE_MAX)
validate_timeout = FiniteRange(0.0, TIMEOUT_MAX_SECONDS, above=True)
validate_price = FiniteRange(0.0, PRICE_MAX)
validate_discount = FiniteRange(0.0, 1.0)


class JudgeConfig(TimeStamped):
    """A named, stored judge: verdicts always point to the configuration that produced them."""

    class Backend(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible endpoint"
        OFFLINE = "offline", "Offline heuristic judge"

    name = models.CharField(max_length=200, unique=True)
    backend = models.CharField(max_length=20, choices=Backend.choices)
    model = models.CharField(max_length=200, blank=True, help_text="model name at the endpoint")
    base_url = models.CharField(
        max_length=500, blank=True, help_text="empty: OPENAI_BASE_URL; else one of the endpoints JUDGE_ENDPOINTS allows"
    )
    temperature = models.FloatField(default=0.0, validators=[validate_temperature], help_text="0 to 2")
    prompt_version = models.CharField(max_length=50, default="v1")
    repeats = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(100)])
    max_concurrency = models.PositiveSmallIntegerField(default=8, help_text="calls in flight per endpoint",
                                                       validators=[MinValueValidator(1), MaxValueValidator(1000)])
    timeout_seconds = models.FloatField(default=120.0, validators=[validate_timeout], help_text="more than 0")
    max_retries = models.PositiveSmallIntegerField(default=5, validators=[MaxValueValidator(100)])
    price_input_per_million = models.FloatField(default=0.0, help_text="USD per million input tokens",
                                                validators=[validate_price])
    price_output_per_million = models.FloatField(default=0.0, help_text="USD per million output tokens",
                                                 validators=[validate_price])
    embedding_backend = models.CharField(max_length=200, blank=True, help_text="'local:<model>' or 'openai:<model>'")
    options = models.JSONField(default=dict, blank=True, validators=[json_object],
                               help_text="a JSON object of per-step options, e.g. SurveyLens τ per component")
    batch = models.BooleanField(
        default=False, help_text="send a run's calls through the endpoint's Batch API (answers within 24 h, cheaper)"
    )
    batch_discount = models.FloatField(
        default=0.5, validators=[validate_discount],
        help_text="the share of the prices the Batch API takes off (0 to 1; OpenAI: 0.5)",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(repeats__gte=1), name="judge_repeats_positive"),
            models.CheckConstraint(condition=Q(max_concurrency__gte=1), name="judge_concurrency_positive"),
            models.CheckConstraint(condition=Q(temperature__gte=0), name="judge_temperature_nonnegative"),
        ]
        ordering = ["name"]

    @property
    def is_heuristic(self) -> bool:
        return self.backend == self.Backend.OFFLINE

    def clean(self) -> None:
        from scoring.judges.endpoints import endpoint_check
        from scoring.judges.options import options_check

        try:
            endpoint_check(self.base_url)
        except ValidationError as exc:
            raise ValidationError({"base_url": exc.messages}) from None
        if isinstance(self.options, dict):  # not an object: the field's own validator says so
            try:
                options_check(self.backend, self.options)
            except ValueError as exc:
                raise ValidationError({"options": str(exc)}) from None

    def __str__(self) -> str:
        label = f"{self.name} ({self.backend}{':' + self.model if self.model else ''}, prompts {self.prompt_version})"
        return label + (" [heuristic]" if self.is_heuristic else "")


class EvaluationRun(TimeStamped):
    """Task set × systems × protocol × judge configuration, fanned out as per-report jobs."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        # every job ran, but some failed or some items have no verdict: the scores are partial
        FINISHED_WITH_FAILURES = "finished_with_failures", "Finished with failures"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    name = models.CharField(max_length=200, blank=True)
    protocol = models.CharField(max_length=20, choices=Protocol.choices)
    task_set = models.ForeignKey(TaskSet, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    tasks = models.ManyToManyField(Task, blank=True, related_name="runs", help_text="when no task set is given")
    systems = models.ManyToManyField(System, related_name="runs")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=30, choices=Status.choices, default=Status.PENDING, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(
        null=True, blank=True, help_text="no judge call after this (the configuration's run_deadline_seconds option)"
    )
    error = models.TextField(blank=True)
    jobs_unsent = models.BooleanField(
        default=False, help_text="its pending jobs are not known to be on the broker; recovery sends them again"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name or f"run #{self.pk} ({self.protocol})"


class RunJob(Job):
    """One unit of work in a run: one report through one step (or all steps) of the protocol."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        # batch mode: its calls went to a batch (``BatchCall``); the batch poller makes it pending again
        WAITING = "waiting", "Waiting for its batch"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="jobs")
    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="jobs")
    step = models.CharField(max_length=80)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)

    queued_status, running_status = Status.PENDING, Status.RUNNING

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "report", "step"], name="runjob_unique")]
        indexes = [models.Index(fields=["run", "status"])]


class LLMCall(models.Model):
    """Every call made to a judge endpoint: for cost and latency accounting and debugging."""

    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="calls")
    run = models.ForeignKey(EvaluationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    step = models.CharField(max_length=80, db_index=True)
    prompt_version = models.CharField(max_length=50)
    model = models.CharField(max_length=200, blank=True)
    request_hash = models.CharField(max_length=64, db_index=True)
    ok = models.BooleanField(default=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    cost_usd = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)


class JudgeBatch(TimeStamped):
    """One Batch API batch of a run (``scoring.services.batches``): the provider's id is stored as soon
    as the provider gave it, before the task that submitted it ends."""

    class Status(models.TextChoices):
        SUBMITTING = "submitting", "Being submitted"  # its calls are chosen; no provider id yet
        IN_PROGRESS = "in_progress", "In progress"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"
        CANCELLED = "cancelled", "Cancelled"

    OPEN = (Status.SUBMITTING, Status.IN_PROGRESS)

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="batches")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.SUBMITTING, db_index=True)
    batch_id = models.CharField(max_length=200, blank=True, help_text="the provider's batch id")
    input_file_id = models.CharField(max_length=200, blank=True)
    provider_status = models.CharField(max_length=40, blank=True, help_text="as the provider last said")
    requests = models.PositiveIntegerField(default=0, help_text="request lines sent")
    error = models.TextField(blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"batch {self.batch_id or '(not yet submitted)'} of run #{self.run_id}"


class BatchCall(models.Model):
    """One request line a batch-mode job needs answered: ``custom_id`` is the call key (the
    request hash; ``:repair`` for the repair round). Answered rows serve every job of the
    configuration asking the same (a cache), so a call is not submitted twice."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        SUBMITTED = "submitted", "Submitted"
        ANSWERED = "answered", "Answered"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="batch_calls")
    job = models.ForeignKey(RunJob, on_delete=models.CASCADE, related_name="batch_calls")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="batch_calls")
    custom_id = models.CharField(max_length=100)
    body = models.JSONField(help_text="the request line's body (model, messages, ...)")
    batch = models.ForeignKey(JudgeBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    content = models.TextField(blank=True, help_text="the answer's text (redacted)")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "custom_id"], name="batchcall_unique_per_job")]
        indexes = [models.Index(fields=["judge_config", "custom_id"]), models.Index(fields=["run", "status"])]


class Statement(TimeStamped):
    """A statement a judge extracted from a report (ReportBench cited / non-cited statements,
    DeepScholar claims), so verdicts on it have a row to point to."""

    class Kind(models.TextChoices):
        CITED = "cited", "Cited statement"
        UNCITED = "uncited", "Non-cited statement"
        CLAIM = "claim", "Claim"

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="statements")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="statements")
    prompt_version = models.CharField(max_length=50)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    position = models.PositiveIntegerField()
    text = models.TextField()
    citations = models.JSONField(default=list, blank=True, help_text="cited URLs / reference numbers")
    sentence_index = models.IntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["report", "judge_config", "prompt_version", "kind", "position"], name="statement_unique"
            )
        ]
        ordering = ["report", "kind", "position"]


class Verdict(TimeStamped):
    """A judge's decision about one target in one report.

    ``target_kind``/``target_id`` name the judged row (checklist item, nugget, gold
    reference, statement, rubric criterion, ...); ``target_key`` distinguishes targets
    without a row of their own (a sentence index, an organization comparison). The
    unique key makes re-runs reuse finished verdicts: a second run of the same
    configuration makes no new calls.
    """

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="verdicts")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="verdicts")
    prompt_version = models.CharField(max_length=50)
    step = models.CharField(max_length=80, db_index=True)
    target_kind = models.CharField(max_length=40)
    target_id = models.BigIntegerField(default=0, help_text="0 when the target has no row")
    target_key = models.CharField(max_length=200, default="", blank=True)
    repeat = models.PositiveSmallIntegerField(default=0)
    label = models.CharField(max_length=40, blank=True, help_text="empty when the judge failed on this item")
    score = models.FloatField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    error = models.TextField(blank=True, help_text="why the judge produced no usable verdict")
    raw_response = models.JSONField(null=True, blank=True)
    call = models.ForeignKey(LLMCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="verdicts")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    cost_usd = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["target_kind", "target_id", "target_key", "report", "judge_config", "prompt_version", "repeat"],
                name="verdict_unique_target",
            )
        ]
        indexes = [models.Index(fields=["report", "judge_config", "step"])]

    @property
    def is_error(self) -> bool:
        return bool(self.error)


class ScoreCard(TimeStamped):
    """Scores computed with ``scoring.metrics`` from stored verdicts, per report or (report null) per system."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="score_cards")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="score_cards")
    report = models.ForeignKey(Report, null=True, blank=True, on_delete=models.CASCADE, related_name="score_cards")
    metrics = models.JSONField(default=dict)
    items_judged = models.PositiveIntegerField(default=0)
    items_failed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "system", "report"], condition=Q(report__isnull=False), name="scorecard_unique_report"
            ),
            models.UniqueConstraint(
                fields=["run", "system"], condition=Q(report__isnull=True), name="scorecard_unique_system"
            ),
        ]


class Embedding(models.Model):
    """Cached embedding vectors by model and content hash: re-scoring never re-embeds."""

    model = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    dim = models.PositiveSmallIntegerField()
    vector = models.BinaryField(help_text="float32 little-endian")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "content_hash"], name="embedding_unique")]


class ProposalBatch(Job):
    """One request to propose benchmark material with a judge (``scoring.services.proposals``):
    which tasks and stages, and how it went — what ``propose --wait`` and the task page follow,
    since Celery keeps no results here."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="proposal_batches")
    tasks = models.ManyToManyField(Task, related_name="proposal_batches")
    stages = models.JSONField(default=list)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    total = models.PositiveIntegerField(default=0, help_text="units: one stage on one task")
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True, help_text="proposed per kind, calls, tokens, cost, failures")
    error = models.TextField(blank=True)

    queued_status, running_status = Status.PENDING, Status.RUNNING

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"proposals #{self.pk} ({', '.join(self.stages)})"
