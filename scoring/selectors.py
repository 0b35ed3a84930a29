"""Reads with logic for runs and their scores: bounded queries, no per-row lookups."""

from __future__ import annotations

from django.db.models import Avg, Count, DurationField, ExpressionWrapper, F, QuerySet

from .models import EvaluationRun, RunJob, ScoreCard

Job = RunJob.Status


def run_progress(*, run: EvaluationRun) -> dict:
    """Job counts by status and an ETA.

    ``eta_seconds`` = mean duration of the run's settled jobs × jobs left (pending +
    running) ÷ jobs running now (at least 1): ``None`` until a job has settled, 0 when
    nothing is left."""
    counts = dict(run.jobs.values_list("status").annotate(n=Count("pk")).order_by())
    duration = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    mean = (
        run.jobs.filter(status__in=[Job.DONE, Job.FAILED], started_at__isnull=False, finished_at__isnull=False)
        .aggregate(mean=Avg(duration))["mean"]
    )
    pending, running = counts.get(Job.PENDING, 0), counts.get(Job.RUNNING, 0)
    left = pending + running
    if not left:
        eta = 0.0
    elif mean is None:
        eta = None
    else:
        eta = mean.total_seconds() * left / max(1, running)
    return {
        "status": run.status,
        "total": sum(counts.values()),
        "done": counts.get(Job.DONE, 0),
        "failed": counts.get(Job.FAILED, 0),
        "pending": pending,
        "running": running,
        "cancelled": counts.get(Job.CANCELLED, 0),
        "eta_seconds": eta,
    }


def run_score_cards(*, run: EvaluationRun, per_report: bool = False) -> QuerySet[ScoreCard]:
    """The run's stored score cards: per system (default) or per report."""
    cards = ScoreCard.objects.filter(run=run, report__isnull=not per_report).select_related("system")
    if per_report:
        cards = cards.select_related("report__task").order_by("report__task__key", "system__name", "system__version")
    else:
        cards = cards.order_by("system__name", "system__version")
    return cards


def run_job_errors(*, run: EvaluationRun, limit: int = 20) -> QuerySet[RunJob]:
    """The run's failed jobs with their errors, for the command's summary and the run page."""
    return (
        run.jobs.filter(status=Job.FAILED)
        .select_related("report__task", "report__system")
        .defer("report__text", "report__parsed", "report__stats", "report__sources")
        .order_by("pk")[:limit]
    )
