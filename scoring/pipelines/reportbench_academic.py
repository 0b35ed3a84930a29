"""``reportbench.academic_reference``: the released ReportBench scorer's filter on predicted references.

ReportBench's released ``related_work_evaluator.py`` asks its LLM of every cited web page whether it is an
academic paper (``analyze_papers``: ``is_academic_paper``) and scores only those it marks academic
(``evaluate_predictions``). The ``reportbench_upstream`` reference variant reproduces this: within the
``reportbench.references`` job step, each predicted reference is asked once (target_kind
``academic_reference``, target_key its index, label academic / not_academic) with its title, URL and
the text stored for it (never fetched), and the references marked not academic are left out of the
predicted set before :func:`reference_prf`. The offline judge answers from the URL's host (see
``scoring.judges.offline_extraction``).

Where it differs from the released code: the titles are the report's parsed (or extracted) reference
titles, where the released code takes the title the LLM read off the fetched page; and a reference
whose question failed (a judge error) is kept and counted as a failed item, where the released code
counts a failed analysis as not academic — a flaky judge must not move precision silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scoring.judges.base import Judge, JudgeCall

from .base import fingerprint
from .report_sources import SourceResolver
from .verdicts import Decision, Pending, ask_one_each, reusable, stored_verdicts

ACADEMIC = "reportbench.academic_reference"
ACADEMIC_KIND = "academic_reference"
ACADEMIC_LABELS = {"academic": 1.0, "not_academic": 0.0}
CONTENT_LIMIT = 8000  # characters of stored text shown, as the released prompt shows the page's first 8000


def _question(ref: Mapping, content: str) -> tuple[dict, str]:
    variables = {"title": str(ref.get("title") or ""), "url": str(ref.get("url") or ""),
                 "content": content[:CONTENT_LIMIT]}
    return variables, fingerprint(ACADEMIC, variables)


def _stored_text(resolver: SourceResolver, ref: Mapping) -> str:
    url = str(ref.get("url") or "")
    return "\n".join(source["text"] for source in resolver.sources_for([url])) if url else ""


def academic_decision(data: Mapping) -> Decision:
    flag = data.get("is_academic_paper")
    if not isinstance(flag, bool):
        return Decision(error=f"malformed answer: is_academic_paper is {flag!r}, not true or false")
    label = "academic" if flag else "not_academic"
    return Decision(label=label, score=ACADEMIC_LABELS[label], rationale=str(data.get("reason") or ""))


def ask_academic(*, run, report, judge: Judge, predicted: Sequence[Mapping]) -> None:
    """Ask whether each predicted reference is academic, reusing every finished verdict on the same question."""
    existing = stored_verdicts(run, report, [ACADEMIC_KIND])
    resolver = SourceResolver(report, fetch=False)
    pending = []
    for index, ref in enumerate(predicted):
        variables, input_hash = _question(ref, _stored_text(resolver, ref))
        if reusable(existing.get((ACADEMIC_KIND, 0, str(index), 0)), input_hash, ACADEMIC_LABELS):
            continue
        pending.append(Pending(JudgeCall(step=ACADEMIC, variables=variables), 0, input_hash, key=str(index),
                               extra={"reference": dict(ref)}, evidence=variables["url"] or variables["title"]))
    ask_one_each(judge, pending, run=run, report=report, kind=ACADEMIC_KIND, labels=ACADEMIC_LABELS,
                 decide=academic_decision)


def academic_filter(predicted: Sequence[Mapping], rows: Sequence[Mapping]) -> tuple[list[Mapping], dict]:
    """The predicted references left after dropping those marked not academic, and the counts:
    ``not_academic`` (dropped), ``academic_failed`` (no finished verdict on the current reference:
    kept, a failed item). ``rows`` are the report's ``academic_reference`` verdict rows."""
    by_index = {r["target_key"]: r for r in rows}
    kept, dropped, failed = [], 0, 0
    for index, ref in enumerate(predicted):
        row = by_index.get(str(index))
        raw = row["raw_response"] if row and isinstance(row["raw_response"], dict) else {}
        current = bool(row) and not row["error"] and row["label"] in ACADEMIC_LABELS and raw.get("reference") == dict(ref)
        if current and row["label"] == "not_academic":
            dropped += 1
            continue
        failed += 0 if current else 1
        kept.append(ref)
    return kept, {"not_academic": dropped, "academic_failed": failed}
