"""``deepscholar.relevance``: each document of S graded 0/1/2 against the query.

target_kind ``cited_document``, target_key the document's identity; ``relevance_rate`` =
Σ grade / 2|S| (:func:`relevance_rate`).
"""

from __future__ import annotations

from collections.abc import Mapping

from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import relevance_rate

from ..base import fingerprint
from ..verdicts import Decision, Pending, ask_one_each, reusable, stored_verdicts
from .documents import ReportCitations, report_citations, store_unavailable
from .inputs import query_text

RELEVANCE = "deepscholar.relevance"
DOCUMENT_KIND = "cited_document"
GRADE_LABELS = {"0": 0.0, "1": 1.0, "2": 2.0}


def _decide_grade(data: Mapping) -> Decision:
    grade = data.get("grade")
    if isinstance(grade, bool) or grade not in (0, 1, 2):
        return Decision(error=f"malformed answer: grade must be 0, 1 or 2, got {grade!r}")
    return Decision(label=str(int(grade)), score=float(grade), rationale=str(data.get("rationale") or ""))


def ask_relevance(*, run, report, judge: Judge) -> None:
    citations = report_citations(report)
    query = query_text(report.task)
    existing = stored_verdicts(run, report, [DOCUMENT_KIND])
    pending, unavailable = [], []
    for key in citations.retrieved:
        doc = citations.documents[key]
        input_hash = fingerprint(query, doc.as_source())
        if reusable(existing.get((DOCUMENT_KIND, 0, key, 0)), input_hash, GRADE_LABELS):
            continue
        if not doc.text:
            unavailable.append((0, key, input_hash, {"document": doc.describe()}))
            continue
        pending.append(Pending(JudgeCall(step=RELEVANCE, variables={"query": query, "document": doc.as_source()}),
                               0, input_hash, key=key, extra={"document": doc.describe()}, evidence=doc.text))
    store_unavailable(run, report, step=RELEVANCE, kind=DOCUMENT_KIND, items=unavailable, labels=GRADE_LABELS)
    ask_one_each(judge, pending, run=run, report=report, kind=DOCUMENT_KIND, labels=GRADE_LABELS,
                 decide=_decide_grade)


def score_relevance(*, citations: ReportCitations, query: str, stored, variant: str) -> dict:
    """The relevance rate over S, from the documents graded."""
    grades = []
    for key in citations.retrieved:
        doc = citations.documents[key]
        grade = stored.label_of((DOCUMENT_KIND, 0, key, 0), fingerprint(query, doc.as_source()), GRADE_LABELS)
        if grade is not None:
            grades.append(int(grade))
    return {"relevance_rate": relevance_rate(grades, variant=variant) if grades else None,
            "documents": len(citations.retrieved), "documents_graded": len(grades)}
