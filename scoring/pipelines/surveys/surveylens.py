"""SurveyLens (§3.3): canonical alignment (RAMS/TAMS), the discipline-aware rubric, structure ratios.

The steps and metric keys are described in the package docstring (``scoring.pipelines.surveys``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from benchmark.models import ReviewStatus, RubricCriterion
from benchmark.parsing import parse_report
from scoring.embeddings import EmbeddingError, content_hash, embed_cached, embedder_for, stored_vectors
from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import SURVEYLENS_TAU_PRESETS, rams, rubric_score, structure_ratios, tams
from scoring.models import Verdict

from ..base import fingerprint
from ..report_sources import parsed_report
from ..verdicts import reusable, stored_verdicts, upsert_verdicts, verdict_fields
from .pairwise import PAIRWISE, PAIRWISE_KIND, SurveyPipeline
from .scored_calls import SCORED_LABELS, ScoredCall, Target, ask_scored, finished_scores, slug, verdict_rows
from .ssr import SurveySSR, report_ssr, survey_ssr

ALIGNMENT = "surveylens.alignment"
RUBRIC = "surveylens.rubric"
LENS_STEPS = [ALIGNMENT, RUBRIC, PAIRWISE]

COMPONENTS = ("outline", "content", "reference")
ALIGNMENT_KIND = "alignment"
CRITERION_KIND = "rubric_criterion"
EMBEDDED = "embedded"
RUBRIC_SCALE = 5

DEFAULT_TAU = SURVEYLENS_TAU_PRESETS["default"]
DEFAULT_LAMBDA = 1.0
DEFAULT_TAMS_MODE = "margin"


# --- configuration --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlignmentSettings:
    tau: dict
    lam: float
    tams_mode: str


def alignment_settings(config) -> AlignmentSettings:
    """τ per component, λ and the TAMS mode: ``JudgeConfig.options``, else settings, else the defaults."""
    options = getattr(config, "options", None) or {}
    fallback = getattr(settings, "SURVEYLENS_ALIGNMENT", None) or {}
    where = f"judge configuration {getattr(config, 'name', '')!r}"

    def pick(key, default):
        return options[key] if key in options else fallback.get(key, default)

    raw_tau = pick("surveylens_tau", {})
    if isinstance(raw_tau, str):  # a named preset, e.g. "upstream": the released configuration's 0.95
        if raw_tau not in SURVEYLENS_TAU_PRESETS:
            raise ValueError(f"{where}: surveylens_tau {raw_tau!r} is no preset; presets: "
                             f"{', '.join(SURVEYLENS_TAU_PRESETS)}, or an object of τ per component")
        raw_tau = SURVEYLENS_TAU_PRESETS[raw_tau]
    if not isinstance(raw_tau, Mapping):
        raise ValueError(f"{where}: surveylens_tau must be a preset name ({', '.join(SURVEYLENS_TAU_PRESETS)}) "
                         f"or an object of τ per component ({', '.join(COMPONENTS)}); got {raw_tau!r}")
    unknown = sorted(set(raw_tau) - set(COMPONENTS))
    if unknown:
        raise ValueError(f"{where}: surveylens_tau has unknown component(s) {unknown}; known: {list(COMPONENTS)}")
    tau = {}
    for component in COMPONENTS:
        value = raw_tau.get(component, DEFAULT_TAU[component])
        if not isinstance(value, Real) or isinstance(value, bool) or not -1.0 <= float(value) <= 1.0:
            raise ValueError(f"{where}: surveylens_tau.{component} must be a number between -1 and 1 (a cosine "
                             f"similarity); got {value!r}")
        tau[component] = float(value)
    lam = pick("surveylens_lambda", DEFAULT_LAMBDA)
    if not isinstance(lam, Real) or isinstance(lam, bool) or not 0.0 <= float(lam) < float("inf"):
        raise ValueError(f"{where}: surveylens_lambda must be a number ≥ 0; got {lam!r}")
    mode = pick("surveylens_tams_mode", DEFAULT_TAMS_MODE)
    if mode not in ("margin", "gated"):
        raise ValueError(f"{where}: surveylens_tams_mode must be 'margin' or 'gated'; got {mode!r}")
    return AlignmentSettings(tau=tau, lam=float(lam), tams_mode=mode)


# --- rubric criteria ------------------------------------------------------------------------------------------


def rubric_criteria(task) -> dict[str, list[RubricCriterion]]:
    """Per component, the 5-point criteria of the task's discipline and of the task, not rejected."""
    scope = Q(task=task)
    if task.survey.discipline_id:
        scope |= Q(discipline_id=task.survey.discipline_id, task__isnull=True)
    rows = (RubricCriterion.objects.filter(scope, scale_max=RUBRIC_SCALE)
            .exclude(review_status=ReviewStatus.REJECTED).order_by("component", "position", "id"))
    out: dict[str, list[RubricCriterion]] = {c: [] for c in COMPONENTS}
    for criterion in rows:
        if criterion.component in out:
            out[criterion.component].append(criterion)
    return out


def _rubric_hash(component: str, text_hash: str, criterion: RubricCriterion) -> str:
    return fingerprint(RUBRIC, component, text_hash, criterion.aspect, criterion.name, criterion.description)


def _alignment_hash(embedder: str, generated: list[str], gold: list[str]) -> str:
    return fingerprint(ALIGNMENT, embedder, [content_hash(t) for t in generated], [content_hash(t) for t in gold])


def similarity_matrices(generated: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarities generated × gold and generated × generated (rows are unit vectors)."""
    gen = np.asarray(generated, dtype=np.float64)
    ref = np.asarray(gold, dtype=np.float64)
    return gen @ ref.T, gen @ gen.T


class SurveyLensPipeline(SurveyPipeline):
    protocol = "surveylens"
    steps = LENS_STEPS

    def run_step(self, *, run, report, step: str, judge: Judge) -> None:
        self._check_step(step)
        if step == ALIGNMENT:
            self._run_alignment(run=run, report=report)
        elif step == RUBRIC:
            self._run_rubric(run=run, report=report, judge=judge)
        else:
            self._run_pairwise(run=run, report=report, judge=judge)

    # --- canonical alignment: embeddings only ---

    def _run_alignment(self, *, run, report) -> None:
        config = run.judge_config
        alignment_settings(config)  # a bad τ fails the job before anything is embedded
        embedder = embedder_for(config.embedding_backend or "", config=config)
        generated, human = report_ssr(report), survey_ssr(report.task.survey)
        existing = stored_verdicts(run, report, [ALIGNMENT_KIND])
        rows = []
        for component in COMPONENTS:
            gen, gold = generated.entries(component), human.entries(component)
            input_hash = _alignment_hash(embedder.name, gen, gold)
            if reusable(existing.get((ALIGNMENT_KIND, 0, component, 0)), input_hash, {EMBEDDED}):
                continue
            raw = {"input_hash": input_hash, "embedder": embedder.name, "generated": len(gen), "gold": len(gold)}
            error = ""
            try:
                embed_cached(embedder, gen + gold)
            except EmbeddingError as exc:
                error = f"embedding failed: {exc}"
            rows.append(Verdict(
                **verdict_fields(run, report, step=ALIGNMENT, kind=ALIGNMENT_KIND, key=component),
                label="" if error else EMBEDDED, score=None if error else float(len(gen)), error=error,
                raw_response=raw,
            ))
        if rows:
            with transaction.atomic():
                upsert_verdicts(rows, run=run, report=report, labels={EMBEDDED})

    # --- discipline-aware rubric ---

    def _run_rubric(self, *, run, report, judge: Judge) -> None:
        criteria = rubric_criteria(report.task)
        generated = report_ssr(report)
        existing = stored_verdicts(run, report, [CRITERION_KIND])
        calls = []
        for repeat in range(run.judge_config.repeats):
            for component in COMPONENTS:
                text = generated.component_text(component)
                text_hash = content_hash(text)
                todo = [
                    Target(c.id, c.id, "", _rubric_hash(component, text_hash, c)) for c in criteria[component]
                    if not reusable(existing.get((CRITERION_KIND, c.id, "", repeat)),
                                    _rubric_hash(component, text_hash, c), SCORED_LABELS)
                ]
                if not todo:
                    continue
                by_id = {c.id: c for c in criteria[component]}
                variables = {"component": component, "survey": text, "criteria": [
                    {"id": t.answer_id, "name": by_id[t.answer_id].name, "description": by_id[t.answer_id].description,
                     "aspect": by_id[t.answer_id].aspect} for t in todo]}
                calls.append(ScoredCall(JudgeCall(step=RUBRIC, variables=variables, repeat=repeat), todo))
        ask_scored(judge, calls, run=run, report=report, kind=CRITERION_KIND, high=RUBRIC_SCALE)

    # --- scoring ---

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        chosen = alignment_settings(config)
        generated, human = report_ssr(report), survey_ssr(report.task.survey)
        rows = verdict_rows(run, report, [ALIGNMENT_KIND, CRITERION_KIND, PAIRWISE_KIND])
        metrics: dict = {}
        judged = failed = 0

        # rubric per component
        criteria = rubric_criteria(report.task)
        text_hashes = {c: content_hash(generated.component_text(c)) for c in COMPONENTS}
        component_of = {c.id: (comp, c) for comp in COMPONENTS for c in criteria[comp]}
        scores = finished_scores(
            rows[CRITERION_KIND], config.repeats,
            lambda target_id, key: (_rubric_hash(component_of[target_id][0], text_hashes[component_of[target_id][0]],
                                                 component_of[target_id][1]) if target_id in component_of else None),
        )
        rubric_values = []
        for component in COMPONENTS:
            value, aspects, n_judged = component_rubric(criteria[component], scores)
            judged += n_judged
            failed += len(criteria[component]) - n_judged
            metrics[f"rubric_{component}"] = value
            metrics[f"rubric_criteria_{component}"] = len(criteria[component])
            for aspect, mean in aspects.items():
                metrics[f"aspect_{component}_{slug(aspect)}"] = mean
            if value is not None:
                rubric_values.append(value)
        metrics["rubric_mean"] = sum(rubric_values) / len(rubric_values) if rubric_values else None

        # canonical alignment from the stored vectors
        markers = {r["target_key"]: r for r in rows[ALIGNMENT_KIND]}
        for component in COMPONENTS:
            gen, gold = generated.entries(component), human.entries(component)
            metrics[f"entries_{component}"], metrics[f"gold_entries_{component}"] = len(gen), len(gold)
            metrics[f"tau_{component}"] = chosen.tau[component]
            result = self._alignment(markers.get(component), gen, gold, chosen, component)
            if result is None:
                failed += 1
                result = {"rams": None, "precision": None, "recall": None, "tams": None}
            else:
                judged += 1
            metrics[f"rams_{component}"] = result["rams"]
            metrics[f"rams_precision_{component}"] = result["precision"]
            metrics[f"rams_recall_{component}"] = result["recall"]
            metrics[f"tams_{component}"] = result["tams"]

        # structure relative to the human survey (Table 6)
        metrics.update(structure_metrics(report, human))

        pairwise, n_judged, n_failed = self._score_pairwise(run=run, report=report, rows=rows[PAIRWISE_KIND])
        metrics.update(pairwise)
        judged += n_judged
        failed += n_failed
        return {"metrics": metrics, "items_judged": judged, "items_failed": failed}

    @staticmethod
    def _alignment(marker: dict | None, gen: list[str], gold: list[str], chosen: AlignmentSettings,
                   component: str) -> dict | None:
        """RAMS/TAMS of one component, or ``None`` when its embeddings are not (all) stored for these entries."""
        if marker is None or marker["error"] or marker["label"] != EMBEDDED:
            return None
        raw = marker["raw_response"] or {}
        if not raw.get("embedder") or raw.get("input_hash") != _alignment_hash(raw["embedder"], gen, gold):
            return None  # embedded for an older text: not scored until re-run
        if not gold:
            return {"rams": None, "precision": None, "recall": None, "tams": None}
        hashes = [content_hash(t) for t in gen + gold]
        vectors = stored_vectors(raw["embedder"], hashes)
        if len(vectors) < len(set(hashes)):
            return None
        if not gen:
            return {"rams": 0.0, "precision": 0.0, "recall": 0.0, "tams": 0.0}
        gen_gold, gen_gen = similarity_matrices(np.stack([vectors[h] for h in hashes[:len(gen)]]),
                                                np.stack([vectors[h] for h in hashes[len(gen):]]))
        tau = chosen.tau[component]
        out = rams(gen_gold, gen_gen, tau, chosen.lam)
        out["tams"] = tams(gen_gold, tau, chosen.tams_mode)
        return out


def component_rubric(criteria: Sequence[RubricCriterion], scores: Mapping[tuple[int, str], list[float]]):
    """(S, per-aspect mean scores, criteria judged) of one component; see the module docstring."""
    per_aspect: dict[str, list[float]] = defaultdict(list)
    weights: dict[str, list[float]] = defaultdict(list)
    n_judged = 0
    for criterion in criteria:
        weights[criterion.aspect].append(float(criterion.weight))
        values = scores.get((criterion.id, ""))
        if values:
            n_judged += 1
            per_aspect[criterion.aspect].append(sum(values) / len(values))
    aspects = {aspect: sum(v) / len(v) for aspect, v in per_aspect.items()}
    if not aspects:
        return None, aspects, n_judged
    names = list(aspects)
    w = np.array([sum(weights[a]) / len(weights[a]) for a in names])
    if w.sum() <= 0:
        return None, aspects, n_judged
    return float(rubric_score(w / w.sum(), [aspects[a] for a in names], x_max=RUBRIC_SCALE)), aspects, n_judged


def _ratio_stats(stats) -> dict[str, float]:
    """Table 6 statistics from a parse's ``ReportStats`` (sentences by the SurveyLens formula)."""
    return {
        "images": stats.images, "tables": stats.tables, "equations": stats.equations,
        "paragraphs": stats.paragraphs, "words": stats.words, "sentences": stats.surveylens_sentences,
        "citations": stats.citations, "references": stats.references, "characters": stats.chars,
    }


def structure_metrics(report, human: SurveySSR) -> dict:
    if not human.text.strip():
        return {}
    generated = _ratio_stats(parsed_report(report).stats)
    gold = _ratio_stats(parse_report(human.text, format="markdown").stats)
    return {f"structure_{k}": v for k, v in structure_ratios(generated, gold).items()}
