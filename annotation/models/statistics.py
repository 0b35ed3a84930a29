"""Statistics the dashboards serve from storage rather than compute in a request."""

from django.db import models
from django.db.models import Q

from scoring.models import EvaluationRun

from .workspace import AnnotationProject


class ProjectStatistics(models.Model):
    """Figures of one kind as last computed, with the version of the inputs they are of
    (``annotation.services.agreement``): the dashboards serve ``values`` while ``version`` equals
    the inputs' version read now, and ask a worker for new ones when it does not.

    A row is either one project's (``project``: inter-annotator agreement) or one scope's
    (``project`` null, ``scope`` the digest of ``parameters``: a human ranking's preferences
    filter and options, or the set of projects judge-vs-people figures are over), one row per
    project or scope and kind (``annotation.dashboards.stored``).

    Derived data, never curated: recomputing it from the labels gives it back, so it is written
    without an audit row."""

    class Kind(models.TextChoices):
        INTER_ANNOTATOR = "inter_annotator", "Inter-annotator agreement"
        HUMAN_RANKING = "human_ranking", "Human ranking"
        JUDGE_AGREEMENT = "judge_agreement", "Judge vs people"

    project = models.ForeignKey(AnnotationProject, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="statistics")
    kind = models.CharField(max_length=30, choices=Kind.choices)
    scope = models.CharField(max_length=64, blank=True, default="", db_default="",
                             help_text="figures of no one project: the digest of their parameters")
    parameters = models.JSONField(null=True, blank=True,
                                  help_text="figures of no one project: what a worker computes them with")
    version = models.CharField(max_length=100, blank=True, help_text="the inputs' version the values are of")
    values = models.JSONField(null=True, blank=True, help_text="the figures, as plain JSON (null: never computed)")
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="how long the computation took")
    requested_at = models.DateTimeField(
        null=True, blank=True, help_text="a worker's computation was asked for then and has not ended (null: none)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "kind"], name="project_statistics_one_per_kind"),
                       models.UniqueConstraint(fields=["kind", "scope"], condition=Q(project__isnull=True),
                                               name="scope_statistics_one_per_kind")]
        verbose_name_plural = "project statistics"

    def __str__(self) -> str:
        of = f"project {self.project_id}" if self.project_id is not None else f"scope {self.scope[:12]}"
        return f"{self.kind} of {of} ({self.version or 'never computed'})"


class CalibratedScores(models.Model):
    """Calibrated scores (``annotation.calibration``) of one project over one run (``run`` null: the
    project's whole scope), computed by a worker from ``inputs`` — the judge's and the experts'
    values per system and metric, exactly what a reader may see — and keyed by their digest
    (``version``). ``audience`` is the digest of what a blind study hides from the readers the
    figures were asked for: figures of older inputs are served (marked stale) only to the same
    audience, so nothing a reader may not see reaches them through another reader's figures.

    Derived data, never curated: written without an audit row."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="calibrated_scores")
    run = models.ForeignKey(EvaluationRun, null=True, blank=True, on_delete=models.CASCADE,
                            related_name="calibrated_scores")
    audience = models.CharField(max_length=64)
    version = models.CharField(max_length=64, help_text="digest of the inputs (and the run) the values are of")
    inputs = models.JSONField(help_text="per system and metric: y, yhat, all, pi and the counts shown beside them")
    values = models.JSONField(null=True, blank=True, help_text="the figures (null: not computed yet)")
    created_at = models.DateTimeField(auto_now_add=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="how long the computation took")
    requested_at = models.DateTimeField(
        null=True, blank=True, help_text="a worker's computation was asked for then and has not ended (null: none)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "audience", "version"],
                                               name="calibrated_scores_one_per_inputs")]
        indexes = [models.Index(fields=["project", "run", "audience", "computed_at"], name="calibrated_scores_latest")]
        verbose_name_plural = "calibrated scores"

    def __str__(self) -> str:
        return f"calibrated scores of project {self.project_id}, run {self.run_id} ({self.version[:12]})"
