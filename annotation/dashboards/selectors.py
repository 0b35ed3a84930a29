"""Reads behind the dashboards: leaderboards, human rankings, agreement, chart data.

Every figure is computed by ``scoring.metrics`` over stored rows (``ScoreCard``,
``Verdict``, ``PairwisePreference``, ``Label``, ``GoldLabel``); this module only
selects the rows (a fixed number of queries whatever their number) and arranges
them into the arrays those functions take.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, islice
from numbers import Real
from typing import Any, NamedTuple

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Case, Count, OuterRef, Subquery, Sum, TextField, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from annotation.models import AnnotationItem, AnnotationProject, Label, PairwisePreference, ProjectMembership, Role
from annotation.selectors import is_global_curator
from annotation.services.values import consensus_key
from benchmark.models import Protocol, TaskSet
from scoring import metrics as m
from scoring.models import EvaluationRun, ScoreCard, Verdict

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
    Protocol.SURVEYSCOPE: ("reference_tp", "reference_f1", "quality_mean", "quality_*", "win_rate_vs_human"),
}
# Keys of ``ScoreCard.metrics`` that are counts or bookkeeping, not scores.
NOT_METRICS = frozenset(
    {"correct", "omitted", "incorrect", "groups", "groups_scored", "items", "repeats", "reports", "reports_with"}
)
PERCENT_PROTOCOLS = frozenset({Protocol.DEEPSYNTH})  # DeepSynth-Eval reports in percent, the rest on 0–1
SIGNIFICANCE = 0.05
N_RESAMPLES = 1000
DISAGREEMENT_LIMIT = 200
VERDICT_ORDER = ("correct", "omitted", "incorrect")


_ACRONYMS = {"rams": "RAMS", "tams": "TAMS", "tp": "TP", "f1": "F1", "iaa": "IAA"}


def metric_label(key: str) -> str:
    words = key.split("_")
    return " ".join(_ACRONYMS.get(w, w.capitalize() if i == 0 else w) for i, w in enumerate(words))


def system_label(name: str, version: str = "") -> str:
    return f"{name} {version}".strip()


def _number(value: Any) -> float | None:
    if isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value)):
        return float(value)
    return None


def _mean_of_rows(data: np.ndarray) -> Any:
    """Mean over the last axis: ``bootstrap_ci``'s statistic (vectorised, one result per resample)."""
    return data.mean(axis=-1)


def _interval(values: list[float], n_resamples: int) -> dict:
    ci = m.bootstrap_ci(_mean_of_rows, np.asarray(values, dtype=float), n_resamples=n_resamples, seed=0, vectorized=True)
    return {"estimate": ci["estimate"], "low": ci["low"], "high": ci["high"]}


# --------------------------------------------------------------------------- leaderboard


class CardRow(NamedTuple):
    """One report-level score card with what the dashboards group it by."""

    protocol: str
    run_id: int
    judge: str
    system_id: int
    system_name: str
    system_version: str
    task_id: int
    task_key: str
    metrics: dict
    items_judged: int
    items_failed: int
    report_id: int
    judge_config_id: int
    prompt_version: str
    discipline: str | None


def _report_cards(*, protocol: str | None, run_id: int | None = None, task_set_id: int | None = None,
                  judge_config_ids: Sequence[int] = ()) -> list[CardRow]:
    """Report-level cards, newest run first, one per (protocol, system, task) — and per judge
    configuration when ``judge_config_ids`` are given: one query."""
    cards = ScoreCard.objects.filter(report__isnull=False)
    if protocol:
        cards = cards.filter(run__protocol=protocol)
    if run_id:
        cards = cards.filter(run_id=run_id)
    if task_set_id:
        cards = cards.filter(report__task__task_sets=task_set_id)
    if judge_config_ids:
        cards = cards.filter(run__judge_config_id__in=list(judge_config_ids))
    rows = cards.order_by("-run__created_at", "-run_id", "pk").values_list(
        "run__protocol", "run_id", "run__judge_config__name", "system_id", "system__name", "system__version",
        "report__task_id", "report__task__key", "metrics", "items_judged", "items_failed", "report_id",
        "run__judge_config_id", "run__judge_config__prompt_version", "report__task__survey__discipline__name",
    )
    seen: set[tuple] = set()
    out = []
    for row in map(CardRow._make, rows):
        key = (row.protocol, row.system_id, row.task_id, row.judge_config_id if judge_config_ids else None)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


@dataclass
class SystemScores:
    system_id: int
    name: str
    values: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))  # metric → task → value
    tasks: set[int] = field(default_factory=set)
    items_judged: int = 0
    items_failed: int = 0


def _collect(cards: list[tuple]) -> tuple[list[str], dict[int, SystemScores], set[int], set[str]]:
    systems: dict[int, SystemScores] = {}
    keys: set[str] = set()
    runs: set[int] = set()
    judges: set[str] = set()
    for _protocol, run_id, judge, system_id, name, version, task_id, _key, metrics, judged, failed, *_ in cards:
        runs.add(run_id)
        judges.add(judge)
        scores = systems.setdefault(system_id, SystemScores(system_id, system_label(name, version)))
        scores.tasks.add(task_id)
        scores.items_judged += judged
        scores.items_failed += failed
        for key, value in (metrics or {}).items():
            number = _number(value)
            if key in NOT_METRICS or number is None:
                continue
            keys.add(key)
            scores.values[key][task_id] = number
    return sorted(keys), systems, runs, judges


def _ordered_metrics(protocol: str, keys: list[str]) -> list[str]:
    """The protocol's headline metrics among ``keys`` in their order, then the other keys."""
    preferred: list[str] = []
    for name in PREFERRED_METRICS.get(protocol, ()):
        found = [k for k in keys if k.startswith(name[:-1])] if name.endswith("*") else [name] if name in keys else []
        preferred += [k for k in found if k not in preferred]
    return preferred + [k for k in keys if k not in preferred]


def headline_metrics(protocol: str, keys: list[str]) -> list[str]:
    """Only the headline metrics when the protocol names them and the cards hold any; else every key."""
    ordered = _ordered_metrics(protocol, keys)
    return [k for k in ordered if is_headline_metric(protocol, k)] or ordered


def is_headline_metric(protocol: str, key: str) -> bool:
    return any(key.startswith(n[:-1]) if n.endswith("*") else key == n for n in PREFERRED_METRICS.get(protocol, ()))


def _best_vs_second(metric: str, ranked: list[SystemScores]) -> dict | None:
    """DeepScholar Table 2's mark: paired t-test of the best against the second over their shared tasks."""
    if len(ranked) < 2:
        return None
    best, second = ranked[0], ranked[1]
    shared = sorted(set(best.values[metric]) & set(second.values[metric]))
    out = {"best": best.system_id, "second": second.system_id, "n_shared": len(shared), "p_value": None,
           "significant": False, "mean_difference": None}
    if len(shared) < 2:
        return out
    test = m.paired_t_test([best.values[metric][t] for t in shared], [second.values[metric][t] for t in shared])
    out.update(p_value=test["p_value"], mean_difference=test["mean_difference"])
    out["significant"] = bool(test["p_value"] is not None and test["p_value"] < SIGNIFICANCE and test["mean_difference"] > 0)
    return out


def _summarise(protocol: str, cards: list[tuple], n_resamples: int) -> dict:
    keys, systems, runs, judges = _collect(cards)
    metric_keys = headline_metrics(protocol, keys)
    summary: dict[int, dict[str, dict]] = {}
    for scores in systems.values():
        summary[scores.system_id] = {}
        for key in metric_keys:
            by_task = scores.values.get(key) or {}
            if by_task:
                cell = _interval(list(by_task.values()), n_resamples)
                cell["n_tasks"] = len(by_task)
                summary[scores.system_id][key] = cell
    tests = {}
    for key in metric_keys:
        ranked = sorted(
            (s for s in systems.values() if key in summary[s.system_id]),
            key=lambda s: (-summary[s.system_id][key]["estimate"], s.name),
        )
        tests[key] = _best_vs_second(key, ranked)
    first = metric_keys[0] if metric_keys else None
    order = sorted(
        systems.values(),
        key=lambda s: (first is None or first not in summary[s.system_id],
                       -(summary[s.system_id][first]["estimate"] if first and first in summary[s.system_id] else 0), s.name),
    )
    rows = []
    for s in order:
        cells = []
        for key in metric_keys:
            cell = summary[s.system_id].get(key)
            test = tests.get(key)
            mark = bool(cell and test and test["best"] == s.system_id and test["significant"])
            cells.append({"metric": key, **(cell or {}), "empty": cell is None, "significant": mark,
                          "best": bool(cell and test and test["best"] == s.system_id)})
        rows.append({"system_id": s.system_id, "system": s.name, "cells": cells, "n_tasks": len(s.tasks),
                     "items_judged": s.items_judged, "items_failed": s.items_failed})
    test_rows = []
    for key in metric_keys:
        test = tests[key] or {}
        test_rows.append({"label": metric_label(key), **test,
                          "best_name": systems[test["best"]].name if test else "",
                          "second_name": systems[test["second"]].name if test else ""})
    return {
        "protocol": protocol, "percent": protocol in PERCENT_PROTOCOLS, "test_rows": test_rows,
        "metrics": [{"key": k, "label": metric_label(k)} for k in metric_keys],
        "rows": rows, "tests": tests, "n_cards": len(cards), "n_runs": len(runs), "judges": sorted(judges),
        "systems": systems,
    }


def leaderboard(*, protocol: str, run_id: int | None = None, task_set_id: int | None = None,
                n_resamples: int = N_RESAMPLES) -> dict:
    """Systems × the protocol's metrics from report-level score cards (one per system and task,
    the newest run's when several runs scored it): mean with a percentile-bootstrap 95 % interval
    over tasks (``bootstrap_ci``), tasks and judged items behind it, and whether the best system
    beats the second at p < 0.05 (``paired_t_test`` over shared tasks)."""
    return _summarise(protocol, _report_cards(protocol=protocol, run_id=run_id, task_set_id=task_set_id), n_resamples)


def leaderboard_filters(*, protocol: str) -> dict:
    """The runs and task sets a leaderboard can be narrowed to (two bounded queries)."""
    runs = list(
        EvaluationRun.objects.filter(protocol=protocol, score_cards__isnull=False).distinct()
        .order_by("-created_at").values("id", "name", "judge_config__name")[:100]
    )
    for run in runs:
        run["label"] = run["name"] or f"run #{run['id']}"
    task_sets = list(TaskSet.objects.order_by("name", "-version").values("id", "name", "version")[:100])
    return {"runs": runs, "task_sets": task_sets, "protocols": Protocol.choices}


def automated_scores(*, n_resamples: int = N_RESAMPLES) -> dict[str, dict]:
    """Every protocol's leaderboard at once (one query for all cards)."""
    by_protocol: dict[str, list[tuple]] = defaultdict(list)
    for row in _report_cards(protocol=None):
        by_protocol[row[0]].append(row)
    return {protocol: _summarise(protocol, cards, n_resamples) for protocol, cards in sorted(by_protocol.items())}


def score_points(*, protocol: str, metric: str, run_id: int | None = None, task_set_id: int | None = None,
                 n_resamples: int = N_RESAMPLES) -> dict:
    """Per-task values of one metric per system (the strip plot), with the leaderboard's interval."""
    cards = _report_cards(protocol=protocol, run_id=run_id, task_set_id=task_set_id)
    board = _summarise(protocol, cards, n_resamples)
    if not metric and board["metrics"]:
        metric = board["metrics"][0]["key"]
    task_keys = {row[6]: row[7] for row in cards}
    groups = []
    for row in board["rows"]:
        scores = board["systems"][row["system_id"]]
        by_task = scores.values.get(metric) or {}
        cell = next((c for c in row["cells"] if c["metric"] == metric), None)
        groups.append({
            "system": row["system"],
            "points": [{"task": task_keys.get(t, str(t)), "value": v} for t, v in sorted(by_task.items())],
            "interval": None if cell is None or cell["empty"] else cell,
        })
    return {"protocol": protocol, "metric": metric, "metrics": board["metrics"], "groups": groups,
            "percent": board["percent"]}


# --------------------------------------------------------------------------- verdict breakdown


def verdict_breakdown(*, protocol: str, run_id: int | None = None) -> dict:
    """Judge decisions per system and label (DeepSynth Fig. 4/6): one aggregate query over ``Verdict``.

    Every finished verdict row counts (each repeat is one decision); failed calls (``error``
    set, no label) are counted apart."""
    verdicts = Verdict.objects.filter(step__startswith=f"{protocol}.")
    if run_id:
        run = EvaluationRun.objects.filter(pk=run_id).values("judge_config_id").first()
        if run is None:
            return {"protocol": protocol, "labels": [], "rows": []}
        verdicts = verdicts.filter(judge_config_id=run["judge_config_id"], report__score_cards__run_id=run_id)
    counts = (
        verdicts.values_list("report__system__name", "report__system__version", "label", "error")
        .annotate(n=Count("pk")).order_by()
    )
    per_system: dict[str, Counter] = defaultdict(Counter)
    for name, version, label, error, n in counts:
        per_system[system_label(name, version)]["(failed)" if error or not label else label] += n
    seen = {label for c in per_system.values() for label in c}
    labels = [l for l in VERDICT_ORDER if l in seen] + sorted(seen - set(VERDICT_ORDER) - {"(failed)"})
    if "(failed)" in seen:
        labels.append("(failed)")
    rows = []
    for system, counter in per_system.items():
        total = sum(counter.values())
        rows.append({"system": system, "total": total,
                     "counts": [{"label": l, "n": counter[l], "share": counter[l] / total if total else 0.0} for l in labels]})
    first = labels[0] if labels else None
    rows.sort(key=lambda r: (-(r["counts"][0]["share"] if first else 0), r["system"]))
    return {"protocol": protocol, "labels": labels, "rows": rows}


# --------------------------------------------------------------------------- agreement statistics


def _level(values: list[Any]) -> tuple[str, list[Any]]:
    """Krippendorff level for a set of labels: nominal for words, ordinal for 0/1/2 grades,
    interval for other numbers (1–5 scores); numeric labels are returned as numbers."""
    numbers = []
    for value in values:
        try:
            numbers.append(float(value))
        except (TypeError, ValueError):
            return "nominal", [str(v) for v in values]
    if not numbers:
        return "nominal", []
    if set(numbers) <= {0.0, 1.0, 2.0} and 0.0 in numbers:
        return "ordinal", numbers
    return "interval", numbers


def _reading(value: float | None) -> str:
    return "" if value is None else m.landis_koch(max(-1.0, min(1.0, value)))


class Ratings(NamedTuple):
    """One row per label as parallel arrays: what the agreement statistics need and no more."""

    unit: np.ndarray  # integers: the unit (item) rated
    coder: np.ndarray  # integers: who rated it
    code: np.ndarray  # integers: index into ``categories``
    categories: list  # the distinct label keys, in first-seen order


class _IntColumn:
    """An integer array filled chunk by chunk into room reserved up front (no list of chunks to
    join at the end): int32 while the values fit, which halves the memory of a million labels
    in a web process, int64 from the first value that does not."""

    def __init__(self, capacity: int) -> None:
        self.array, self.size = np.empty(max(capacity, 1), dtype=np.int32), 0

    def extend(self, values) -> None:
        chunk = np.array(values, dtype=np.int64)
        if self.array.dtype == np.int32 and chunk.size and not (_INT32.min <= chunk.min() and chunk.max() <= _INT32.max):
            self.array = self.array.astype(np.int64)
        end = self.size + chunk.size
        if end > self.array.size:  # more rows than expected (labels added meanwhile)
            grown = np.empty(max(end, 2 * self.array.size), dtype=self.array.dtype)
            grown[: self.size] = self.array[: self.size]
            self.array = grown
        self.array[self.size:end] = chunk
        self.size = end

    def values(self) -> np.ndarray:
        return self.array[: self.size]


_INT32 = np.iinfo(np.int32)


def _ratings_from_units(units: dict[Any, dict[Any, Any]]) -> tuple[Ratings, list]:
    """``{unit: {annotator: label}}`` as ``Ratings`` (units and annotators numbered 0..n−1),
    and the annotators in the order of their numbers."""
    unit_ids: dict[Any, int] = {}
    coder_ids: dict[Any, int] = {}
    categories: dict[tuple, int] = {}
    rows: list[tuple[int, int, int]] = []
    for unit, labels in units.items():
        for annotator, label in labels.items():
            code = categories.setdefault((type(label), label), len(categories))
            rows.append((unit_ids.setdefault(unit, len(unit_ids)), coder_ids.setdefault(annotator, len(coder_ids)), code))
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return Ratings(arr[:, 0], arr[:, 1], arr[:, 2], [label for _, label in categories]), list(coder_ids)


def ratings_stats(ratings: Ratings, *, nominal: bool = False) -> dict:
    """Inter-annotator agreement over ``ratings``: Krippendorff's α always, Fleiss' κ when every
    unit has the same number (≥ 2) of labels, Cohen's κ per annotator pair (``a``/``b`` are coder
    ids here; ``named_stats`` turns them into names and orders the pairs).

    Works on integer arrays in memory proportional to the number of labels: α and κ come from
    the one-row-per-rating forms in ``scoring.metrics``, Cohen's κ from each pair's shared units
    found by binary search in the coders' sorted units."""
    unit, coder, code = ratings.unit, ratings.coder, ratings.code
    level, converted = ("nominal", [str(v) for v in ratings.categories]) if nominal else _level(ratings.categories)
    if converted:
        # Labels that differ as keys but convert to the same value (1 and 1.0) are one category.
        distinct, merged = np.unique(np.array(converted, dtype=float if level != "nominal" else str), return_inverse=True)
        code = merged.ravel()[code]
    unit_ids, per_unit = np.unique(unit, return_counts=True)
    n_pairable = int((per_unit >= 2).sum())
    out = {"n_units": int(unit_ids.size), "n_pairable": n_pairable, "n_labels": int(unit.size),
           "n_annotators": int(np.unique(coder).size), "level": level, "alpha": None, "alpha_reading": "",
           "fleiss": None, "fleiss_reading": "", "fleiss_note": "", "pairs": []}
    if not n_pairable:
        out["note"] = "no item was labelled by two annotators, so agreement cannot be measured"
        return out
    out["alpha"] = m.krippendorff_alpha_units(unit, code if level == "nominal" else distinct[code], level=level)
    out["alpha_reading"] = _reading(out["alpha"])
    if (per_unit == per_unit[0]).all() and per_unit[0] >= 2:
        out["fleiss"] = m.fleiss_kappa_units(unit, code)
        out["fleiss_reading"] = _reading(out["fleiss"])
    else:
        out["fleiss_note"] = "items have different numbers of labels"
    order = np.lexsort((unit, coder))
    coders, starts = np.unique(coder[order], return_index=True)
    bounds = [*starts[1:], order.size]
    by_coder = [(unit[order[a:b]], code[order[a:b]]) for a, b in zip(starts, bounds)]
    for i, j in combinations(range(coders.size), 2):
        (units_a, codes_a), (units_b, codes_b) = by_coder[i], by_coder[j]
        at = np.minimum(np.searchsorted(units_a, units_b), units_a.size - 1)
        shared = units_a[at] == units_b
        n_shared = int(shared.sum())
        if not n_shared:
            continue
        kappa = m.cohen_kappa(codes_a[at[shared]], codes_b[shared])
        out["pairs"].append({"a": int(coders[i]), "b": int(coders[j]), "n": n_shared, "kappa": kappa,
                             "reading": _reading(kappa)})
    return out


def named_stats(stats: dict, names: dict[Any, str]) -> dict:
    """``ratings_stats`` with annotator names in its pairs, ordered as the names sort."""
    def name(coder):
        return names.get(coder, coder)

    rank = {c: r for r, c in enumerate(sorted({p[k] for p in stats["pairs"] for k in "ab"},
                                              key=lambda c: (str(name(c)), c)))}
    pairs = []
    for pair in stats["pairs"]:
        a, b = sorted((pair["a"], pair["b"]), key=rank.__getitem__)
        pairs.append((rank[a], rank[b], {**pair, "a": name(a), "b": name(b)}))
    return {**stats, "pairs": [p for *_, p in sorted(pairs, key=lambda p: p[:2])]}


def agreement_stats(units: dict[Any, dict[Any, Any]], names: dict[Any, str] | None = None, *, nominal: bool = False) -> dict:
    """Inter-annotator agreement over ``{unit: {annotator: label}}`` (``ratings_stats``)."""
    ratings, annotators = _ratings_from_units(units)
    names = names or {}
    return named_stats(ratings_stats(ratings, nominal=nominal), {i: names.get(a, a) for i, a in enumerate(annotators)})


def _label_key(kind: str, value: dict) -> Any:
    key = consensus_key(kind, value)
    return key if isinstance(key, (str, int, float)) else json.dumps(key, sort_keys=True)


# The parts of a label's value its consensus key reads (``consensus_key``), per project kind.
_KEY_FIELDS = {
    AnnotationProject.Kind.VERIFY: ("decision",),
    AnnotationProject.Kind.PAIRWISE: ("choice", "left_report_id", "right_report_id"),
    AnnotationProject.Kind.AGREEMENT: ("label",),
}
RATINGS_CHUNK = 20_000
IAA_CACHE_SECONDS = 7 * 24 * 3600
IAA_REFRESH_SECONDS = 300  # at most one queued refresh per project in this time


def _key_of_parts(kind: str, parts: tuple) -> Any:
    """The label key (``_label_key``) from the text parts ``_project_ratings`` reads. Text is
    enough: verify and pairwise keys are compared as strings, agreement labels are strings or
    numbers whose text ``_level`` reads the same way."""
    if kind == AnnotationProject.Kind.VERIFY:
        decision, edited = parts
        return _label_key(kind, json.loads(edited) if edited is not None else {"decision": decision})
    return _label_key(kind, dict(zip(_KEY_FIELDS[kind], parts)))


def _project_ratings(project: dict, *, expected: int = 0) -> Ratings:
    """A project's labels as ``Ratings``: one streamed query of (item, annotator, the value's key
    fields as text), so neither model rows nor decoded JSON values are held in memory; the
    consensus key is computed once per distinct combination of fields. ``expected``: about how
    many labels there are (the items' counters), the room reserved for them."""
    kind = project["kind"]
    parts = {f"k_{f}": Cast(KT(f"value__{f}"), TextField()) for f in _KEY_FIELDS[kind]}
    if kind == AnnotationProject.Kind.VERIFY:  # the edits count only for an edit (``consensus_key``): read no others
        parts["k_edited"] = Case(When(value__decision="edit", then=Cast("value", TextField())), default=Value(None),
                                 output_field=TextField())
    rows = (Label.objects.filter(project_id=project["id"]).order_by().annotate(**parts)
            .values_list("item_id", "annotator_id", *parts).iterator(chunk_size=RATINGS_CHUNK))
    codes: dict[tuple, int] = {}  # text parts → category
    categories: dict[tuple, int] = {}  # (type, key) → category: parts that make the same key share it
    keys: list = []
    units, coders, coded = (_IntColumn(expected) for _ in range(3))
    while chunk := list(islice(rows, RATINGS_CHUNK)):
        item_ids, annotator_ids, *columns = zip(*chunk)
        units.extend(item_ids)
        coders.extend(annotator_ids)
        raw = list(zip(*columns))
        found = list(map(codes.get, raw))
        for i in [i for i, code in enumerate(found) if code is None]:
            if raw[i] not in codes:
                key = _key_of_parts(kind, raw[i])
                codes[raw[i]] = categories.setdefault((type(key), key), len(keys))
                if len(categories) > len(keys):
                    keys.append(key)
            found[i] = codes[raw[i]]
        coded.extend(found)
    return Ratings(units.values(), coders.values(), coded.values(), keys)


def _curated_projects(user, *, with_fingerprint: bool = False, only: int | None = None) -> list[dict]:
    """Projects whose agreement ``user`` may see: all for global curators, else those they curate
    (or just project ``only``, for a worker).

    ``with_fingerprint`` adds ``n_labels`` (the items' label counters, which the label services
    keep in the same transaction as the labels) and ``last_label`` (the newest label id): labels
    are only ever added or deleted, never edited, and ids only grow, so any change to a project's
    labels changes this pair. Both avoid counting the labels themselves (0.7 s at 1M labels):
    the counters are one per item, and the newest id is one step in the (project, id) index,
    asked per project: inside one query the planner cannot see how few labels an old project
    has and walks the primary key back through every label added since."""
    projects = AnnotationProject.objects.order_by("name")
    if only is not None:  # one project, whoever asks (a worker's refresh)
        projects = projects.filter(pk=only)
    elif not is_global_curator(user):
        projects = projects.filter(pk__in=ProjectMembership.objects.filter(user=user, role=Role.CURATOR).values("project"))
    fields = ["id", "name", "kind", "judge_config_id"]
    if not with_fingerprint:
        return list(projects.values(*fields)[:500])
    counters = AnnotationItem.objects.filter(project=OuterRef("pk")).order_by().values("project")
    rows = list(projects.annotate(n_labels=Subquery(counters.annotate(n=Sum("labels_done")).values("n")))
                .values(*fields, "n_labels")[:500])
    for row in rows:
        newest = Label.objects.filter(project_id=row["id"]).order_by("-pk").values_list("pk", flat=True)
        row["last_label"] = newest.first() if row["n_labels"] else 0
    return rows


def _iaa_key(project_id: int) -> str:
    return f"dashboards:iaa:2:{project_id}"


def _agreement_compute(project: dict, fingerprint: list[int]) -> dict:
    ratings = _project_ratings(project, expected=fingerprint[0])
    stats = ratings_stats(ratings, nominal=project["kind"] != AnnotationProject.Kind.AGREEMENT)
    cache.set(_iaa_key(project["id"]), {"fingerprint": fingerprint, "stats": stats}, timeout=IAA_CACHE_SECONDS)
    cache.delete(_iaa_key(project["id"]) + ":refreshing")
    return stats


def project_agreement_refresh(*, project_id: int) -> dict | None:
    """Compute one project's agreement figures and cache them with the fingerprint they are of
    (a worker's job when the dashboard found them stale)."""
    project = next(iter(_curated_projects(None, with_fingerprint=True, only=project_id)), None)
    if project is None:
        return None
    return _agreement_compute(project, [project.pop("n_labels") or 0, project.pop("last_label") or 0])


def inter_annotator(*, user) -> dict:
    """Per project: agreement of its annotators' labels (``ratings_stats``).

    A project's figures are cached with the fingerprint of its labels (``_curated_projects``).
    Unchanged: served from the cache, no query of its labels. Changed since: the cached figures
    are served at once, marked with how many labels they are of, and one refresh per project
    is queued for a worker (``annotation.refresh_project_agreement``) — at 1M labels a
    recomputation takes seconds, too long for a page. Never computed, or no worker alive:
    computed here."""
    from scoring.workers import live_workers

    projects = _curated_projects(user, with_fingerprint=True)
    cached = cache.get_many([_iaa_key(p["id"]) for p in projects])
    out, workers_alive = [], None
    for project in projects:
        fingerprint = [project.pop("n_labels") or 0, project.pop("last_label") or 0]
        entry = cached.get(_iaa_key(project["id"]))
        if entry is not None and entry["fingerprint"] != fingerprint:
            if workers_alive is None:
                workers_alive = bool(live_workers())
            if workers_alive:
                if cache.add(_iaa_key(project["id"]) + ":refreshing", 1, timeout=IAA_REFRESH_SECONDS):
                    from annotation.tasks import refresh_project_agreement

                    refresh_project_agreement.delay(project["id"])
                project["stale_of_labels"] = entry["fingerprint"][0]
                out.append((project, entry["stats"]))
                continue
            entry = None
        stats = entry["stats"] if entry is not None else _agreement_compute(project, fingerprint)
        out.append((project, stats))
    coder_ids = {p[k] for _, stats in out for p in stats["pairs"] for k in "ab"}
    names = dict(get_user_model().objects.filter(pk__in=coder_ids).values_list("pk", "username")) if coder_ids else {}
    return {"projects": [{**project, "stats": named_stats(stats, names)} for project, stats in out],
            "visible": bool(projects)}


def judge_agreement(*, user, limit: int = DISAGREEMENT_LIMIT) -> dict:
    """Judge vs people on agreement projects, per judge configuration and step.

    Reference label of an item: the curator's ``GoldLabel`` when adjudicated, else the
    annotators' label when they all agree; items whose annotators disagree and have no gold
    yet are counted as unresolved and left out. Accuracy (``percent_agreement``), Cohen's κ,
    Krippendorff's α (level from the labels), a confusion matrix and the disagreements; and the
    same figures per prompt version of the judged verdicts (``versions``), oldest first, to see
    whether a prompt change moved the judge towards or away from people."""
    projects = [p for p in _curated_projects(user) if p["kind"] == AnnotationProject.Kind.AGREEMENT]
    project_ids = [p["id"] for p in projects]
    items = AnnotationItem.objects.filter(project_id__in=project_ids, target_kind="verdict")
    item_rows = list(items.values_list("id", "project_id", "project__name", "target_id", "gold__value"))
    labels: dict[int, list] = defaultdict(list)
    for item_id, value in Label.objects.filter(item__in=items).values_list("item_id", "value"):
        labels[item_id].append(value.get("label"))
    verdicts = {
        row[0]: row for row in Verdict.objects.filter(pk__in=items.values("target_id")).values_list(
            "id", "judge_config_id", "judge_config__name", "step", "label", "report__system__name", "report_id",
            "target_kind", "target_id", "target_key", "prompt_version", "created_at",
        )
    }
    groups: dict[tuple, dict] = {}
    for item_id, project_id, project_name, verdict_id, gold in item_rows:
        verdict = verdicts.get(verdict_id)
        if verdict is None:
            continue
        _, config_id, config_name, step, judge_label, system, report_id, t_kind, t_id, t_key, version, made = verdict
        group = groups.setdefault((config_name, step), {"judge": config_name, "judge_id": config_id, "step": step,
                                                         "pairs": [], "unresolved": 0, "unlabelled": 0, "n_labels": 0})
        given = [label for label in labels.get(item_id, []) if label is not None]
        group["n_labels"] += len(given)
        if gold and gold.get("label") is not None:
            reference, source = gold["label"], "gold"
        elif given and len(set(given)) == 1:
            reference, source = given[0], "annotators" if len(given) > 1 else "annotator"
        elif given:
            group["unresolved"] += 1
            continue
        else:
            group["unlabelled"] += 1
            continue
        group["pairs"].append({"item_id": item_id, "project_id": project_id, "project": project_name,
                               "judge": judge_label, "reference": reference, "source": source, "system": system,
                               "report_id": report_id, "target": f"{t_kind} #{t_id}{' ' + t_key if t_key else ''}",
                               "prompt_version": version, "made": made})
    out = []
    for key in sorted(groups):
        group = groups[key]
        pairs = group.pop("pairs")
        group["n"] = len(pairs)
        group["versions"] = []
        if pairs:
            group.update(_judge_vs_reference(pairs))
            by_version: dict[str, list[dict]] = defaultdict(list)
            for pair in pairs:
                by_version[pair["prompt_version"]].append(pair)
            # oldest first: the order in which the prompt versions were used
            for version, version_pairs in sorted(by_version.items(), key=lambda kv: (min(p["made"] for p in kv[1]), kv[0])):
                group["versions"].append({"prompt_version": version, "n": len(version_pairs),
                                          **_judge_vs_reference(version_pairs)})
            categories = sorted({str(p["judge"]) for p in pairs} | {str(p["reference"]) for p in pairs})
            cells = Counter((str(p["judge"]), str(p["reference"])) for p in pairs)
            group["confusion"] = {"labels": categories,
                                  "rows": [{"label": j, "counts": [cells[(j, r)] for r in categories]} for j in categories]}
            disagreements = [p for p in pairs if str(p["judge"]) != str(p["reference"])]
            group["n_disagreements"] = len(disagreements)
            group["disagreements"] = [{k: v for k, v in p.items() if k != "made"} for p in disagreements[:limit]]
        out.append(group)
    return {"groups": out, "n_projects": len(projects)}


def _judge_vs_reference(pairs: list[dict]) -> dict:
    """Accuracy, Cohen's κ and Krippendorff's α of judge labels against reference labels."""
    level, values = _level([p["judge"] for p in pairs] + [p["reference"] for p in pairs])
    judged, reference = values[: len(pairs)], values[len(pairs):]
    kappa = m.cohen_kappa(judged, reference)
    matrix = np.array([judged, reference], dtype=object if level == "nominal" else float)
    alpha = m.krippendorff_alpha(matrix, level=level)
    return {"level": level, "accuracy": m.percent_agreement(judged, reference), "kappa": kappa,
            "kappa_reading": _reading(kappa), "alpha": alpha, "alpha_reading": _reading(alpha)}


# --------------------------------------------------------------------------- human ranking


def preference_sources() -> list[dict]:
    return list(PairwisePreference.objects.values("source", "component").annotate(n=Count("pk")).order_by("source", "component"))


def _preference_rows(*, source: str = "", component: str = "") -> list[tuple]:
    prefs = PairwisePreference.objects.all()
    if source:
        prefs = prefs.filter(source=source)
    if component:
        prefs = prefs.filter(component=component)
    return list(prefs.order_by("pk").values_list(
        "report_left__system_id", "report_left__system__name", "report_left__system__version",
        "report_right__system_id", "report_right__system__name", "report_right__system__version",
        "choice", "annotator_id", "annotator__username", "task_id", "report_left_id", "report_right_id",
    ))


def _pair_agreement(rows: list[tuple]) -> dict:
    """Do several annotators judge the same pair? ``agreement_stats`` over those that do."""
    units: dict[tuple, dict[int, Any]] = defaultdict(dict)
    names = {}
    for *_, choice, annotator_id, username, task_id, left, right in rows:
        names[annotator_id] = username
        preferred = {"left": left, "right": right}.get(choice, "tie")
        units[(task_id, frozenset((left, right)))][annotator_id] = str(preferred)
    shared = sum(1 for labels in units.values() if len(labels) >= 2)
    stats = agreement_stats(units, names, nominal=True)
    return {"n_pairs": len(units), "n_shared": shared, "n_annotators": len(names), "stats": stats}


def _bt_bootstrap(comparisons: list[tuple], n_items: int, n_resamples: int) -> dict:
    """``bradley_terry_bootstrap`` (seed 0), memoised in the cache by the exact comparisons: the
    result is a pure function of them, and 1000 refits take about a second."""
    arr = np.asarray(comparisons, dtype=float)
    key = "dashboards:bt:" + hashlib.sha256(arr.tobytes() + f"{n_items}:{n_resamples}".encode()).hexdigest()
    cached = cache.get(key)
    if cached is None:
        bt = m.bradley_terry_bootstrap(arr, n_items=n_items, n_resamples=n_resamples, seed=0)
        cached = {k: bt[k] for k in ("estimate", "low", "high")}
        cache.set(key, cached, timeout=24 * 3600)
    return cached


def imported_agreement() -> list[dict]:
    """For each (source, component) of imported preferences: do annotators judge the same pairs,
    and how well do they agree on those they share (one query for all)."""
    rows = PairwisePreference.objects.filter(project__isnull=True).order_by("pk").values_list(
        "source", "component", "report_left__system_id", "report_left__system__name", "report_left__system__version",
        "report_right__system_id", "report_right__system__name", "report_right__system__version",
        "choice", "annotator_id", "annotator__username", "task_id", "report_left_id", "report_right_id",
    )
    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for row in rows:
        groups[(row[0], row[1])].append(row[2:])
    return [{"source": src, "component": comp, "n": len(group), **_pair_agreement(group)}
            for (src, comp), group in sorted(groups.items())]


def human_ranking(*, source: str = "", component: str = "", n_resamples: int = N_RESAMPLES,
                  with_correlations: bool = True) -> dict:
    """Bradley–Terry strengths of systems from pairwise preferences (left win 1, right win 0,
    tie ½) with bootstrap intervals over comparisons (``bradley_terry_bootstrap``), Chatbot
    Arena ranks (``rank_with_ci``), and, per automated metric where the systems overlap,
    Spearman ρ, Kendall τ-b and pairwise concordance with the human strengths (SurveyLens Table 7)."""
    rows = _preference_rows(source=source, component=component)
    names: dict[int, str] = {}
    for lid, lname, lver, rid, rname, rver, *_ in rows:
        names[lid] = system_label(lname, lver)
        names[rid] = system_label(rname, rver)
    ids = sorted(names, key=lambda i: names[i])
    index = {sid: i for i, sid in enumerate(ids)}
    comparisons, wins, losses, ties = [], Counter(), Counter(), Counter()
    skipped = 0
    for lid, _, _, rid, _, _, choice, *_ in rows:
        if lid == rid:
            skipped += 1
            continue
        outcome = {"left": 1.0, "right": 0.0, "tie": 0.5}[choice]
        comparisons.append((index[lid], index[rid], outcome))
        if outcome == 0.5:
            ties[lid] += 1
            ties[rid] += 1
        else:
            winner, loser = (lid, rid) if outcome == 1.0 else (rid, lid)
            wins[winner] += 1
            losses[loser] += 1
    out = {"n_comparisons": len(comparisons), "skipped_same_system": skipped, "systems": [], "correlations": [],
           "agreement": _pair_agreement(rows), "source": source, "component": component,
           "n_annotators": len({r[7] for r in rows})}
    if not comparisons:
        return out
    bt = _bt_bootstrap(comparisons, len(ids), n_resamples)
    ranks = m.rank_with_ci(bt["low"], bt["high"])
    elo = {key: m.to_elo_scale(bt[key]) for key in ("estimate", "low", "high")}
    systems = [
        {"system_id": sid, "system": names[sid], "theta": float(bt["estimate"][i]), "low": float(bt["low"][i]),
         "high": float(bt["high"][i]), "elo": float(elo["estimate"][i]), "elo_low": float(elo["low"][i]),
         "elo_high": float(elo["high"][i]), "rank": int(ranks[i]), "wins": wins[sid], "losses": losses[sid],
         "ties": ties[sid], "n": wins[sid] + losses[sid] + ties[sid]}
        for i, sid in enumerate(ids)
    ]
    systems.sort(key=lambda s: (s["rank"], -s["theta"], s["system"]))
    out["systems"] = systems
    if with_correlations:
        out["correlations"] = correlations_with(systems, automated_scores(n_resamples=n_resamples))
    return out


def correlations_with(human: list[dict], automated: dict[str, dict]) -> list[dict]:
    """Spearman, Kendall and concordance between human BT strength and each metric's system means."""
    strength = {s["system_id"]: s["theta"] for s in human}
    out = []
    for protocol, board in automated.items():
        for metric in board["metrics"]:
            pairs = []
            for row in board["rows"]:
                cell = next(c for c in row["cells"] if c["metric"] == metric["key"])
                if row["system_id"] in strength and not cell["empty"]:
                    pairs.append((row["system"], strength[row["system_id"]], cell["estimate"]))
            if len(pairs) < 3:
                continue
            x = [p[1] for p in pairs]
            y = [p[2] for p in pairs]
            out.append({
                "protocol": protocol, "metric": metric["key"], "label": metric["label"], "n": len(pairs),
                "spearman": m.spearman(x, y), "kendall": m.kendall_tau(x, y), "concordance": m.pairwise_concordance(x, y),
                "points": [{"system": p[0], "human": p[1], "metric": p[2]} for p in pairs],
                "percent": board["percent"],
            })
    return out


# --------------------------------------------------------------------------- shaping shared by pages and API


def leaderboard_public(board: dict) -> dict:
    """A leaderboard without its working objects (``systems``: per-task values behind the cells)."""
    return {k: v for k, v in board.items() if k != "systems"}


def human_vs_automated(*, source: str = "", component: str = "", metric: str = "",
                       n_resamples: int = N_RESAMPLES) -> dict:
    """The human ranking's correlation with one automated metric (``protocol:metric``, the first by default)."""
    ranking = human_ranking(source=source, component=component, n_resamples=n_resamples)
    options = [f'{c["protocol"]}:{c["metric"]}' for c in ranking["correlations"]]
    chosen = metric or (options[0] if options else "")
    corr = next((c for c in ranking["correlations"] if f'{c["protocol"]}:{c["metric"]}' == chosen), None)
    return {"metric": chosen, "options": options, "correlation": corr, "correlations": ranking["correlations"]}


def jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars and arrays as numbers and lists, non-finite floats as null,
    tuples as lists, mapping keys as strings."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
