"""What the metric keys of ``ScoreCard.metrics`` are called and which ones each protocol leads
with: shared by scoring's run pages, the ``evaluate`` command and annotation's dashboards."""

from benchmark.models import Protocol

# Columns shown first for a protocol; any other numeric key of the cards follows, sorted.
# Each protocol's headline metrics, in the papers' order: what the leaderboard and the rankings
# compare. A key ending in "*" stands for every stored key with that prefix. The run pages show
# every stored key.
PREFERRED_METRICS: dict[str, tuple[str, ...]] = {
    Protocol.DEEPSYNTH: ("overall", "general", "constraint", "precision"),
    Protocol.REPORTBENCH: ("precision", "recall", "references", "match_rate", "factual_accuracy"),
    Protocol.DEEPSCHOLAR: ("organization", "nugget_coverage", "relevance_rate", "reference_coverage",
                           "document_importance", "citation_precision", "claim_coverage", "geometric_mean"),
    Protocol.SURVEYLENS: ("rubric_outline", "rubric_content", "rubric_reference", "rams_outline", "rams_content",
                          "rams_reference", "tams_outline", "tams_content", "tams_reference"),
    # SciSage Table 4's quality columns in its order: Language, Critical, Section (1–5 section-level
    # structure), Document (``structure``); then any task-specific dimension.
    Protocol.SURVEYSCOPE: ("reference_tp", "reference_f1", "quality_mean", "quality_language", "quality_critical",
                           "quality_section_structure", "quality_structure", "quality_*", "win_rate_vs_human"),
}
# Keys of ``ScoreCard.metrics`` that are counts or bookkeeping, not scores.
NOT_METRICS = frozenset(
    {"correct", "omitted", "incorrect", "groups", "groups_scored", "items", "repeats", "reports", "reports_with"}
)
PERCENT_PROTOCOLS = frozenset({Protocol.DEEPSYNTH})  # DeepSynth-Eval reports in percent, the rest on 0–1
_ACRONYMS = {"rams": "RAMS", "tams": "TAMS", "tp": "TP", "f1": "F1", "iaa": "IAA"}


def metric_label(key: str) -> str:
    words = key.split("_")
    return " ".join(_ACRONYMS.get(w, w.capitalize() if i == 0 else w) for i, w in enumerate(words))



def ordered_metrics(protocol: str, keys: list[str]) -> list[str]:
    """The protocol's headline metrics among ``keys`` in their order, then the other keys."""
    preferred: list[str] = []
    for name in PREFERRED_METRICS.get(protocol, ()):
        found = [k for k in keys if k.startswith(name[:-1])] if name.endswith("*") else [name] if name in keys else []
        preferred += [k for k in found if k not in preferred]
    return preferred + [k for k in keys if k not in preferred]


def headline_metrics(protocol: str, keys: list[str]) -> list[str]:
    """Only the headline metrics when the protocol names them and the cards hold any; else every key."""
    ordered = ordered_metrics(protocol, keys)
    return [k for k in ordered if is_headline_metric(protocol, k)] or ordered


def is_headline_metric(protocol: str, key: str) -> bool:
    return any(key.startswith(n[:-1]) if n.endswith("*") else key == n for n in PREFERRED_METRICS.get(protocol, ()))
