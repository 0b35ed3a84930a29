"""ReportBench statement metrics and stratified recall (ReportBench §3.1–3.2, App. A.2.1).

* match rate — share of cited statements semantically consistent with their
  cited source (§3.2);
* non-cited statements are fact-checked by several web-connected judges
  (two models × three runs = six verdicts); "the final decision is determined
  by majority voting, and the proportion of votes is recorded as a confidence
  score" (§3.1) — :func:`majority_vote`;
* factual accuracy — share of non-cited statements verified as correct (§3.2);
* citation recall by reference-importance quartile (App. A.2.1, Table 2).
"""

from __future__ import annotations

from collections.abc import Sequence
import numpy as np

from ._validate import as_binary, as_numeric, check_choice, check_same_length, fail

__all__ = [
    "match_rate",
    "majority_vote",
    "factual_accuracy",
    "citation_quartiles",
    "recall_by_quartile",
    "pooled_recall_by_quartile",
]


def match_rate(flags: Sequence[bool]) -> float | None:
    """Share of cited statements consistent with their source (ReportBench §3.2), 0–1.

    ``flags`` holds one boolean (or 0/1) per cited statement; ``None`` when
    there is no cited statement.
    """
    arr = as_binary(flags, "flags")
    return float(arr.mean()) if arr.size else None


def majority_vote(votes: Sequence[bool]) -> dict[str, bool | float | None]:
    """Majority decision over judge verdicts (ReportBench §3.1).

    ``votes`` are booleans (or 0/1), True meaning "factually correct".
    Returns ``{"decision": True | False | None, "confidence": float}`` where
    the decision is the majority side (``None`` on an exact tie) and the
    confidence is the winning side's share of the votes (0.5 on a tie).
    """
    arr = as_binary(votes, "votes")
    if arr.size == 0:
        fail("votes must not be empty")
    yes = int(arr.sum())
    no = arr.size - yes
    if yes == no:
        return {"decision": None, "confidence": 0.5}
    return {"decision": yes > no, "confidence": max(yes, no) / arr.size}


def factual_accuracy(decisions: Sequence[bool | None], ties: str = "count_as_wrong") -> float | None:
    """Share of non-cited statements judged correct (ReportBench §3.2), 0–1.

    ``decisions`` are the per-statement majority decisions: True, False, or
    ``None`` for a tied vote.  By default a tied vote counts as not verified,
    as the paper and the released code count it (``ties="count_as_wrong"``);
    ``ties="exclude"`` leaves tied statements out of numerator and denominator.
    ``None`` when no statement is left to score.
    """
    check_choice(ties, "ties", ("exclude", "count_as_wrong"))
    if isinstance(decisions, (str, bytes)) or not isinstance(decisions, Sequence | np.ndarray):
        fail(f"decisions must be a sequence of True/False/None; got {type(decisions).__name__}")
    arr = np.empty(len(decisions), dtype=object)
    arr[:] = list(decisions)
    is_tie = np.fromiter((d is None for d in arr), dtype=bool, count=arr.size)
    decided = as_binary(arr[~is_tie].tolist(), "decisions")
    total = decided.size if ties == "exclude" else arr.size
    return float(decided.sum() / total) if total else None


def citation_quartiles(citation_counts: Sequence[float]) -> np.ndarray:
    """Quartile (1–4) of each reference by citation count within one survey (ReportBench App. A.2.1).

    The paper sorts a survey's references by citation count, Q1 being the least-cited 25 %.
    Quartiles are equal-size by rank: references are ranked by count (ascending), ties in the
    order they are given (their position in the bibliography — a deterministic rule), and the
    reference of rank r (0-based) of n goes to quartile 1 + ⌊4r / n⌋, so quartile sizes differ
    by at most one. (Cutting at count quantiles instead lets ties pile up: counts with many
    zeros gave sizes like [6, 0, 1, 3].)
    """
    counts = as_numeric(citation_counts, "gold_citation_counts")
    if (counts < 0).any():
        fail("gold_citation_counts must be non-negative")
    if counts.size == 0:
        return np.zeros(0, dtype=np.intp)
    rank = np.empty(counts.size, dtype=np.intp)
    rank[np.argsort(counts, kind="stable")] = np.arange(counts.size)
    return 1 + (4 * rank) // counts.size


def _quartile_recall(quartiles: np.ndarray, matched: np.ndarray) -> list[float | None]:
    totals = np.bincount(quartiles, minlength=5)[1:]
    hits = np.bincount(quartiles, weights=matched.astype(float), minlength=5)[1:]
    return [float(h / t) if t else None for h, t in zip(hits, totals)]


def recall_by_quartile(gold_citation_counts: Sequence[float], matched_flags: Sequence[bool]) -> list[float | None]:
    """Recall of one survey's gold references per citation-count quartile, ``[q1, q2, q3, q4]`` (0–1).

    ``matched_flags[i]`` tells whether gold reference ``i`` was cited by the
    report.  Quartiles as in :func:`citation_quartiles`; a quartile with no
    gold reference gives ``None``.  To reproduce the paper's Table 2, which
    pools the references of each quartile over all surveys, use
    :func:`pooled_recall_by_quartile`.
    """
    matched = as_binary(matched_flags, "matched_flags")
    quartiles = citation_quartiles(gold_citation_counts)
    check_same_length("gold_citation_counts", quartiles, "matched_flags", matched)
    return _quartile_recall(quartiles, matched)


def pooled_recall_by_quartile(surveys: Sequence[tuple[Sequence[float], Sequence[bool]]]) -> list[float | None]:
    """Table 2 aggregation: quartiles formed per survey, recall pooled over all surveys.

    ``surveys`` is a list of ``(gold_citation_counts, matched_flags)`` pairs.
    Each survey's references are split into quartiles separately
    (:func:`citation_quartiles`); then "for Q1 we collect all references that
    fall into Q1 across all surveys and measure what fraction were correctly
    cited", likewise Q2–Q4 (App. A.2.1).
    """
    if isinstance(surveys, (str, bytes)) or not isinstance(surveys, Sequence):
        fail(f"surveys must be a list of (counts, flags) pairs; got {type(surveys).__name__}")
    quartiles: list[np.ndarray] = []
    matched: list[np.ndarray] = []
    for k, item in enumerate(surveys):
        if not isinstance(item, Sequence) or isinstance(item, (str, bytes)) or len(item) != 2:
            fail(f"surveys[{k}] must be a (gold_citation_counts, matched_flags) pair")
        flags = as_binary(item[1], f"surveys[{k}] matched_flags")
        q = citation_quartiles(item[0])
        check_same_length(f"surveys[{k}] gold_citation_counts", q, f"surveys[{k}] matched_flags", flags)
        quartiles.append(q)
        matched.append(flags)
    if not quartiles:
        return [None, None, None, None]
    return _quartile_recall(np.concatenate(quartiles), np.concatenate(matched))

