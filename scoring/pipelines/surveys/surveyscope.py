"""SciSage / SurveyScope (§5.1): reference TP/F1, quality dimensions rescaled to 0–100, pairwise.

The steps and metric keys are described in the package docstring (``scoring.pipelines.surveys``).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.models import ReviewStatus, RubricCriterion
from scoring.embeddings import content_hash
from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import pooled_reference_prf, reference_prf

from ..base import fingerprint, variant_option
from ..report_sources import gold_references
from ..verdicts import reusable, stored_verdicts
from .pairwise import PAIRWISE, PAIRWISE_KIND, SurveyPipeline
from .scored_calls import SCORED_LABELS, ScoredCall, Target, ask_scored, finished_scores, slug, verdict_rows
from .ssr import report_ssr, survey_ssr

QUALITY = "scisage.quality"
SECTION_STRUCTURE = "scisage.section_structure"  # a judge call made within the QUALITY job step
SCOPE_STEPS = [QUALITY, PAIRWISE]
DIMENSION_KIND = "quality_dimension"
QUALITY_SCALE = 10
SECTION_STRUCTURE_SCALE = 5

# The paper's quality dimensions (SciSage App. A.4–A.6), each scored 1–10 in one call.
DEFAULT_DIMENSIONS = (
    ("language", "Language fluency and style",
     "Academic formality (precise terminology, no colloquial phrasing, scholarly tone); clarity and readability "
     "(clear, concise, unambiguous sentences with smooth transitions); no redundancy (every sentence adds value, "
     "no rephrasing of the same point)."),
    ("critical", "Critical thinking and originality",
     "Critical analysis (incisive critique of methods, results and assumptions, significant gaps identified); "
     "original insights (novel, well-supported interpretations or frameworks); future directions (concrete, "
     "justified research directions tied to the gaps found)."),
    ("structure", "Document structure",
     "Structural coherence and narrative logic (well-organised sections, balanced, logical progression); "
     "conceptual depth and thematic coverage (key themes and subfields covered in breadth and depth); critical "
     "thinking and scholarly synthesis (perspectives integrated, tensions and open questions addressed)."),
)


@dataclass(frozen=True)
class Dimension:
    key: str
    name: str
    description: str
    criterion_id: int = 0
    scale: int = QUALITY_SCALE  # the judge scores 1..scale
    step: str = QUALITY  # the judge call (prompt) that scores it


# SciSage §5.1.2 "Section-Level Structure": Table 3's 1–5 rubric (from AutoSurvey), its own prompt.
SECTION_STRUCTURE_DIMENSION = Dimension(
    "section_structure", "Section-level structure",
    "Internal coherence and logical flow of the sections and subsections, and smooth transitions between adjacent "
    "ones without repeated subsections.",
    scale=SECTION_STRUCTURE_SCALE, step=SECTION_STRUCTURE,
)


def quality_dimensions(task) -> list[Dimension]:
    """The task's own 10-point criteria, else the paper's defaults: the three 10-point dimensions
    (App. A.4–A.6) and the 1–5 section-level structure (§5.1.2, Table 3)."""
    rows = (RubricCriterion.objects.filter(task=task, scale_max=QUALITY_SCALE)
            .exclude(review_status=ReviewStatus.REJECTED).order_by("position", "id"))
    dimensions, seen = [], set()
    for criterion in rows:
        key = slug(criterion.name)
        if key in seen:
            key = f"{key}_{criterion.id}"
        seen.add(key)
        dimensions.append(Dimension(key, criterion.name, criterion.description, criterion.id))
    return dimensions or [*(Dimension(key, name, text) for key, name, text in DEFAULT_DIMENSIONS),
                          SECTION_STRUCTURE_DIMENSION]


def _quality_hash(text: str, dimension: Dimension) -> str:
    return fingerprint(QUALITY, content_hash(text), dimension.key, dimension.name, dimension.description)


def _reference_dicts(refs) -> list[dict]:
    return [{k: r.get(k, "") or "" for k in ("title", "url", "arxiv_id", "doi")} for r in refs]


class SurveyScopePipeline(SurveyPipeline):
    protocol = "surveyscope"
    steps = SCOPE_STEPS

    def run_step(self, *, run, report, step: str, judge: Judge) -> None:
        self._check_step(step)
        if step == QUALITY:
            self._run_quality(run=run, report=report, judge=judge)
        else:
            self._run_pairwise(run=run, report=report, judge=judge)

    def _run_quality(self, *, run, report, judge: Judge) -> None:
        dimensions = quality_dimensions(report.task)
        existing = stored_verdicts(run, report, [DIMENSION_KIND])
        calls: dict[int, list[ScoredCall]] = {}
        for repeat in range(run.judge_config.repeats):
            todo = [
                (d, Target(d.key, d.criterion_id, d.key, _quality_hash(report.text, d))) for d in dimensions
                if not reusable(existing.get((DIMENSION_KIND, d.criterion_id, d.key, repeat)),
                                _quality_hash(report.text, d), SCORED_LABELS)
            ]
            for step, scale in dict.fromkeys((d.step, d.scale) for d, _ in todo):  # one call per prompt
                asked = [(d, t) for d, t in todo if (d.step, d.scale) == (step, scale)]
                dims = [{"id": d.key, "name": d.name, "description": d.description} for d, _ in asked]
                variables = {"survey": report.text, "dimensions": dims}
                calls.setdefault(scale, []).append(
                    ScoredCall(JudgeCall(step=step, variables=variables, repeat=repeat), [t for _, t in asked]))
        for scale, scored in calls.items():
            ask_scored(judge, scored, run=run, report=report, kind=DIMENSION_KIND, high=scale)

    def score_system(self, *, report_scores) -> dict:
        score = super().score_system(report_scores=report_scores)
        pool_scisage_references(score["metrics"], report_scores)
        return score

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        rows = verdict_rows(run, report, [DIMENSION_KIND, PAIRWISE_KIND])
        metrics: dict = {}
        judged = failed = 0

        # references against the human survey's
        predicted = _reference_dicts(report_ssr(report).references)
        gold = [{k: g[k] for k in ("title", "url", "arxiv_id", "doi")} for g in gold_references(report.task)]
        if not gold:
            gold = _reference_dicts(survey_ssr(report.task.survey).references)
        # the paper's matching, or the released code's ({"variants": {"references": "scisage_upstream"}})
        reference_variant = variant_option(config, "references", ("paper", "scisage_upstream"))
        metrics["variants"] = {"references": reference_variant}
        if gold:
            prf = reference_prf(predicted, gold, variant=reference_variant)
            metrics.update(reference_tp=prf["tp"], reference_precision=prf["precision"],
                           reference_recall=prf["recall"], reference_f1=prf["f1"],
                           references=prf["n_predicted"], gold_references=prf["n_gold"])
        else:  # no human reference list: TP/F1 are undefined, not 0
            metrics.update(reference_tp=None, reference_precision=None, reference_recall=None, reference_f1=None,
                           references=len(predicted), gold_references=0)

        # quality dimensions, each rescaled from its scale (1–10, section structure 1–5) to 0–100
        dimensions = quality_dimensions(report.task)
        by_key = {(d.criterion_id, d.key): d for d in dimensions}
        scores = finished_scores(
            rows[DIMENSION_KIND], config.repeats,
            lambda target_id, key: (_quality_hash(report.text, by_key[(target_id, key)])
                                    if (target_id, key) in by_key else None),
        )
        values = []
        for d in dimensions:
            found = scores.get((d.criterion_id, d.key))
            if found:
                judged += 1
                value = rescale_to_100(sum(found) / len(found), d.scale)
                values.append(value)
            else:
                failed += 1
                value = None
            metrics[f"quality_{d.key}"] = value
        metrics["quality_mean"] = sum(values) / len(values) if values else None

        pairwise, n_judged, n_failed = self._score_pairwise(run=run, report=report, rows=rows[PAIRWISE_KIND])
        metrics.update(pairwise)
        return {"metrics": metrics, "items_judged": judged + n_judged, "items_failed": failed + n_failed}


def pool_scisage_references(metrics: dict, report_scores) -> None:
    """With ``scisage_upstream``, the system's reference precision, recall and F1 are the released
    scorer's: counts pooled over the reports (:func:`pooled_reference_prf`), not the mean of report
    values; ``reference_tp`` stays the mean TP per report. In place."""
    if (metrics.get("variants") or {}).get("references") != "scisage_upstream":
        return
    rows = [s["metrics"] for s in report_scores if s["metrics"].get("reference_tp") is not None]
    if not rows:
        return
    pooled = pooled_reference_prf([r["reference_tp"] for r in rows], [r["references"] for r in rows],
                                  [r["gold_references"] for r in rows])
    metrics.update(reference_precision=pooled["precision"], reference_recall=pooled["recall"],
                   reference_f1=pooled["f1"])


def rescale_to_100(score: float, scale_max: int) -> float:
    """SciSage §5.1: a score on a ``scale_max``-point rubric linearly rescaled to 0–100."""
    return 100.0 * score / scale_max
