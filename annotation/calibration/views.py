"""The "Calibrated scores" card: on a run's page (a panel registered with
``scoring.views_runs.run_page_panel_register``) and on the leaderboard. Shown to the curators
of an agreement project on the run's judge configuration; ``?calibration=<project id>`` picks
the project (default: the newest sampled one)."""

from __future__ import annotations

from core.accounts import is_global_curator
from core.bounded import integer_param

from ..kinds import kinds_with
from ..models import AnnotationProject, Role

from .sampling import RANDOM_DESIGNS
from .unit_groups import UNITS_FOR_COVERAGE, sampling_design_label
from .units import UNIT_METRICS
from .selectors import (
    PLAN_ASSUMPTION, CalibrationRefused, calibrated_scores, calibrated_scores_shown, calibration_projects, labels_plan,
    units_counted,
)


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
            "calibration_design": sampling_design_label(chosen), "calibration_units_for_coverage": UNITS_FOR_COVERAGE,
            "calibration_run": run}


def calibration_panel(request, run) -> dict:
    return calibration_context(request, run)


SAMPLING_SENTENCES = {
    "all": "This project holds every verdict in its scope (inclusion probability 1 each).",
    "chosen": "This project's verdicts were chosen by hand: not a random sample, so its labels describe the judge "
              "on these verdicts but cannot calibrate its scores.",
    "uniform": "This project holds a uniform random sample of the verdicts in its scope: each had the same chance "
               "of being chosen (recorded on each item), and items are offered in a random order, so the labels "
               "given so far are a random sample too.",
    "stratified": "This project holds a uniform random sample of the verdicts within each system and judge step, "
                  "sized in proportion to them (each item records its chance of being chosen); items are offered "
                  "in a random order.",
}
ADAPTIVE_FOR_CURATORS = ("This project holds a random sample that favours the verdicts the judge was least sure of "
                         "(other repeats or judges disagreeing, low confidence), with at least a fifth of the budget "
                         "spread evenly; each item records its chance of being chosen and calibrated scores weight "
                         "its label by the inverse, so the intervals stay valid.")
ADAPTIVE_FOR_ANNOTATORS = ("This project holds a random sample of the verdicts in its scope; items are offered in a "
                           "random order.")


UNIT_SENTENCES = {
    "group": "It draws whole DeepSynth checklist groups: every verdict of a drawn group is held, with the group's "
             "chance of being chosen, a group's verdicts offered together, and its group score is calibrated once "
             "all of them are labelled.",
    "sentence": "It draws whole DeepScholar claim sentences: every citation verdict of a drawn sentence is held, with "
                "the sentence's chance of being chosen, a sentence's verdicts offered together, and its claim coverage "
                "is calibrated once all of them are labelled.",
}


def sampling_sentence(project, role: str | None) -> str:
    """What the project's page says about how its verdicts were chosen (agreement projects).
    Annotators are not told that an adaptive sample favours uncertain verdicts: in a blind
    project that would hint at the judge's verdict on the item in front of them; nor what unit
    a sample draws (the curators' design, as in the exports)."""
    if project.kind not in kinds_with("calibration"):
        return ""
    if project.sampling == project.Sampling.ADAPTIVE:
        sentence = ADAPTIVE_FOR_CURATORS if role == "curator" else ADAPTIVE_FOR_ANNOTATORS
    else:
        sentence = SAMPLING_SENTENCES.get(project.sampling, "")
    if role == "curator" and project.sampling in RANDOM_DESIGNS and project.sampling_unit in UNIT_SENTENCES:
        sentence = f"{sentence} {UNIT_SENTENCES[project.sampling_unit]}"
    return sentence


def planner_context(request, project, role: str | None) -> dict:
    """The planner on a project's progress page (its curators, agreement projects): how many more
    labels are expected to bring a metric's interval (or the best-vs-second difference) below
    the width the curator names (``?plan_metric=&plan_width=&plan_separation=1``). The page
    itself costs no query for it: the estimates are computed only when a width is asked."""
    if role != "curator" or project.kind not in kinds_with("calibration") or project.judge_config_id is None:
        return {}
    steps = project.steps or list(UNIT_METRICS)
    per_verdict, group_metrics = units_counted(project)
    metrics = [metric.key for step in steps for metric in UNIT_METRICS.get(step, ()) if per_verdict]
    metrics += [metric.key for metric in group_metrics if metric.step in steps]
    planner = {"metrics": metrics, "metric": request.GET.get("plan_metric") or (metrics[0] if metrics else ""),
               "width": request.GET.get("plan_width", ""), "separation": request.GET.get("plan_separation") == "1",
               "assumption": PLAN_ASSUMPTION, "current": []}
    if not planner["width"]:
        return {"planner": planner}
    try:
        width = float(planner["width"])
        if not width > 0:
            raise ValueError
    except ValueError:
        planner["error"] = f"width: {planner['width']!r} is not a positive number"
        return {"planner": planner}
    try:
        result = calibrated_scores(run=None, project=project, user=request.user)
        if result["statistics"]["state"] != "current" and not result["metrics"]:
            planner["error"] = ("the calibrated scores of these labels are being computed by a worker: "
                                "ask again in a moment")
            return {"planner": planner}
        planner["plan"] = labels_plan(result, metric=planner["metric"], width=width, separation=planner["separation"])
    except (CalibrationRefused, PermissionError) as exc:
        planner["error"] = str(exc)
        return {"planner": planner}
    planner["warning"] = result["warning"]
    entry = next(m for m in result["metrics"] if m["metric"] == planner["metric"])
    planner["current"] = [{"system": s["system"], "n_human": s["n_human"], "n_judge": s["n_judge"],
                           "width": (s["ppi"]["high"] - s["ppi"]["low"]) if s["ppi"] else None}
                          for s in entry["systems"]]
    return {"planner": planner}


def leaderboard_calibration(request, *, protocol: str, run_id: int | None) -> dict:
    """The leaderboard's card: for the run it is narrowed to, else the newest finished run of the
    protocol on whose judge configuration the user curates an agreement project (one query to
    find it, whatever the number of runs)."""
    from scoring.models import EvaluationRun

    curated = AnnotationProject.objects.filter(kind__in=kinds_with("calibration"), judge_config__isnull=False)
    if not is_global_curator(request.user):
        curated = curated.filter(memberships__user=request.user, memberships__role=Role.CURATOR)
    runs = EvaluationRun.objects.filter(protocol=protocol, judge_config__in=curated.values("judge_config"))
    if run_id is not None:
        runs = runs.filter(pk=run_id)
    else:
        runs = runs.filter(status__in=[EvaluationRun.Status.FINISHED, EvaluationRun.Status.FINISHED_WITH_FAILURES])
    run = runs.select_related("judge_config", "task_set").order_by("-created_at", "-id").first()
    if run is None:
        return {}
    context = calibration_context(request, run)
    if not context:
        return {}
    keep = f"protocol={protocol}" + (f"&run={run_id}" if run_id is not None else "")
    return {**context, "calibration_keep": keep}
