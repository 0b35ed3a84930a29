"""The DeepScholar pipeline: runs each judge step's module and assembles the score card.

``geometric_mean`` is Table 2's aggregate: the geometric mean of a system's seven metric
*means*, never a mean of report-level geometric means; a 0 anywhere makes it 0. The systems of
a run are compared over one common set of metrics (:func:`geometric_means_over_common`): a
metric undefined for any of them is left out for all, and ``geometric_mean_over`` names the
metrics used. A report's own ``geometric_mean`` is given only when all seven are defined.

Failed items (judge errors, malformed answers, documents without text) are counted in
``items_failed`` and left out of every metric, never counted as zeros; a verdict counts only
while its fingerprint matches the current question (a changed report is judged again).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from scoring.judges.base import Judge
from scoring.metrics import TABLE2_METRICS, VARIANTS, geometric_mean, geometric_means_over_common
from scoring.models import Verdict

from ..base import BasePipeline, variant_option
from .citation_support import CITATIONS, PAIR_KIND, ask_citations, score_citation_support
from .document_importance import score_document_importance
from .documents import report_citations
from .inputs import query_text
from .nuggets import NUGGET_KIND, NUGGETS, ask_nuggets, score_nuggets
from .organization import ORGANIZATION, ORGANIZATION_KIND, ask_organization, score_organization
from .reference_coverage import (
    IMPORTANCE, IMPORTANCE_KIND, ask_importance, counted_references, score_reference_coverage,
)
from .relevance import DOCUMENT_KIND, RELEVANCE, ask_relevance, score_relevance

STEPS = [ORGANIZATION, NUGGETS, RELEVANCE, IMPORTANCE, CITATIONS]
KINDS = [ORGANIZATION_KIND, NUGGET_KIND, DOCUMENT_KIND, IMPORTANCE_KIND, PAIR_KIND]
METRIC_KEYS = TABLE2_METRICS
_ASK = {ORGANIZATION: ask_organization, NUGGETS: ask_nuggets, RELEVANCE: ask_relevance, IMPORTANCE: ask_importance,
        CITATIONS: ask_citations}


class StoredLabels:
    """A report's stored verdicts read as labels, counting the items judged and failed."""

    def __init__(self, *, run, report) -> None:
        config = run.judge_config
        rows = Verdict.objects.filter(
            report=report, judge_config=config, prompt_version=config.prompt_version, target_kind__in=KINDS,
        ).values("target_kind", "target_id", "target_key", "repeat", "label", "error", "raw_response")
        self.rows: dict[tuple, dict] = {(r["target_kind"], r["target_id"], r["target_key"], r["repeat"]): r
                                        for r in rows}
        self.judged = 0
        self.failed = 0

    def label_of(self, key: tuple, input_hash: str, labels) -> str | None:
        """The verdict's label when it answers the current question; a failed item otherwise."""
        row = self.rows.get(key)
        recorded = row["raw_response"].get("input_hash") if row and isinstance(row["raw_response"], dict) else None
        if row and not row["error"] and row["label"] in labels and recorded in (None, input_hash):
            self.judged += 1
            return row["label"]
        self.failed += 1
        return None


class DeepScholarPipeline(BasePipeline):
    protocol = "deepscholar"

    def steps_for(self, report) -> list[str]:
        return list(STEPS)

    def run_step(self, *, run, report, step: str, judge: Judge) -> None:
        if step not in _ASK:
            raise ValueError(f"the DeepScholar pipeline has no step {step!r} (it has {', '.join(STEPS)})")
        _ASK[step](run=run, report=report, judge=judge)

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        task = report.task
        stored = StoredLabels(run=run, report=report)
        metrics: dict = {}
        notes: list[str] = []

        def add(found: tuple[dict, list[str]]) -> None:
            metrics.update(found[0])
            notes.extend(found[1])

        variants = {name: variant_option(config, name, VARIANTS)
                    for name in ("relevance_rate", "citation_precision", "nugget_coverage")}
        metrics["variants"] = variants
        add(score_organization(run=run, report=report, stored=stored))
        add(score_nuggets(report=report, stored=stored, variant=variants["nugget_coverage"]))
        citations = report_citations(report)
        query = query_text(task)
        metrics.update(score_relevance(citations=citations, query=query, stored=stored,
                                       variant=variants["relevance_rate"]))
        references = counted_references(task)
        retrieved = [citations.documents[k] for k in citations.retrieved]
        add(score_reference_coverage(task=task, references=references, retrieved=retrieved, query=query,
                                     stored=stored))
        add(score_document_importance(retrieved=retrieved, references=references))
        metrics.update(score_citation_support(run=run, citations=citations, query=query, stored=stored,
                                              precision_variant=variants["citation_precision"]))
        complete = all(metrics[k] is not None for k in METRIC_KEYS)
        metrics["geometric_mean"] = geometric_mean([metrics[k] for k in METRIC_KEYS]) if complete else None
        metrics["geometric_mean_over"] = list(METRIC_KEYS) if complete else []
        metrics["notes"] = notes
        return {"metrics": metrics, "items_judged": stored.judged, "items_failed": stored.failed}

    def score_system(self, *, report_scores: Sequence[dict]) -> dict:
        """The base means, plus claim coverage per window averaged over the reports where defined,
        the notes once each, and the geometric mean of the system's metric means (Table 2)."""
        score = super().score_system(report_scores=report_scores)
        metrics = score["metrics"]
        windows: dict[str, list[float]] = defaultdict(list)
        for report_score in report_scores:
            for w, value in (report_score["metrics"].get("claim_coverage_by_window") or {}).items():
                windows[w].extend([value] if value is not None else [])  # a window no report defines stays None
        metrics["claim_coverage_by_window"] = {w: (float(np.mean(v)) if v else None)
                                               for w, v in sorted(windows.items(), key=lambda kv: int(kv[0]))}
        metrics["notes"] = sorted({note for s in report_scores for note in s["metrics"].get("notes", [])})
        self.compare_systems(system_scores={None: score})  # alone until the run compares its systems
        return score

    def compare_systems(self, *, system_scores: dict) -> None:
        """Table 2's geometric mean of each system's metric means, over the metrics every system has."""
        common = geometric_means_over_common({s: score["metrics"] for s, score in system_scores.items()}, METRIC_KEYS)
        for system, score in system_scores.items():
            score["metrics"]["geometric_mean"] = common["values"][system]
            score["metrics"]["geometric_mean_over"] = common["over"]
