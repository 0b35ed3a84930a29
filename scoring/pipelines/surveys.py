"""SurveyLens (§3.3) and SciSage/SurveyScope (§5.1): survey-level evaluation against the human survey.

Both protocols compare a generated report with its task's human-written ``Survey``. Each side
is read as a Structured Survey Representation (SSR, SurveyLens §3.2): the report's from its
stored parse (outline, sections that are not a reference list, reference entries); the human
survey's from its stored SSR (``Survey.outline``/``content``/``references``; a survey without
one is parsed from ``full_text``; without SSR references, its ``SurveyCitation`` bibliography).

SurveyLens job steps
--------------------
``surveylens.alignment`` (no LLM call)
    Canonical alignment entries per component (Table 3): outline titles (leading section
    numbers stripped: "2.1 Methods" and "METHODS" are the same entry), "heading\\ncontent" for
    every section with text, reference titles (else their text). Entries of both sides are
    embedded with the configuration's ``embedding_backend`` through ``embed_cached``, so a
    re-run or re-score never embeds a text twice. One verdict per component (target_kind
    ``alignment``, key the component, label ``embedded``) records the embedder and the
    fingerprint of the entries; an embedding endpoint that failed is an errored verdict.
``surveylens.rubric``
    ``surveylens.rubric`` once per component (and repeat) over the criteria of the task's
    discipline and of the task itself that are not rejected and score on 5 points; one
    verdict per criterion (target_kind ``rubric_criterion``, label ``scored``, score 1–5).
``survey.pairwise``
    ``survey.pairwise`` against the human survey, asked twice per repeat with the positions
    swapped (target_kind ``human_pairwise``, key ``report_first`` / ``human_first``); the
    verdict's label is the outcome for the report: win, tie or loss.

SurveyScope job steps: ``scisage.quality`` (one call per repeat over the 10-point quality
dimensions, and one ``scisage.section_structure`` call per repeat for the 1–5 section-level
structure; target_kind ``quality_dimension``) and the same ``survey.pairwise`` (its verdicts
are shared with SurveyLens: the same question about the same texts is asked once). Reference
TP/F1 need no judge: they are computed when scoring.

Scores (``score_report``, from stored rows only; a failed item is counted, never scored 0)
------------------------------------------------------------------------------------------
SurveyLens metric keys:

* ``rubric_outline``, ``rubric_content``, ``rubric_reference`` — S = 5 · Σ w̃_k · x_k / 5
  (:func:`rubric_score`, eq. 3 and App. C) over the component's aspects k: x_k is the mean
  score (1–5) of the aspect's judged criteria (each the mean of its finished repeats — the
  paper averages three trials), w_k the mean ``RubricCriterion.weight`` of its criteria (the
  aspect's Bradley–Terry weight, carried by each criterion of the aspect), normalised over the
  aspects with a judged criterion. ``None`` when the component has no criterion, none was
  judged, or every weight is 0; ``rubric_mean`` is the mean of the defined components;
  ``rubric_criteria_<component>`` counts the criteria; ``aspect_<component>_<aspect>`` is
  each aspect's mean score x_k (1–5, Fig. 5).
* ``rams_<component>`` with ``rams_precision_<component>`` / ``rams_recall_<component>``
  (:func:`rams`, eq. 5, Algorithm 1) and ``tams_<component>`` (:func:`tams`, eq. 6) on cosine
  similarities of the stored vectors; ``entries_<component>`` / ``gold_entries_<component>``
  count the entries and ``tau_<component>`` records the threshold used. A report without
  entries scores 0 (the protocol's value); a human survey without entries for a component
  leaves it ``None`` (nothing to align with: the released luciferase survey has no reference
  list) without counting a failure.
* ``structure_<statistic>`` — generated / human ratio per Table 6 statistic
  (:func:`structure_ratios`); both sides' statistics come from the same parser
  (``benchmark.parsing``; sentences by the SurveyLens formula), ``None`` where the human
  value is 0.
* ``win_rate_vs_human`` — :func:`win_rate` over every judged comparison (ties count half);
  ``pairwise_judged``; ``pairwise_position_consistency``, the share of repeats whose two
  orders agree.

SurveyScope metric keys: ``reference_tp``, ``reference_precision``, ``reference_recall``,
``reference_f1`` (:func:`reference_prf`: deduplicated sets, identifiers then titles) against
the task's gold references that are not rejected, else the human survey's own reference list
(``None`` when there is none), with ``references`` / ``gold_references`` counts;
``quality_<dimension>`` — the mean of the finished repeats on its scale rescaled linearly to
0–100 as the paper does, 100 · score / scale (× 10 for 1–10: 7.758 is reported as 77.58; × 20
for the 1–5 section structure, so 4.25 is 85 and 5 is 100 as in Table 4) — and ``quality_mean``,
the mean of the defined dimensions (the paper reports no mean); ``win_rate_vs_human`` and the
pairwise counts as above. The dimensions are the task's own criteria with ``scale_max`` 10 when
it has any, else the paper's four: on 1–10 (App. A.4–A.6) ``language`` (formality, clarity, no
redundancy), ``critical`` (critical analysis, original insights, future directions) and
``structure`` (document-level structure: coherent structure, thematic coverage, scholarly
synthesis; Table 4's "Document"), and on 1–5 ``section_structure`` (§5.1.2 section-level
structure, Table 3's rubric; Table 4's "Section").

Configuration (``JudgeConfig.options``, else ``settings.SURVEYLENS_ALIGNMENT``, else the
defaults): ``surveylens_tau`` — τ per component, default outline 0.7, content 0.7, reference
0.8; ``surveylens_lambda`` — the redundancy penalty λ, default 1.0; ``surveylens_tams_mode`` —
``margin`` (eq. 6, default) or ``gated`` (the released code). The paper states no τ values;
the defaults are the per-component thresholds of the authors' released multi-component
embedding configuration (their single-component script uses 0.95 with Qwen3-Embedding-8B,
far too strict for the offline MiniLM). τ and λ only enter scoring: changing them and
re-scoring needs no embedding.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from benchmark.models import ReviewStatus, RubricCriterion, SurveyCitation, TaskPrompt
from benchmark.parsing import parse_report
from scoring.embeddings import EmbeddingError, content_hash, embed_cached, embedder_for, stored_vectors
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.metrics import rams, reference_prf, rubric_score, structure_ratios, tams, win_rate
from scoring.models import Verdict

from .base import BasePipeline, fingerprint, record_answer, variant_option
from .reportbench import gold_references, parsed_report
from .verdicts import (
    RAW_TEXT_LIMIT,
    Decision,
    Pending,
    answer_error,
    answered_in_chunks,
    ask_one_each,
    cost_share,
    reusable,
    stored_verdicts,
    upsert_verdicts,
    verdict_fields,
)

ALIGNMENT = "surveylens.alignment"
RUBRIC = "surveylens.rubric"
PAIRWISE = "survey.pairwise"
QUALITY = "scisage.quality"
SECTION_STRUCTURE = "scisage.section_structure"  # a judge call made within the QUALITY job step
LENS_STEPS = [ALIGNMENT, RUBRIC, PAIRWISE]
SCOPE_STEPS = [QUALITY, PAIRWISE]

COMPONENTS = ("outline", "content", "reference")
ALIGNMENT_KIND = "alignment"
CRITERION_KIND = "rubric_criterion"
DIMENSION_KIND = "quality_dimension"
PAIRWISE_KIND = "human_pairwise"
EMBEDDED = "embedded"
SCORED = "scored"
SCORED_LABELS = {SCORED: None}
OUTCOMES = {"win": 1.0, "tie": 0.5, "loss": 0.0}
ORDERS = ("report_first", "human_first")  # report as survey A, then as survey B
RUBRIC_SCALE = 5
QUALITY_SCALE = 10
SECTION_STRUCTURE_SCALE = 5
HUMAN_NOT_AVAILABLE = "the human survey has no text to compare with"

DEFAULT_TAU = {"outline": 0.7, "content": 0.7, "reference": 0.8}
DEFAULT_LAMBDA = 1.0
DEFAULT_TAMS_MODE = "margin"

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

_SECTION_NUMBER = re.compile(r"^\s*(?:(?:chapter|section)\s+)?(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z])[.):]?\s+(?=\S)",
                             re.IGNORECASE)
_REFERENCE_MARKER = re.compile(r"^\s*(?:\[[^\]]{1,12}\]|\d{1,4}[.)])\s*")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


# --- Structured Survey Representation ------------------------------------------------------------------------


@dataclass(frozen=True)
class SurveySSR:
    """One side of the comparison: outline [(level, title)], sections [(heading, text)], references, full text."""

    outline: tuple[tuple[int, str], ...]
    sections: tuple[tuple[str, str], ...]
    references: tuple[dict, ...]  # title, text, url, arxiv_id, doi
    text: str

    def entries(self, component: str) -> list[str]:
        """Canonical alignment entries of one component (SurveyLens Table 3)."""
        if component == "outline":
            return [t for t in (_SECTION_NUMBER.sub("", title).strip() for _, title in self.outline) if t]
        if component == "content":
            return [f"{heading}\n{body}".strip() for heading, body in self.sections if body.strip()]
        return [t for t in ((r["title"] or r["text"]).strip() for r in self.references) if t]

    def component_text(self, component: str) -> str:
        """What the rubric judge reads for one component."""
        if component == "outline":
            return "\n".join(f"{'#' * max(1, min(level, 6))} {title}" for level, title in self.outline)
        if component == "content":
            return "\n\n".join(f"## {heading}\n\n{body}".strip() if heading else body
                               for heading, body in self.sections if body.strip() or heading)
        if not self.references:
            return "(the survey has no reference list)"
        return "\n".join(f"[{i}] {r['text'] or r['title']}" for i, r in enumerate(self.references, 1))


def _reference(title="", text="", url="", arxiv_id="", doi="") -> dict:
    return {"title": title or "", "text": text or "", "url": url or "", "arxiv_id": arxiv_id or "", "doi": doi or ""}


def _from_parse(parsed, text: str) -> SurveySSR:
    return SurveySSR(
        outline=tuple((e.level, e.title) for e in parsed.outline),
        sections=tuple((s.heading, s.text) for s in parsed.sections if not s.is_references and s.text.strip()),
        references=tuple(
            _reference(r.title, _REFERENCE_MARKER.sub("", r.raw).strip(), r.url, r.arxiv_id, r.doi)
            for r in parsed.references
        ),
        text=text,
    )


def report_ssr(report) -> SurveySSR:
    return _from_parse(parsed_report(report), report.text)


def survey_ssr(survey) -> SurveySSR:
    """The human survey's SSR as stored; a survey stored without one is parsed from its full text."""
    if not (survey.outline or survey.content):
        return _from_parse(parse_report(survey.full_text or "", format="markdown"), survey.full_text or "")
    outline = tuple((int(level), str(title)) for level, title in survey.outline)
    sections = tuple(
        (str(c.get("heading") or ""), str(c.get("text") or c.get("content") or ""))
        for c in survey.content if isinstance(c, dict)
    )
    refs = tuple(
        _reference(str(r.get("title") or ""), str(r.get("text") or ""))
        for r in survey.references if isinstance(r, dict) and (r.get("title") or r.get("text"))
    )
    if not refs:
        refs = tuple(
            _reference(c.bib_entry.title, c.bib_entry.title, c.bib_entry.url, c.bib_entry.arxiv_id, c.bib_entry.doi)
            for c in SurveyCitation.objects.filter(survey=survey).select_related("bib_entry").order_by("position")
        )
    text = survey.full_text or "\n\n".join(
        [f"{'#' * max(1, min(level, 6))} {title}" for level, title in outline[:1]]
        + [f"## {h}\n\n{b}".strip() for h, b in sections]
    )
    return SurveySSR(outline=outline, sections=sections, references=refs, text=text)


def pairwise_variables(report, order: str, *, topic: str, human: SurveySSR) -> dict:
    """The pairwise question in one order: the report as survey A (``report_first``) or as B."""
    a, b = (report.text, human.text) if order == "report_first" else (human.text, report.text)
    return {"topic": topic, "survey_a": a, "survey_b": b}


def survey_topic(task) -> str:
    prompt = TaskPrompt.objects.filter(task=task, level=TaskPrompt.Level.GENERAL).exclude(
        review_status=ReviewStatus.REJECTED).values_list("text", flat=True).first()
    return (prompt or task.title or task.survey.title or task.key).strip()


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
    if not isinstance(raw_tau, Mapping):
        raise ValueError(f"{where}: surveylens_tau must be an object of τ per component "
                         f"({', '.join(COMPONENTS)}); got {raw_tau!r}")
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


# --- criteria and dimensions ----------------------------------------------------------------------------------


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
        key = _slug(criterion.name)
        if key in seen:
            key = f"{key}_{criterion.id}"
        seen.add(key)
        dimensions.append(Dimension(key, criterion.name, criterion.description, criterion.id))
    return dimensions or [*(Dimension(key, name, text) for key, name, text in DEFAULT_DIMENSIONS),
                          SECTION_STRUCTURE_DIMENSION]


# --- asking calls that score several targets at once ------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    answer_id: int | str  # the id the judge answers under
    target_id: int
    key: str
    input_hash: str


@dataclass
class ScoredCall:
    call: JudgeCall
    targets: list[Target] = field(default_factory=list)


def parse_scores(answer: JudgeAnswer, ids: Sequence, high: int) -> dict:
    """Per requested id: ``(score, rationale, entry)`` or an error string. Each id must be answered
    exactly once (same JSON type) with an integer 1..high; ids nobody asked about are ignored."""
    if not answer.ok:
        return {i: answer_error(answer) for i in ids}
    entries = answer.data.get("scores") if isinstance(answer.data, dict) else None
    if not isinstance(entries, list):
        return {i: "malformed answer: no 'scores' list" for i in ids}
    found: dict[tuple, list[dict]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry, dict) and not isinstance(entry.get("id"), bool):
            found[(type(entry.get("id")), entry.get("id"))].append(entry)
    out = {}
    for i in ids:
        hits = found.get((type(i), i), [])
        if len(hits) != 1:
            out[i] = ("malformed answer: missing from the judge's answer" if not hits
                      else f"malformed answer: answered {len(hits)} times")
            continue
        value = hits[0].get("score")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            out[i] = f"malformed answer: score {value!r} is not an integer from 1 to {high}"
            continue
        out[i] = (float(value), str(hits[0].get("rationale") or ""), hits[0])
    return out


def ask_scored(judge: Judge, calls: Sequence[ScoredCall], *, run, report, kind: str, high: int) -> None:
    """Ask calls that each score several targets with ``answered_in_chunks``; each chunk's verdicts
    (one per target, the call's cost shared between them) are committed before the next."""
    for chunk, answers in answered_in_chunks(judge, calls, lambda c: c.call, run=run):
        with transaction.atomic():
            rows = []
            for scored, answer in zip(chunk, answers, strict=True):
                outcomes = parse_scores(answer, [t.answer_id for t in scored.targets], high)
                call = record_answer(answer, run=run, step=scored.call.step)
                for target, share in zip(scored.targets, cost_share(answer, len(scored.targets)), strict=True):
                    outcome = outcomes[target.answer_id]
                    failed = isinstance(outcome, str)
                    raw = {"input_hash": target.input_hash}
                    if failed:
                        raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
                    else:
                        raw["answer"] = outcome[2]
                    rows.append(Verdict(
                        **verdict_fields(run, report, step=scored.call.step, kind=kind, target_id=target.target_id,
                                         key=target.key, repeat=scored.call.repeat),
                        label="" if failed else SCORED, score=None if failed else outcome[0],
                        rationale="" if failed else outcome[1], error=outcome if failed else "",
                        raw_response=raw, call=call, **share,
                    ))
            upsert_verdicts(rows, run=run, report=report, labels=SCORED_LABELS)


# --- shared pieces of both pipelines --------------------------------------------------------------------------


def _pairwise_hash(topic: str, report_text: str, human_text: str, order: str) -> str:
    return fingerprint("survey.pairwise", topic, content_hash(report_text), content_hash(human_text), order)


def _outcome_decider(order: str):
    def decide(data: Mapping) -> Decision:
        winner = data.get("winner")
        if winner not in ("A", "B", "tie"):
            return Decision(error=f"malformed answer: winner {winner!r} is not A, B or tie")
        report_side = "A" if order == "report_first" else "B"
        label = "tie" if winner == "tie" else ("win" if winner == report_side else "loss")
        return Decision(label=label, score=OUTCOMES[label], rationale=str(data.get("rationale") or ""))
    return decide


class _SurveyPipeline(BasePipeline):
    steps: list[str] = []

    def steps_for(self, report) -> list[str]:
        return list(self.steps)

    def _check_step(self, step: str) -> None:
        if step not in self.steps:
            raise ValueError(f"the {self.protocol} pipeline has no step {step!r} (it has {', '.join(self.steps)})")

    # pairwise against the human survey, both orders

    def _run_pairwise(self, *, run, report, judge: Judge) -> None:
        human = survey_ssr(report.task.survey)
        topic = survey_topic(report.task)
        existing = stored_verdicts(run, report, [PAIRWISE_KIND])
        unavailable = []
        for order in ORDERS:
            pending = []
            for repeat in range(run.judge_config.repeats):
                input_hash = _pairwise_hash(topic, report.text, human.text, order)
                if reusable(existing.get((PAIRWISE_KIND, 0, order, repeat)), input_hash, OUTCOMES):
                    continue
                if not human.text.strip():
                    unavailable.append(Verdict(
                        **verdict_fields(run, report, step=PAIRWISE, kind=PAIRWISE_KIND, key=order, repeat=repeat),
                        error=HUMAN_NOT_AVAILABLE, raw_response={"input_hash": input_hash, "order": order},
                    ))
                    continue
                call = JudgeCall(step=PAIRWISE, variables=pairwise_variables(report, order, topic=topic, human=human),
                                 repeat=repeat)
                pending.append(Pending(call, 0, input_hash, key=order, extra={"order": order}))
            ask_one_each(judge, pending, run=run, report=report, kind=PAIRWISE_KIND, labels=OUTCOMES,
                         decide=_outcome_decider(order))
        if unavailable:
            with transaction.atomic():
                upsert_verdicts(unavailable, run=run, report=report, labels=OUTCOMES)

    def _score_pairwise(self, *, run, report, rows: list[dict]) -> tuple[dict, int, int]:
        repeats = run.judge_config.repeats
        human = survey_ssr(report.task.survey)
        topic = survey_topic(report.task)
        outcomes: dict[tuple[str, int], str] = {}
        for row in rows:
            if row["repeat"] >= repeats or row["error"] or row["label"] not in OUTCOMES:
                continue
            recorded = (row["raw_response"] or {}).get("input_hash")
            if recorded is None or recorded == _pairwise_hash(topic, report.text, human.text, row["target_key"]):
                outcomes[(row["target_key"], row["repeat"])] = row["label"]
        asked = len(ORDERS) * repeats
        both = [r for r in range(repeats) if all((o, r) in outcomes for o in ORDERS)]
        metrics = {
            "win_rate_vs_human": win_rate(list(outcomes.values())) if outcomes else None,
            "pairwise_judged": len(outcomes),
            "pairwise_position_consistency": (
                sum(outcomes[("report_first", r)] == outcomes[("human_first", r)] for r in both) / len(both)
                if both else None),
        }
        return metrics, len(outcomes), asked - len(outcomes)

    @staticmethod
    def _rows(run, report, kinds: Sequence[str]) -> dict[str, list[dict]]:
        config = run.judge_config
        by_kind: dict[str, list[dict]] = defaultdict(list)
        for row in Verdict.objects.filter(
            report=report, judge_config=config, prompt_version=config.prompt_version, target_kind__in=list(kinds),
        ).values("target_kind", "target_id", "target_key", "repeat", "label", "score", "error", "raw_response"):
            by_kind[row["target_kind"]].append(row)
        return by_kind

    @staticmethod
    def _finished_scores(rows: list[dict], repeats: int, current_hash) -> dict[tuple[int, str], list[float]]:
        """Scores of the finished repeats per (target_id, key), when the fingerprint matches ``current_hash``."""
        out: dict[tuple[int, str], list[float]] = defaultdict(list)
        for row in rows:
            if row["repeat"] >= repeats or row["error"] or row["label"] != SCORED or row["score"] is None:
                continue
            recorded = (row["raw_response"] or {}).get("input_hash")
            if recorded is not None and recorded != current_hash(row["target_id"], row["target_key"]):
                continue  # asked about an older text or criterion: not scored until re-run
            out[(row["target_id"], row["target_key"])].append(float(row["score"]))
        return out


# --- SurveyLens -----------------------------------------------------------------------------------------------


def _rubric_hash(component: str, text_hash: str, criterion: RubricCriterion) -> str:
    return fingerprint(RUBRIC, component, text_hash, criterion.aspect, criterion.name, criterion.description)


def _alignment_hash(embedder: str, generated: list[str], gold: list[str]) -> str:
    return fingerprint(ALIGNMENT, embedder, [content_hash(t) for t in generated], [content_hash(t) for t in gold])


def similarity_matrices(generated: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarities generated × gold and generated × generated (rows are unit vectors)."""
    gen = np.asarray(generated, dtype=np.float64)
    ref = np.asarray(gold, dtype=np.float64)
    return gen @ ref.T, gen @ gen.T


class SurveyLensPipeline(_SurveyPipeline):
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
        rows = self._rows(run, report, [ALIGNMENT_KIND, CRITERION_KIND, PAIRWISE_KIND])
        metrics: dict = {}
        judged = failed = 0

        # rubric per component
        criteria = rubric_criteria(report.task)
        text_hashes = {c: content_hash(generated.component_text(c)) for c in COMPONENTS}
        component_of = {c.id: (comp, c) for comp in COMPONENTS for c in criteria[comp]}
        scores = self._finished_scores(
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
                metrics[f"aspect_{component}_{_slug(aspect)}"] = mean
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


# --- SciSage / SurveyScope ------------------------------------------------------------------------------------


def _quality_hash(text: str, dimension: Dimension) -> str:
    return fingerprint(QUALITY, content_hash(text), dimension.key, dimension.name, dimension.description)


def _reference_dicts(refs) -> list[dict]:
    return [{k: r.get(k, "") or "" for k in ("title", "url", "arxiv_id", "doi")} for r in refs]


class SurveyScopePipeline(_SurveyPipeline):
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

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        rows = self._rows(run, report, [DIMENSION_KIND, PAIRWISE_KIND])
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
        scores = self._finished_scores(
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


def rescale_to_100(score: float, scale_max: int) -> float:
    """SciSage §5.1: a score on a ``scale_max``-point rubric linearly rescaled to 0–100."""
    return 100.0 * score / scale_max
