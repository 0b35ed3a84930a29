"""A rating project's own figures (``Rating.statistics``): per criterion and system the mean
with a task-clustered interval, Krippendorff's α per criterion and ICC(2,1), and the judge
against the experts on the same reports and criteria. The numbers come from
``scoring.metrics.ratings``; here, only which labels and verdicts they are of."""

from collections import defaultdict

from benchmark.models import Report, RubricCriterion
from scoring import metrics as m
from scoring.metrics import ratings as r
from scoring.models import Verdict

from ..models import AnnotationProject, Label

# The judge steps that score reports on rubric criteria, and the scale each scores on
# (``scoring.judges.steps``): the judge is compared with experts only on the same scale.
RUBRIC_STEPS = {"surveylens.rubric": (1, 5), "scisage.quality": (1, 10), "scisage.section_structure": (1, 5)}


def _scores(project_id: int) -> list[tuple[int, int, int, int, str, float]]:
    """(item, annotator, report, task, criterion, score) of every label's every score."""
    rows = Label.objects.filter(project_id=project_id).order_by("pk").values_list(
        "item_id", "annotator_id", "item__target_id", "item__task_id", "value")
    return [(item, annotator, report, task, name, float(score))
            for item, annotator, report, task, value in rows
            for name, score in sorted((value.get("scores") or {}).items())]


def judge_scores(report_ids, criteria, *, scale: dict,
                 judge_config_id: int | None = None) -> dict[tuple[int, str], float]:
    """(report, criterion) → the judge's mean rubric score over repeats and configurations (the
    project's judge configuration only, when it names one): verdicts of the rubric steps that
    score on the project's scale whose criterion (a ``RubricCriterion``'s name, else the
    verdict's key) is rated here."""
    steps = [step for step, (low, high) in RUBRIC_STEPS.items() if (low, high) == (scale["min"], scale["max"])]
    verdicts = Verdict.objects.filter(report__in=report_ids, step__in=steps, score__isnull=False, error="")
    if judge_config_id is not None:
        verdicts = verdicts.filter(judge_config_id=judge_config_id)
    rows = list(verdicts.values_list("report_id", "target_kind", "target_id", "target_key", "score"))
    names = dict(RubricCriterion.objects.filter(
        pk__in={target_id for _, kind, target_id, _, _ in rows if kind == "rubric_criterion" and target_id}).values_list("pk", "name"))
    found: dict[tuple[int, str], list[float]] = defaultdict(list)
    for report, kind, target_id, key, score in rows:
        name = names.get(target_id) or key
        if name in criteria:
            found[report, name].append(score)
    return {key: sum(values) / len(values) for key, values in found.items()}


def rating_statistics(project: dict) -> dict:
    """``project``: a row of ``curated_projects`` (id, kind, judge_config_id, ...)."""
    row = AnnotationProject.objects.filter(pk=project["id"]).values("scale", "judge_config_id").first() or {}
    scale = row.get("scale") or {"min": 1, "max": 5}
    rows = _scores(project["id"])
    if not rows:
        return {"scale": scale, "n_scores": 0, "criteria": []}
    report_ids = sorted({report for _, _, report, *_ in rows})
    systems = {pk: str(system) for pk, system in
               ((report.pk, report.system) for report in Report.objects.filter(pk__in=report_ids).select_related("system"))}
    criteria = sorted({name for *_, name, _ in rows})
    judge = judge_scores(report_ids, set(criteria), scale=scale, judge_config_id=row.get("judge_config_id"))
    out = []
    for name in criteria:
        mine = [row for row in rows if row[4] == name]
        by_system: dict[str, list[tuple[int, int, float]]] = defaultdict(list)
        for item, _, report, task, _, score in mine:
            by_system[systems[report]].append((item, task, score))
        means = []
        for system, scored in sorted(by_system.items()):
            # one value per report: the mean of its raters, clustered by task
            per_item: dict[int, list[float]] = defaultdict(list)
            task_of = {}
            for item, task, score in scored:
                per_item[item].append(score)
                task_of[item] = task
            items = sorted(per_item)
            report_of = {item: report for item, _, report, *_ in mine}
            judged = [judge[report_of[i], name] for i in items if (report_of[i], name) in judge]
            means.append({"system": system, **r.clustered_mean([sum(per_item[i]) / len(per_item[i]) for i in items],
                                                               [task_of[i] for i in items]),
                          "judge_mean": sum(judged) / len(judged) if judged else None, "judge_n": len(judged)})
        units = [item for item, *_ in mine]
        coders = [annotator for _, annotator, *_ in mine]
        scores = [score for *_, score in mine]
        alpha = m.krippendorff_alpha_units(units, scores, level="interval") if len(set(units)) < len(units) else None
        expert = defaultdict(list)
        for _, _, report, _, _, score in mine:
            expert[report].append(score)
        shared = sorted(report for report in expert if (report, name) in judge)
        versus = r.judge_vs_experts([judge[report, name] for report in shared],
                                    [sum(expert[report]) / len(expert[report]) for report in shared],
                                    low=scale["min"], high=scale["max"]) if shared else None
        out.append({"criterion": name, "n_scores": len(mine), "alpha_interval": alpha,
                    "icc": r.icc_2_1(units, coders, scores), "systems": means, "judge_vs_experts": versus})
    return {"scale": scale, "n_scores": len(rows), "criteria": out}
