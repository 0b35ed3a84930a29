"""DeepScholar-bench metrics (DeepScholar-bench §8.3, App. 8.4, Table 4).

Knowledge synthesis: organisation win rate against the human exemplar and
nugget coverage.  Retrieval quality: relevance rate, reference coverage and
document importance.  Verifiability: citation precision and claim coverage.
The headline aggregate is the geometric mean over metrics.

Where the released evaluation code (guestrin-lab/deepscholar-bench) differs from the paper we
follow the paper and offer the code's behaviour as ``variant="upstream"``: the relevance rate
divides by 2|S| (the code omits the 2); citation precision averages over citations (the code
averages per-sentence precisions over every sentence, a sentence without a citation counting
0); nugget coverage of an empty nugget set is undefined (the code gives 0.0). Claim coverage
honours the ±w window; :func:`claim_coverage` says how the released code differs.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from ._validate import as_binary, as_numeric, check_choice, check_int, check_range, check_same_length, encode_labels, fail

__all__ = [
    "relevance_rate",
    "reference_coverage",
    "document_importance",
    "citation_precision",
    "claim_coverage",
    "nugget_coverage",
    "win_rate",
    "geometric_mean",
    "geometric_means_over_common",
    "NUGGET_MODES",
    "TABLE2_METRICS",
    "VARIANTS",
]

# The seven metrics of Table 2 whose geometric mean is its "Geo. Mean" column, in its order.
TABLE2_METRICS = ("organization", "nugget_coverage", "relevance_rate", "reference_coverage", "document_importance",
                  "citation_precision", "claim_coverage")


VARIANTS = ("paper", "upstream")


def relevance_rate(grades: Sequence[int], variant: str = "paper") -> float | None:
    """RR(S) = Σ_{s∈S} Rel(s) / (2|S|) for graded relevance Rel ∈ {0, 1, 2} (§8.3.2).

    ``None`` for an empty retrieved set (the ratio is undefined). ``variant="upstream"``
    reproduces the released code, which divides by |S| (without the ½: values up to 2).
    """
    check_choice(variant, "variant", VARIANTS)
    arr = as_numeric(grades, "grades")
    bad = (arr != 0) & (arr != 1) & (arr != 2)
    if bad.any():
        k = int(np.argmax(bad))
        fail(f"grades must be 0, 1 or 2; found {arr[k]!r} at position {k}")
    denominator = arr.size if variant == "upstream" else 2 * arr.size
    return float(arr.sum() / denominator) if arr.size else None


def _id_set(ids: Any, name: str) -> set[Hashable]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (Sequence, set, frozenset, np.ndarray)):
        fail(f"{name} must be a collection of reference ids; got {type(ids).__name__}")
    items = list(ids.tolist() if isinstance(ids, np.ndarray) else ids)
    for k, item in enumerate(items):
        if item is None or not isinstance(item, Hashable) or (isinstance(item, float) and np.isnan(item)):
            fail(f"{name} contains an invalid id {item!r} at position {k}")
    return set(items)


def reference_coverage(cited_ids: Sequence[Hashable], important_ids: Sequence[Hashable]) -> float | None:
    """RC(S, E) = |S ∩ E| / |E| (§8.3.2), E the exemplar's important references.

    Ids are compared with ``==`` (normalise them first, e.g. with
    :func:`scoring.metrics.normalize_arxiv_id`); both arguments are treated
    as sets, so citing a reference twice counts once.  ``None`` when E is empty.
    """
    cited = _id_set(cited_ids, "cited_ids")
    important = _id_set(important_ids, "important_ids")
    return len(cited & important) / len(important) if important else None


def _counts(values: Any, name: str) -> np.ndarray:
    arr = as_numeric(values, name)
    check_range(arr, name, 0.0, None)
    return arr


def document_importance(system_citation_counts: Sequence[float], exemplar_citation_counts: Sequence[float]) -> float:
    """DI(S, S*) = min(median cites(S) / median cites(S*), 1) (§8.3.2).

    Each argument lists the citation counts of the retrieved / exemplar
    references (look-ups that failed must be dropped by the caller; ``None``
    is rejected).  Returns 0 when the exemplar list is empty or its median is
    0 (no scale to compare against) and when the system retrieved nothing.
    """
    system = _counts(system_citation_counts, "system_citation_counts")
    exemplar = _counts(exemplar_citation_counts, "exemplar_citation_counts")
    if system.size == 0 or exemplar.size == 0:
        return 0.0
    reference = float(np.median(exemplar))
    if reference == 0:
        return 0.0
    return min(float(np.median(system)) / reference, 1.0)


def citation_precision(per_citation_support: Sequence[float], variant: str = "paper",
                       sentences: Sequence[Hashable] | None = None,
                       uncited_sentences: int = 0) -> float | None:
    """Mean over a report's citations of whether the cited source supports its sentence (§8.3.3).

    One entry per citation: True/False, or a support value in [0, 1]. ``None`` when the report
    has no citation.

    ``variant="upstream"`` reproduces the released ``eval/evaluator/cite_p.py``: the mean over
    the report's claim sentences of each sentence's own precision, a sentence without an
    (in-range) citation counting 0. It needs ``sentences`` (the sentence of each citation, one
    entry per citation; a citation repeated in a sentence is counted again, as the code does)
    and ``uncited_sentences``, the number of claim sentences with no citation. So a sentence
    with many citations weighs as much as one with a single citation, and an uncited claim
    lowers the score. ``None`` when there is no sentence at all (the code's ``np.mean([])``
    is NaN); 0.0 when only uncited sentences exist.
    """
    check_choice(variant, "variant", VARIANTS)
    arr = as_numeric(per_citation_support, "per_citation_support", allow_bool=True)
    check_range(arr, "per_citation_support", 0.0, 1.0)
    if variant == "paper":
        return float(arr.mean()) if arr.size else None
    uncited = check_int(uncited_sentences, "uncited_sentences", low=0)
    if sentences is None or len(sentences) != arr.size:
        fail("sentences: the upstream variant needs the sentence of every citation (one entry per citation)")
    if arr.size + uncited == 0:
        return None
    if not arr.size:
        return 0.0
    _, index = np.unique(np.asarray([str(x) for x in sentences]), return_inverse=True)
    per_sentence = np.bincount(index, weights=arr) / np.bincount(index)
    return float(per_sentence.sum() / (per_sentence.size + uncited))


def claim_coverage(sentence_supported: Any, window: int = 1) -> float | None:
    """Share of sentences whose claims are fully supported within a ±w window (§8.3.3, App. 8.4.2).

    ``sentence_supported[i][j]`` (an n × n boolean matrix) says whether the
    sources cited in sentence j (plus the query context) fully support the
    claims of sentence i.  Sentence i is covered when some j with
    |i − j| ≤ ``window`` supports it; the score is the mean over sentences.
    The paper's main results use ``window=1``; ``window=0`` is same-sentence
    support only.  ``None`` for no sentence.

    The released ``eval/evaluator/claim_coverage.py`` computes neither exactly, whatever its
    ``window_size``: its window loop reads the citations of sentence i itself on every step
    (``re.findall(..., sent)``), so only sentence i's own citations count (``window=0``), and
    further (a) sentence i is covered only when it cites at least one in-range document: the
    query context (title + abstract) is appended to those documents and is never asked on its
    own, so an uncited sentence counts 0 even when the context supports it; (b) all of
    sentence i's documents and the context are judged together in one call, where the
    ``support`` matrix here holds per-document verdicts (support that needs two documents
    together is not credited). On a report whose every claim cites something and whose
    support comes from single documents, ``window=0`` here equals the released code's value.
    """
    w = check_int(window, "window", low=0)
    support = as_binary(sentence_supported, "sentence_supported", ndim=2)
    n = support.shape[0]
    if support.shape != (n, n):
        fail(f"sentence_supported must be square (sentences x sentences); got shape {support.shape}")
    if n == 0:
        return None
    offsets = np.arange(n)
    band = np.abs(offsets[:, None] - offsets[None, :]) <= w
    return float((support & band).any(axis=1).mean())


NUGGET_MODES = ("strict_all", "all", "strict_vital", "vital")
_SUPPORT_LABELS = ("not_support", "partial_support", "support")
_IMPORTANCE_LABELS = ("okay", "vital")


def nugget_coverage(labels: Sequence[str], importance: Sequence[str], mode: str = "strict_all",
                    variant: str = "paper") -> float | None:
    """Nugget coverage (§8.3.1; scoring modes of Pradeep et al. 2025).

    ``labels[i]`` ∈ {"support", "partial_support", "not_support"} and
    ``importance[i]`` ∈ {"vital", "okay"} for nugget i.  Modes:

    * ``strict_all`` — share of all nuggets that are supported (the paper's reported score);
    * ``all`` — same, with partial support counting 0.5;
    * ``strict_vital`` / ``vital`` — the same two over vital nuggets only.

    Returns ``None`` when the mode's nugget set is empty (no nugget at all, or
    no vital nugget for the vital modes): coverage of nothing is undefined,
    and 0 would wrongly penalise the report. ``variant="upstream"`` gives 0.0 there, as the
    released ``nuggetizer/core/metrics.py`` (``calculate_nugget_scores``) does.
    """
    check_choice(mode, "mode", NUGGET_MODES)
    check_choice(variant, "variant", VARIANTS)
    support = encode_labels(labels, "labels", _SUPPORT_LABELS)
    vital = encode_labels(importance, "importance", _IMPORTANCE_LABELS).astype(bool)
    check_same_length("labels", support, "importance", vital)
    credit = support / 2.0 if mode in ("all", "vital") else (support == 2).astype(float)
    if mode in ("strict_vital", "vital"):
        credit = credit[vital]
    if not credit.size:
        return 0.0 if variant == "upstream" else None
    return float(credit.mean())


_OUTCOMES = ("loss", "tie", "win")


def win_rate(outcomes: Sequence[str]) -> float | None:
    """Win rate with ties counted as half a win (§8.3.1, §6: "win rate including ties").

    ``outcomes`` holds "win", "tie" or "loss" per comparison (each position
    order counts as its own comparison).  ``None`` for no comparison.
    """
    codes = encode_labels(outcomes, "outcomes", _OUTCOMES)
    return float(codes.mean() / 2.0) if codes.size else None


def geometric_mean(values: Sequence[float]) -> float | None:
    """Geometric mean of metric values in [0, 1] (the paper's cross-metric aggregate).

    A 0 anywhere gives 0; a negative value, a value above 1 or NaN raises.
    ``None`` for no value.
    """
    arr = as_numeric(values, "values")
    check_range(arr, "values", 0.0, 1.0)
    if arr.size == 0:
        return None
    if (arr == 0).any():
        return 0.0
    return float(np.exp(np.log(arr).mean()))


def geometric_means_over_common(means: Mapping[Hashable, Mapping[str, float | None]],
                                metrics: Sequence[str]) -> dict[str, Any]:
    """Table 2's aggregate for systems compared together: each system's geometric mean of its
    metric *means* (not a mean of report-level geometric means), over the ``metrics`` that are
    defined (not ``None``) for every system, so no system is compared over fewer metrics than
    another. Returns ``{"values": {system: float | None}, "over": [...], "left_out": [...]}``;
    a value is ``None`` when no metric is common to all.
    """
    def defined(value: Any) -> bool:
        return value is not None and not (isinstance(value, float) and np.isnan(value))

    common = [k for k in metrics if means and all(defined(row.get(k)) for row in means.values())]
    values = {system: (geometric_mean([float(row[k]) for k in common]) if common else None)
              for system, row in means.items()}
    return {"values": values, "over": common, "left_out": [k for k in metrics if k not in common]}
