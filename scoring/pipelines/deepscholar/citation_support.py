"""``deepscholar.citation_support``: citation precision and claim coverage, one judge step.

target_kind ``citation_pair``, target_key ``<sentence>:<document>``. Each (claim sentence, cited
document) pair within ±``options["claim_max_window"]`` is one call, plus the query context once
per sentence (target_key ``<i>:query``). ``citation_precision`` averages over the citations of the
claim sentences (:func:`citation_precision`); its ``upstream`` variant (the released ``cite_p.py``)
averages per-sentence precisions over every claim sentence, an uncited one counting 0, where the
released code measures the 50-character cut-off with the citation markers included and counts a
marker repeated in one sentence twice (here: without markers, each cited document once; a claim
whose citations all failed to be judged is left out, as failed items are). ``claim_coverage`` is the value at
``options["claim_window"]`` of ``claim_coverage_by_window`` (:func:`claim_coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import citation_precision, claim_coverage

from ..base import fingerprint
from ..verdicts import Pending, ask_one_each, reusable, stored_verdicts
from .documents import ReportCitations, report_citations, store_unavailable
from .inputs import claim_windows, query_text

CITATIONS = "deepscholar.citation_support"
PAIR_KIND = "citation_pair"
SUPPORT_LABELS = {"support": 1.0, "not_support": 0.0}
QUERY_SOURCE = "query"


@dataclass(frozen=True)
class PairQuestion:
    key: str  # "<sentence index>:<document key>" or "<sentence index>:query"
    sentence: int
    document: str  # a document key, or QUERY_SOURCE
    claim: str
    source: str  # "" when the document has no stored text

    @property
    def input_hash(self) -> str:
        return fingerprint(self.claim, self.source)


def pair_questions(citations: ReportCitations, query: str, largest_window: int) -> list[PairQuestion]:
    """Every (claim sentence, document) pair the metrics need: the documents cited within
    ±``largest_window`` sentences of each claim, plus the query context once per claim."""
    out = []
    for claim in citations.claims:
        keys: list[str] = []
        for j in range(claim.index - largest_window, claim.index + largest_window + 1):
            for key in citations.cited_by_sentence.get(j, ()):
                if key not in keys:
                    keys.append(key)
        for key in keys:
            out.append(PairQuestion(f"{claim.index}:{key}", claim.index, key, claim.text,
                                    citations.documents[key].as_source() if citations.documents[key].text else ""))
        out.append(PairQuestion(f"{claim.index}:{QUERY_SOURCE}", claim.index, QUERY_SOURCE, claim.text, query))
    return out


def ask_citations(*, run, report, judge: Judge) -> None:
    _, largest = claim_windows(run.judge_config)
    citations = report_citations(report)
    questions = pair_questions(citations, query_text(report.task), largest)
    existing = stored_verdicts(run, report, [PAIR_KIND])
    pending, unavailable = [], []
    for q in questions:
        if reusable(existing.get((PAIR_KIND, 0, q.key, 0)), q.input_hash, SUPPORT_LABELS):
            continue
        extra = {"sentence": q.sentence, "document": (
            {"key": QUERY_SOURCE} if q.document == QUERY_SOURCE else citations.documents[q.document].describe())}
        if not q.source:
            unavailable.append((0, q.key, q.input_hash, extra))
            continue
        pending.append(Pending(JudgeCall(step=CITATIONS, variables={"sentence": q.claim, "source": q.source}),
                               0, q.input_hash, key=q.key, extra=extra, evidence=q.source))
    store_unavailable(run, report, step=CITATIONS, kind=PAIR_KIND, items=unavailable, labels=SUPPORT_LABELS)
    ask_one_each(judge, pending, run=run, report=report, kind=PAIR_KIND, labels=SUPPORT_LABELS)


def claim_pair_keys(claim: int, citations: ReportCitations, window: int) -> list[str]:
    """The pairs (target keys) whose verdicts decide whether claim sentence ``claim`` is covered at
    ``window``: each document cited within ±``window`` sentences, and the query context."""
    keys = [f"{claim}:{key}" for j in range(max(0, claim - window), min(citations.sentence_count, claim + window + 1))
            for key in citations.cited_by_sentence.get(j, ())]
    return list(dict.fromkeys(keys)) + [f"{claim}:{QUERY_SOURCE}"]


def claim_support_row(claim: int, supports: dict[str, bool | None], citations: ReportCitations,
                      window: int) -> np.ndarray | None:
    """Row ``claim`` of claim coverage's support matrix at ``window`` (``support[i][j]``: the query
    context or a document cited in sentence j supports claim i, |i − j| ≤ window) from each pair's
    verdict (``supports``: key → True / False, None for a pair without one), or ``None`` when the
    claim is undetermined: nothing supports it and some pair in the window has no verdict. The
    sentence is covered when the row has a True; calibrated scores apply this to the judge's and
    the experts' labels (``annotation.calibration.unit_groups``)."""
    n = citations.sentence_count
    row = np.zeros(n, dtype=bool)
    query_flag = supports.get(f"{claim}:{QUERY_SOURCE}")
    unknown = query_flag is None
    for j in range(max(0, claim - window), min(n, claim + window + 1)):
        flags = [supports.get(f"{claim}:{key}") for key in citations.cited_by_sentence.get(j, ())]
        row[j] = bool(query_flag) or any(f is True for f in flags)
        unknown = unknown or any(f is None for f in flags)
    return row if row.any() or not unknown else None


def score_citation_support(*, run, citations: ReportCitations, query: str, stored, precision_variant: str) -> dict:
    """Citation precision over the claim sentences' citations, and claim coverage per window."""
    window, largest = claim_windows(run.judge_config)
    supports: dict[str, bool | None] = {}
    for q in pair_questions(citations, query, largest):
        label = stored.label_of((PAIR_KIND, 0, q.key, 0), q.input_hash, SUPPORT_LABELS)
        supports[q.key] = None if label is None else label == "support"

    judged = [(c.index, supports[f"{c.index}:{key}"]) for c in citations.claims for key in c.documents]
    judged = [(sentence, flag) for sentence, flag in judged if flag is not None]
    precision = [flag for _, flag in judged]
    precision_sentences = [sentence for sentence, _ in judged]
    uncited = sum(1 for c in citations.claims if not c.documents)  # the upstream variant counts them as 0

    n = citations.sentence_count
    by_window = {}
    for w in range(largest + 1):
        # support[i][j]: a document cited in sentence j (or the query context) supports claim i
        support = np.zeros((n, n), dtype=bool)
        determined = np.zeros(n, dtype=bool)
        for claim in citations.claims:
            row = claim_support_row(claim.index, supports, citations, w)
            if row is not None:
                support[claim.index], determined[claim.index] = row, True
        counted = int(determined.sum())
        # claim_coverage averages over all n rows; rows that are no claim or undetermined are all False,
        # so rescaling by n / counted gives the mean over the determined claims alone
        by_window[str(w)] = claim_coverage(support, window=w) * n / counted if counted else None
    return {
        "citation_precision": (citation_precision(precision, variant=precision_variant, sentences=precision_sentences,
                                                  uncited_sentences=uncited)
                               if precision or (precision_variant == "upstream" and uncited) else None),
        "claim_sentences_uncited": uncited,
        "citations": sum(len(c.documents) for c in citations.claims),
        "citations_judged": len(precision),
        "claim_coverage": by_window[str(window)],
        "claim_coverage_by_window": by_window,
        "claim_window": window,
        "claim_sentences": len(citations.claims),
    }
