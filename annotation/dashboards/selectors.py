"""Reads behind the dashboards: leaderboards, verdict breakdowns, chart data (human rankings are in
``human``, agreement in ``agreement``).

Every figure is computed by ``scoring.metrics`` over stored rows (``ScoreCard``,
``Verdict``); this module only
selects the rows (a fixed number of queries whatever their number) and arranges
them into the arrays those functions take.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, NamedTuple

import numpy as np
from django.db.models import Count

from benchmark.models import Protocol, TaskSet
from benchmark.naming import system_label
from scoring import metrics as m
from scoring.metric_names import NOT_METRICS, PERCENT_PROTOCOLS, headline_metrics, metric_label
from scoring.models import EvaluationRun, ScoreCard, Verdict

# Metrics computed from a system's other metric means, never averaged over tasks: DeepScholar's
# Table 2 geometric mean (``geometric_means_over_common``, as the run's system cards compute it).
DERIVED_METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    Protocol.DEEPSCHOLAR: ("geometric_mean", m.TABLE2_METRICS),
}
# Ratios whose system value pools the counts of all tasks rather than averaging the task values:
# DeepSynth precision, eq. 7 over every mentioned item (the ``precision`` variant ``per_report``
# averages instead).
POOLED_METRICS: dict[str, tuple[str, ...]] = {Protocol.DEEPSYNTH: ("precision",)}
# SciSage's released reference scorer pools TP, |A| and |B| over papers (``m.pooled_reference_prf``): a
# system whose cards all computed the ``scisage_upstream`` variant is shown that pooled value.
POOLED_REFERENCE_METRICS: dict[str, dict[str, str]] = {
    Protocol.SURVEYSCOPE: {"reference_precision": "precision", "reference_recall": "recall", "reference_f1": "f1"},
}
SIGNIFICANCE = 0.05
MIN_TEST_TASKS = 5  # no best-vs-second test on fewer shared tasks
N_RESAMPLES = 1000
VERDICT_ORDER = ("correct", "omitted", "incorrect")


def _number(value: Any) -> float | None:
    if isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value)):
        return float(value)
    return None


def _mean_of_rows(data: np.ndarray) -> Any:
    """Mean over the last axis: ``bootstrap_ci``'s statistic (vectorised, one result per resample)."""
    return data.mean(axis=-1)


def _pooled_percent(data: np.ndarray) -> Any:
    """100 · Σ correct / Σ (correct + incorrect) over the task axis of (…, tasks, 2) count rows."""
    totals = data.sum(axis=-2)
    return 100.0 * totals[..., 0] / totals.sum(axis=-1)


def _has_counts(metrics: dict) -> bool:
    return _number(metrics.get("correct")) is not None and _number(metrics.get("incorrect")) is not None


def precision_variant(metrics: Sequence[dict]) -> str:
    """The DeepSynth precision variant for a system's report cards: ``per_report`` only when every
    card's run chose it (``variants.precision``), else the paper's ``pooled``."""
    chosen = {(c.get("variants") if isinstance(c.get("variants"), dict) else {}).get("precision", "pooled")
              for c in metrics}
    return "per_report" if chosen == {"per_report"} else "pooled"


def precision_over_cards(metrics: Sequence[dict]) -> float | None:
    """DeepSynth eq. 7 for one system over report cards' metrics (``m.system_precision`` with
    ``precision_variant``); ``None`` when a card lacks its counts or nothing was mentioned."""
    if not metrics or not all(_has_counts(c) for c in metrics):
        return None
    return m.system_precision([int(c["correct"]) for c in metrics], [int(c["incorrect"]) for c in metrics],
                              variant=precision_variant(metrics))


def _pooled_precision(scores: SystemScores, n_resamples: int) -> dict | None:
    """DeepSynth eq. 7 pooled over the system's tasks (``precision_over_cards``), with a bootstrap
    over the tasks that mentioned an item (the others add nothing to either sum); ``None`` — the
    mean of the task values then — when the system's runs chose ``per_report``, a card lacks its
    counts, or no task mentioned an item."""
    value = precision_over_cards(scores.cards)
    if value is None or precision_variant(scores.cards) == "per_report":
        return None
    rows = np.array([(c["correct"], c["incorrect"]) for c in scores.cards], dtype=float)
    rows = rows[rows.sum(axis=1) > 0]
    ci = m.bootstrap_ci(_pooled_percent, rows, n_resamples=n_resamples, seed=0, vectorized=True)
    return {"estimate": value, "low": ci["low"], "high": ci["high"], "n_tasks": len(rows), "pooled": True}


def _pooled_reference_ratios(data: np.ndarray) -> Any:
    """Precision, recall and F1 of (TP, |A|, |B|) count rows summed over the task axis (…, tasks, 3);
    an empty denominator gives 0, as ``m.pooled_reference_prf`` does."""
    totals = data.sum(axis=-2)
    tp, predicted, gold = totals[..., 0], totals[..., 1], totals[..., 2]
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    recall = np.divide(tp, gold, out=np.zeros_like(tp), where=gold > 0)
    both = precision + recall
    f1 = np.divide(2 * precision * recall, both, out=np.zeros_like(tp), where=both > 0)
    return np.stack([precision, recall, f1], axis=-1)


def _pooled_reference(scores: SystemScores, key: str, field: str, n_resamples: int) -> dict | None:
    """SciSage's released aggregate (``scisage_upstream``): ``field`` of the counts pooled over the
    system's tasks, with a bootstrap over those tasks; ``None`` (the mean of the task values) unless
    every card with reference counts computed that variant."""
    cards = [c for c in scores.cards if all(_number(c.get(k)) is not None
                                            for k in ("reference_tp", "references", "gold_references"))]
    if not cards or any((c.get("variants") or {}).get("references") != "scisage_upstream" for c in cards):
        return None
    pooled = m.pooled_reference_prf([int(c["reference_tp"]) for c in cards], [int(c["references"]) for c in cards],
                                    [int(c["gold_references"]) for c in cards])
    rows = np.array([(c["reference_tp"], c["references"], c["gold_references"]) for c in cards], dtype=float)
    column = ("precision", "recall", "f1").index(field)
    ci = m.bootstrap_ci(lambda d: _pooled_reference_ratios(d)[..., column], rows, n_resamples=n_resamples, seed=0,
                        vectorized=True)
    return {"estimate": pooled[field], "low": ci["low"], "high": ci["high"], "n_tasks": len(rows), "pooled": True,
            "pooled_note": "TP, references and gold references pooled over the tasks (SciSage's released scorer)"}


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
    system_display_name: str


def _report_cards(*, protocol: str | None, run_id: int | None = None, task_set_id: int | None = None,
                  judge_config_ids: Sequence[int] = (), task_ids: Sequence[int] | None = None) -> list[CardRow]:
    """Report-level cards, newest run first, one per (protocol, system, task) — and per judge
    configuration when ``judge_config_ids`` are given: one query. ``task_ids``: only these tasks."""
    cards = ScoreCard.objects.filter(report__isnull=False)
    if protocol:
        cards = cards.filter(run__protocol=protocol)
    if run_id:
        cards = cards.filter(run_id=run_id)
    if task_set_id:
        cards = cards.filter(report__task__task_sets=task_set_id)
    if judge_config_ids:
        cards = cards.filter(run__judge_config_id__in=list(judge_config_ids))
    if task_ids is not None:
        cards = cards.filter(report__task_id__in=list(task_ids))
    rows = cards.order_by("-run__created_at", "-run_id", "pk").values_list(
        "run__protocol", "run_id", "run__judge_config__name", "system_id", "system__name", "system__version",
        "report__task_id", "report__task__key", "metrics", "items_judged", "items_failed", "report_id",
        "run__judge_config_id", "run__judge_config__prompt_version", "report__task__survey__discipline__name",
        "system__display_name",
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
    cards: list[dict] = field(default_factory=list)  # the report cards' metrics, one per task


def _collect(cards: list[tuple]) -> tuple[list[str], dict[int, SystemScores], set[int], set[str]]:
    systems: dict[int, SystemScores] = {}
    keys: set[str] = set()
    runs: set[int] = set()
    judges: set[str] = set()
    for card in cards:
        _protocol, run_id, judge, system_id, name, version, task_id, _key, metrics, judged, failed, *_ = card
        runs.add(run_id)
        judges.add(judge)
        scores = systems.setdefault(system_id, SystemScores(system_id, system_label(name, version, card.system_display_name)))
        scores.tasks.add(task_id)
        scores.items_judged += judged
        scores.items_failed += failed
        metrics = metrics or {}
        scores.cards.append(metrics)
        for key, value in metrics.items():
            number = _number(value)
            if key in NOT_METRICS or number is None:
                continue
            keys.add(key)
            scores.values[key][task_id] = number
    return sorted(keys), systems, runs, judges


def _best_vs_second(metric: str, ranked: list[SystemScores]) -> dict | None:
    """DeepScholar Table 2's mark: paired t-test of the best against the second over their shared
    tasks, only with at least ``MIN_TEST_TASKS`` of them (``p_value`` raw; ``_summarise`` adds
    the Holm-adjusted ``p_holm`` and decides ``significant``)."""
    if len(ranked) < 2:
        return None
    best, second = ranked[0], ranked[1]
    shared = sorted(set(best.values[metric]) & set(second.values[metric]))
    out = {"best": best.system_id, "second": second.system_id, "n_shared": len(shared), "p_value": None,
           "p_holm": None, "significant": False, "mean_difference": None,
           "note": "" if len(shared) >= MIN_TEST_TASKS else f"not tested: fewer than {MIN_TEST_TASKS} shared tasks"}
    if len(shared) < MIN_TEST_TASKS:
        return out
    test = m.paired_t_test([best.values[metric][t] for t in shared], [second.values[metric][t] for t in shared])
    out.update(p_value=test["p_value"], mean_difference=test["mean_difference"])
    return out


def _holm(tests: dict[str, dict | None]) -> None:
    """Holm's correction across the metrics of one table; a best system is marked significant when
    its adjusted p is below ``SIGNIFICANCE`` and it leads on the shared tasks."""
    keys = [k for k, t in tests.items() if t and t["p_value"] is not None]
    for key, adjusted in zip(keys, m.holm_adjust([tests[k]["p_value"] for k in keys])):
        test = tests[key]
        test["p_holm"] = adjusted
        test["significant"] = bool(adjusted < SIGNIFICANCE and test["mean_difference"] > 0)


def _derived(protocol: str, summary: dict[int, dict[str, dict]], systems: dict[int, SystemScores]) -> dict:
    """The protocol's derived metric from the table's own means (``DERIVED_METRICS``); no interval."""
    key, inputs = DERIVED_METRICS[protocol]
    means = {sid: {k: cell["estimate"] for k, cell in cells.items()} for sid, cells in summary.items()}
    common = m.geometric_means_over_common(means, inputs)
    for sid, value in common["values"].items():
        summary[sid].pop(key, None)
        if value is not None:
            summary[sid][key] = {"estimate": value, "low": None, "high": None, "n_tasks": len(systems[sid].tasks)}
    return {"metric": key, "over": common["over"], "left_out": common["left_out"]}


def _summarise(protocol: str, cards: list[tuple], n_resamples: int) -> dict:
    keys, systems, runs, judges = _collect(cards)
    derived_key, inputs = DERIVED_METRICS.get(protocol, ("", ()))
    if derived_key and set(inputs) & set(keys):
        keys = sorted(set(keys) | {derived_key})
    metric_keys = headline_metrics(protocol, keys)
    summary: dict[int, dict[str, dict]] = {}
    for scores in systems.values():
        summary[scores.system_id] = {}
        for key in metric_keys:
            by_task = scores.values.get(key) or {}
            if by_task and key != derived_key:
                cell = _pooled_precision(scores, n_resamples) if key in POOLED_METRICS.get(protocol, ()) else None
                if key in POOLED_REFERENCE_METRICS.get(protocol, {}):
                    cell = _pooled_reference(scores, key, POOLED_REFERENCE_METRICS[protocol][key], n_resamples)
                if cell is None:
                    cell = _interval(list(by_task.values()), n_resamples)
                    cell["n_tasks"] = len(by_task)
                summary[scores.system_id][key] = cell
    derived = _derived(protocol, summary, systems) if derived_key in metric_keys else None
    tests = {}
    for key in metric_keys:
        if key == derived_key:  # no per-task values to test
            tests[key] = None
            continue
        ranked = sorted(
            (s for s in systems.values() if key in summary[s.system_id]),
            key=lambda s: (-summary[s.system_id][key]["estimate"], s.name),
        )
        tests[key] = _best_vs_second(key, ranked)
    _holm(tests)
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
        "systems": systems, "derived": derived,
    }


def leaderboard(*, protocol: str, run_id: int | None = None, task_set_id: int | None = None,
                n_resamples: int = N_RESAMPLES, task_ids: Sequence[int] | None = None) -> dict:
    """Systems × the protocol's metrics from report-level score cards (one per system and task,
    the newest run's when several runs scored it): mean with a percentile-bootstrap 95 % interval
    over tasks (``bootstrap_ci``), tasks and judged items behind it, and whether the best system
    beats the second at p < 0.05 (``paired_t_test`` over shared tasks). ``task_ids``: only these
    tasks (a human ranking's scope, ``human.correlations_in_scope``)."""
    return _summarise(protocol, _report_cards(protocol=protocol, run_id=run_id, task_set_id=task_set_id,
                                              task_ids=task_ids), n_resamples)


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
        verdicts.values_list("report__system__name", "report__system__version", "report__system__display_name",
                             "label", "error")
        .annotate(n=Count("pk")).order_by()
    )
    per_system: dict[str, Counter] = defaultdict(Counter)
    for name, version, display_name, label, error, n in counts:
        per_system[system_label(name, version, display_name)]["(failed)" if error or not label else label] += n
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


# --------------------------------------------------------------------------- shaping shared by pages and API


def leaderboard_public(board: dict) -> dict:
    """A leaderboard without its working objects (``systems``: per-task values behind the cells)."""
    return {k: v for k, v in board.items() if k != "systems"}


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
