"""How an evaluation run ends: finalized once every job has settled (score cards, then finished,
finished with failures or failed), halted at once with one reason, or its cards recomputed from
the stored verdicts. ``scoring.services.runs`` starts runs and executes their jobs; it calls
these when a run's last job settles, and recovery finalizes the runs whose finalization was lost.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.core.exceptions import ValidationError
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from benchmark.models import Report
from scoring.judges.endpoints import redact
from scoring.models import EvaluationRun, RunJob, ScoreCard
from scoring.pipelines import pipeline_for
from scoring.selectors import run_failure_account
from scoring.signals import run_finished

logger = logging.getLogger(__name__)

Run = EvaluationRun.Status
Job = RunJob.Status
ACTIVE_JOB_STATUSES = (Job.PENDING, Job.RUNNING, Job.WAITING)
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)


@transaction.atomic
def run_finalize(*, run: EvaluationRun) -> EvaluationRun:
    """When every job has settled: store the score cards and mark the run finished (or failed,
    when every job failed or the scores cannot be computed). Does nothing for a run that is
    not running or not settled."""
    run = _lock_run(run)
    if run.status != Run.RUNNING or run.jobs.filter(status__in=ACTIVE_JOB_STATUSES).exists():
        return run
    counts = dict(run.jobs.values_list("status").annotate(n=Count("pk")).order_by())
    total, failed = sum(counts.values()), counts.get(Job.FAILED, 0)
    try:
        with transaction.atomic():
            cards = _score_cards_write(run)
    except TRANSIENT_DB_ERRORS:
        raise
    except Exception as exc:  # e.g. a checklist the metrics refuse: say so on the run instead of retrying forever
        logger.exception("scoring run %s failed", run.pk)
        run.status, run.error = Run.FAILED, redact(f"scoring failed: {type(exc).__name__}: {exc}")
    else:
        items_failed = sum(card.items_failed for card in cards if card.report_id is not None)
        if total and failed == total:
            run.status = Run.FAILED
        elif failed or items_failed:
            run.status = Run.FINISHED_WITH_FAILURES
        else:
            run.status = Run.FINISHED
        run.error = redact(run_failure_account(run=run, total=total, failed=failed, items_failed=items_failed))
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at", "updated_at"])
    run_finished.send(sender=EvaluationRun, run=run)
    return run


@transaction.atomic
def run_rescore(*, run: EvaluationRun) -> list[ScoreCard]:
    """Recompute the run's score cards from the verdicts stored now, without any judge call."""
    run = _lock_run(run)
    if run.status == Run.RUNNING and run.jobs.filter(status__in=ACTIVE_JOB_STATUSES).exists():
        raise ValidationError(f"run #{run.pk} still has jobs to execute; rescore it once they have settled")
    return _score_cards_write(run)


def _score_cards_write(run: EvaluationRun) -> list[ScoreCard]:
    """One card per report and one per system (the pipeline's aggregate of its report cards)."""
    pipeline = pipeline_for(run.protocol)
    reports = (
        Report.objects.filter(pk__in=run.jobs.values("report_id"))
        .select_related("task", "system")
        .defer("parsed")
        .order_by("task__key", "system__name", "system__version")
    )
    cards, per_system = [], defaultdict(list)
    for report in reports:
        score = pipeline.score_report(run=run, report=report)
        per_system[report.system_id].append(score)
        cards.append(_card(run, report.system_id, report, score))
    system_scores = {system_id: pipeline.score_system(report_scores=scores) for system_id, scores in per_system.items()}
    pipeline.compare_systems(system_scores=system_scores)
    cards += [_card(run, system_id, None, score) for system_id, score in system_scores.items()]
    ScoreCard.objects.filter(run=run).delete()
    return ScoreCard.objects.bulk_create(cards)


def _card(run: EvaluationRun, system_id: int, report: Report | None, score: dict) -> ScoreCard:
    return ScoreCard(
        run=run, system_id=system_id, report=report, metrics=score["metrics"],
        items_judged=score["items_judged"], items_failed=score["items_failed"],
    )


def _lock_run(run: EvaluationRun) -> EvaluationRun:
    return EvaluationRun.objects.select_for_update(of=("self",)).select_related("judge_config").get(pk=run.pk)


def runs_settled_finalize() -> dict[str, int]:
    """Finalize the running runs whose jobs have all settled but whose finalization was lost
    (after each recovery, ``core.jobs``)."""
    active = RunJob.objects.filter(run=OuterRef("pk"), status__in=ACTIVE_JOB_STATUSES)
    finalized = 0
    for run in EvaluationRun.objects.filter(status=Run.RUNNING).exclude(Exists(active)):
        run_finalize(run=run)
        finalized += 1
    if finalized:
        logger.warning("finalized %d settled run(s)", finalized)
    return {"runs_finalized": finalized}


@transaction.atomic
def run_halt(*, run: EvaluationRun, reason: str, job: RunJob | None = None) -> EvaluationRun:
    """Stop a running run at once with one reason (an endpoint that refuses the key or the model, the
    run's deadline): ``job`` and every pending job fail with it, jobs running elsewhere stop at their
    next call (``GuardedJudge`` reads the run), and the run is ``failed`` with the score cards of what
    was judged. Resume retries every failed job."""
    run = _lock_run(run)
    reason = redact(reason)
    now = timezone.now()
    if job is not None:
        RunJob.objects.filter(pk=job.pk, status=Job.RUNNING).update(
            status=Job.FAILED, error=reason, finished_at=now, updated_at=now
        )
    if run.status != Run.RUNNING:
        return run
    run.jobs.filter(status__in=(Job.PENDING, Job.WAITING)).update(
        status=Job.FAILED, error=f"not started: the run stopped: {reason}", finished_at=now, updated_at=now
    )
    try:
        with transaction.atomic():
            _score_cards_write(run)
    except TRANSIENT_DB_ERRORS:
        raise
    except Exception:  # the reason to stop is what the run must say; the cards are secondary
        logger.exception("scoring halted run %s failed", run.pk)
    run.status, run.error, run.finished_at = Run.FAILED, f"stopped: {reason}", now
    run.save(update_fields=["status", "error", "finished_at", "updated_at"])
    run_finished.send(sender=EvaluationRun, run=run)
    return run
