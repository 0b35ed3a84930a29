"""The "Calibrated scores" card: on a run's page (a panel registered with
``scoring.views_runs.run_page_panel_register``) and on the leaderboard. Shown to the curators
of an agreement project on the run's judge configuration; ``?calibration=<project id>`` picks
the project (default: the newest sampled one)."""

from __future__ import annotations

from core.bounded import integer_param

from .sampling import RANDOM_DESIGNS
from .selectors import CalibrationRefused, calibrated_scores, calibrated_scores_shown, calibration_projects


def calibration_context(request, run) -> dict:
    """``calibration`` (``calibrated_scores_shown``), the projects to choose from and the chosen
    one; nothing for a user who curates no agreement project on the run's judge."""
    projects = calibration_projects(user=request.user, judge_config_id=run.judge_config_id)
    if not projects:
        return {}
    try:
        wanted = integer_param(request.GET, "calibration", min_value=1)
    except ValueError:
        wanted = None
    chosen = next((p for p in projects if p.pk == wanted), None) or next(
        (p for p in projects if p.sampling in RANDOM_DESIGNS), projects[0])
    try:
        result = calibrated_scores_shown(calibrated_scores(run=run, project=chosen, user=request.user))
    except (CalibrationRefused, PermissionError) as exc:
        result = {"refused": str(exc), "metrics": []}
    return {"calibration": result, "calibration_projects": projects, "calibration_project": chosen,
            "calibration_run": run}


def calibration_panel(request, run) -> dict:
    return calibration_context(request, run)
