"""Reads with logic for runs and their scores: bounded queries, no per-row lookups."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from numbers import Real

from django.db.models import (
    Count, Exists, Max, Min, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum,
)
from django.db.models.functions import Coalesce

from scoring.metric_names import NOT_METRICS, PERCENT_PROTOCOLS, headline_metrics, is_headline_metric, metric_label
from benchmark.models import Report, System, TaskSet

from .models import BatchCall, EvaluationRun, LLMCall, RunJob, ScoreCard, Verdict

Job = RunJob.Status


def run_progress(*, run: EvaluationRun) -> dict:
    """Job counts by status and an ETA.

    ``eta_seconds`` = the run's pace so far × jobs left (pending + running): the pace is the
    wall time from its first job's start to its last settled job's end, per settled job, so it
    holds whatever the workers' concurrency and the mix of long and short steps already done.
    ``None`` until a job has settled, 0 when nothing is left. Not the mean job duration ÷ the
    jobs running now: that count flips between 0, 1 and 2 on the demo's two worker processes as
    jobs end and start, and the estimate with it (2× jumps in 15 of 31 readings 2 s apart; the
    pace: 2 of 31, and closer to the time the run then took, docs/performance.md)."""
    counts = dict(run.jobs.values_list("status").annotate(n=Count("pk")).order_by())
    span = run.jobs.filter(started_at__isnull=False).aggregate(
        first=Min("started_at"),
        last=Max("finished_at", filter=Q(status__in=[Job.DONE, Job.FAILED])),
        settled=Count("pk", filter=Q(status__in=[Job.DONE, Job.FAILED], finished_at__isnull=False)),
    )
    pending, running = counts.get(Job.PENDING, 0), counts.get(Job.RUNNING, 0)
    left = pending + running
    if not left:
        eta = 0.0
    elif not span["settled"] or span["last"] is None:
        eta = None
    else:
        eta = max(0.0, (span["last"] - span["first"]).total_seconds()) / span["settled"] * left
    return {
        "status": run.status,
        "total": sum(counts.values()),
        "done": counts.get(Job.DONE, 0),
        "failed": counts.get(Job.FAILED, 0),
        "pending": pending,
        "running": running,
        "cancelled": counts.get(Job.CANCELLED, 0),
        "waiting": counts.get(Job.WAITING, 0),  # batch mode: their calls are in a batch
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


# --- the run pages --------------------------------------------------------------------------

TASK_KEYS_SHOWN = 12


def run_list() -> QuerySet[EvaluationRun]:
    """Runs newest first with what the run pages show, in one query plus one for the systems:
    judge, task set, creator, and ``n_tasks`` (the run's own tasks, else its task set's)."""
    own = (
        EvaluationRun.tasks.through.objects.filter(evaluationrun_id=OuterRef("pk"))
        .order_by().values("evaluationrun_id").annotate(n=Count("pk")).values("n")
    )
    in_set = (
        TaskSet.tasks.through.objects.filter(taskset_id=OuterRef("task_set_id"))
        .order_by().values("taskset_id").annotate(n=Count("pk")).values("n")
    )
    return (
        EvaluationRun.objects.select_related("judge_config", "task_set", "created_by")
        .prefetch_related(Prefetch("systems", queryset=System.objects.order_by("name", "version")))
        .annotate(n_tasks=Coalesce(Subquery(own), Subquery(in_set), 0))
        .order_by("-created_at", "-pk")
    )


def run_detail(*, run_id: int) -> EvaluationRun:
    """One run as ``run_list`` gives it, plus ``task_keys``: its first task keys. Raises ``DoesNotExist``."""
    run = run_list().get(pk=run_id)
    tasks = run.task_set.tasks if run.task_set_id else run.tasks
    run.task_keys = list(tasks.order_by("key").values_list("key", flat=True)[:TASK_KEYS_SHOWN])
    return run


def job_share(counts: dict) -> dict:
    """``settled`` (done + failed + cancelled) and ``percent`` of ``total`` from job counts by status."""
    settled = counts.get(Job.DONE, 0) + counts.get(Job.FAILED, 0) + counts.get(Job.CANCELLED, 0)
    total = counts.get("total", 0)
    return {"settled": settled, "percent": round(100 * settled / total) if total else 0}


def run_list_rows(*, runs: Sequence[EvaluationRun]) -> list[dict]:
    """For each run of a page: ``jobs`` (count per status, ``total``, ``settled``, ``percent``) and
    ``usage`` (``runs_usage``), in two grouped queries whatever the number of runs."""
    ids = [run.pk for run in runs]
    counts: dict[int, dict] = defaultdict(dict)
    rows = RunJob.objects.filter(run_id__in=ids).values_list("run_id", "status").annotate(n=Count("pk")).order_by()
    for run_id, status, n in rows:
        counts[run_id][status] = n
    usage = runs_usage(run_ids=ids)
    result = []
    for run in runs:
        jobs = {status: counts[run.pk].get(status, 0) for status in Job.values}
        jobs["total"] = sum(jobs.values())
        result.append({"run": run, "jobs": {**jobs, **job_share(jobs)}, "usage": usage[run.pk]})
    return result


def runs_usage(*, run_ids: Iterable[int]) -> dict[int, dict]:
    """Per run, from its ``LLMCall`` rows: judge ``calls`` (logical calls, one answer each), ``requests``
    (HTTP requests they took, retries included), ``failed_calls``, ``tokens_in``, ``tokens_out``, ``cost_usd``."""
    run_ids = list(run_ids)
    usage = {run_id: {"calls": 0, "requests": 0, "failed_calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
             for run_id in run_ids}
    rows = (
        LLMCall.objects.filter(run_id__in=run_ids).values("run_id")
        .annotate(calls=Count("pk"), requests=Sum("attempts"), failed_calls=Count("pk", filter=Q(ok=False)),
                  tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"), cost_usd=Sum("cost_usd"))
        .order_by()
    )
    for row in rows:
        usage[row.pop("run_id")] = row
    return usage


REASON_CHARS = 500


def run_verdicts(*, run: EvaluationRun, verdicts: QuerySet[Verdict] | None = None) -> QuerySet[Verdict]:
    """The verdicts a run's scores are made of (of ``verdicts``, default all): those on its reports by
    its judge configuration under its prompt version, whichever run first stored them (a run reuses
    the finished verdicts of earlier ones)."""
    config = run.judge_config
    verdicts = Verdict.objects.all() if verdicts is None else verdicts
    return verdicts.filter(report_id__in=run.jobs.values("report_id"), judge_config_id=config.pk,
                           prompt_version=config.prompt_version)


def run_failure_reasons(*, run: EvaluationRun, limit: int = 10) -> list[dict]:
    """Why the run's items have no verdict (``of`` = ``items``: the errors on the verdicts of its reports
    under its judge configuration, as they stand now) and why its jobs failed (``of`` = ``jobs``), each
    grouped by reason with its ``count``, most frequent first; at most ``limit`` of each."""
    items = (
        run_verdicts(run=run).exclude(error="").values("error").annotate(n=Count("pk")).order_by("-n", "error")[:limit]
    )
    jobs = (
        run.jobs.filter(status=Job.FAILED).values("error").annotate(n=Count("pk")).order_by("-n", "error")[:limit]
    )
    return [
        {"reason": row["error"][:REASON_CHARS] or "(no reason recorded)", "count": row["n"], "of": of}
        for of, rows in (("items", items), ("jobs", jobs)) for row in rows
    ]


def run_failure_account(*, run: EvaluationRun, total: int, failed: int, items_failed: int) -> str:
    """One line saying what failed (``failed`` of ``total`` jobs, ``items_failed`` items without a verdict)
    and why, with the most frequent reasons, or "" when nothing did: the run's ``error``."""
    if not failed and not items_failed:
        return ""
    parts = []
    if failed:
        parts.append(f"{failed} of {total} jobs failed")
    if items_failed:
        parts.append(f"{items_failed} items have no verdict")
    reasons = run_failure_reasons(run=run, limit=3)
    # the items' reasons are the precise ones; a failed job's error only summarizes its calls' reasons
    reasons = [row for row in reasons if row["of"] == "items"] or reasons
    because = "; ".join(f"{row['reason']} (×{row['count']} {row['of']})" for row in reasons)
    return ", ".join(parts) + (f" — {because}" if because else "") + "; resume the run to retry only these"


def run_report_cards(*, run: EvaluationRun) -> QuerySet[ScoreCard]:
    """``run_score_cards`` per report, without the reports' texts (the run page shows task keys)."""
    return run_score_cards(run=run, per_report=True).defer(
        "report__text", "report__parsed", "report__stats", "report__sources"
    )


def runs_queued_count() -> int:
    """Running runs with jobs no worker has picked up yet: what a missing worker holds up."""
    pending = RunJob.objects.filter(run=OuterRef("pk"), status=Job.PENDING)
    return EvaluationRun.objects.filter(status=EvaluationRun.Status.RUNNING).filter(Exists(pending)).count()


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


# The most metric columns one group of the per-report table holds: with the task, system and
# item counts that still fits a laptop's width (1366 px) without a sideways scroll.
COLUMN_GROUP_SIZE = 10


def _column_groups(headline: list[str], scores: list[str], counts: list[str]) -> list[dict]:
    """The metric keys in groups a page shows one at a time: headline, other scores, counts, each
    cut into runs of at most ``COLUMN_GROUP_SIZE``."""
    groups = []
    for key, label, columns in (("headline", "Headline metrics", headline), ("scores", "Other scores", scores),
                                ("counts", "Counts", counts)):
        chunks = [columns[i:i + COLUMN_GROUP_SIZE] for i in range(0, len(columns), COLUMN_GROUP_SIZE)]
        for n, chunk in enumerate(chunks):
            start = n * COLUMN_GROUP_SIZE
            groups.append({
                "key": key if len(chunks) == 1 else f"{key}-{n + 1}",
                "label": label if len(chunks) == 1 else f"{label} {start + 1}–{start + len(chunk)}",
                "section": label,
                "columns": chunk,
            })
    return groups


def score_card_table(*, protocol: str, cards: Iterable[ScoreCard], group: str | None = None) -> dict:
    """Score cards as a table with every metric the cards hold: the protocol's headline metrics
    first (the leaderboard's order), then the other scores, then the counts. A cell's ``over``
    is how many reports a system card's mean is over (``reports_with``); ``digits`` is how the
    leaderboard rounds (DeepSynth-Eval in percent, the others on 0–1).

    ``groups`` are the columns in groups of at most ``COLUMN_GROUP_SIZE`` and ``by_metric`` the
    same cells with metrics as rows (each with its group's label). With ``group`` (one of the
    groups' keys; an unknown key means the first group) the columns and rows hold that group only."""
    cards = list(cards)
    keys: list[str] = []
    for card in cards:
        keys += [k for k, v in card.metrics.items() if k not in keys and (v is None or _is_number(v))]
    headline = [k for k in headline_metrics(protocol, keys) if is_headline_metric(protocol, k)]
    scores = sorted(k for k in keys if k not in headline and k not in NOT_METRICS)
    counts = sorted(k for k in keys if k in NOT_METRICS)
    groups = _column_groups(headline, scores, counts)
    columns = headline + scores + counts
    chosen = None
    if group is not None and groups:
        chosen = next((g for g in groups if g["key"] == group), groups[0])
        columns = chosen["columns"]
    rows = []
    for card in cards:
        over = card.metrics.get("reports_with")
        over = over if isinstance(over, dict) else {}
        cells = []
        for key in columns:
            value = card.metrics.get(key)
            cells.append({
                "key": key,
                "value": value if _is_number(value) else None,
                "integer": isinstance(value, int) and not isinstance(value, bool),
                "over": over.get(key),
            })
        rows.append({"card": card, "cells": cells})
    # DeepScholar: the metrics the system cards' geometric mean is over (the same for every system of the run)
    over = next((c.metrics["geometric_mean_over"] for c in cards
                 if c.report_id is None and isinstance(c.metrics.get("geometric_mean_over"), list)), None)
    group_of = {key: g["section"] for g in groups for key in g["columns"]}
    by_metric = [{"key": key, "label": metric_label(key), "group": group_of[key],
                  "cells": [(row["card"], row["cells"][i]) for row in rows]} for i, key in enumerate(columns)]
    return {
        "columns": [{"key": key, "label": metric_label(key)} for key in columns],
        "rows": rows,
        "by_metric": by_metric,
        "groups": [{"key": g["key"], "label": g["label"], "n": len(g["columns"])} for g in groups],
        "group": chosen["key"] if chosen else None,
        "digits": 1 if protocol in PERCENT_PROTOCOLS else 3,
        "geometric_mean_over": [metric_label(k) for k in over] if over is not None else None,
        # which variant of each metric the run computed: the paper's, or the released code's ("upstream")
        "variants": next(({metric_label(k): v for k, v in c.metrics["variants"].items()} for c in cards
                          if isinstance(c.metrics.get("variants"), dict)), None),
    }


def reports_missing(*, tasks, systems) -> list[tuple[str, list[str]]]:
    """``(task key, [systems without a report on it])`` for each task some of ``systems`` did not
    write a report on, in task-key order: what a run over them would leave out."""
    systems = list(systems)
    have = set(Report.objects.filter(task__in=tasks, system__in=systems).values_list("task_id", "system_id"))
    missing = []
    for task in sorted(tasks, key=lambda task: task.key):
        absent = [system.label for system in systems if (task.pk, system.pk) not in have]
        if absent:
            missing.append((task.key, absent))
    return missing


def run_batches(*, run: EvaluationRun) -> dict:
    """Batch mode, for the run page: its batches (newest first, at most 20), its batch calls by status
    and the discount its costs were computed with (``scoring.services.batches``)."""
    calls = {status: 0 for status in BatchCall.Status.values}
    calls.update(dict(run.batch_calls.values_list("status").annotate(n=Count("pk")).order_by()))
    return {"batches": list(run.batches.order_by("-pk")[:20]), "calls": calls,
            "discount": run.judge_config.batch_discount}
