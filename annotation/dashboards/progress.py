"""Live progress of running evaluation runs for the dashboards index (polled by htmx).

Apart from ``selectors`` because ``scoring.selectors`` imports ``selectors``; this module uses
``scoring.selectors.run_progress``, the same figures the run pages and the API show."""

from __future__ import annotations

from scoring.models import EvaluationRun
from scoring.selectors import run_progress

RUNS_SHOWN = 10


def runs_in_progress(*, limit: int = RUNS_SHOWN) -> dict:
    """Running evaluation runs, newest first, each with ``run_progress`` (done, failed, total,
    ETA): at most ``limit`` runs at 2 queries each plus 2, so the polled fragment stays cheap
    however many runs there are."""
    running = EvaluationRun.objects.filter(status=EvaluationRun.Status.RUNNING)
    runs = list(running.select_related("judge_config").order_by("-created_at", "-id")[: limit + 1])
    rows = []
    for run in runs[:limit]:
        progress = run_progress(run=run)
        settled = progress["done"] + progress["failed"]
        rows.append({"id": run.pk, "name": str(run), "protocol": run.protocol, "judge": run.judge_config.name,
                     **progress, "eta": eta_text(progress["eta_seconds"]),
                     "percent": 100.0 * settled / progress["total"] if progress["total"] else 0.0})
    more = running.count() - limit if len(runs) > limit else 0
    return {"runs": rows, "more": more}


def eta_text(seconds: float | None) -> str:
    """``3 min 20 s``; an em dash while no job has settled yet (no duration to go by)."""
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"
