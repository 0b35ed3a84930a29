"""The papers' figures rebuilt from stored rows: ReportBench Table 2 (recall by citation quartile),
DeepScholar-bench Fig. 5 (claim coverage against window size), SurveyLens Fig. 5 (discipline ×
system heatmap) and ReportBench A.2.4 (judge sensitivity).

Like ``selectors``, every number comes from ``scoring.metrics`` over report-level ``ScoreCard``
rows (newest card per system and task, ``_report_cards``), ``GoldReference``/``BibEntry`` rows
and ``Verdict`` rows, selected in a fixed number of queries. Bad parameters raise ``ValueError``
with a message naming the problem; the views answer 400 with it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from django.db.models import Max

from benchmark.models import GoldReference, Protocol, ReviewStatus
from benchmark.naming import system_label
from core.converters import id_from_text
from scoring import metrics as m
from scoring.models import JudgeConfig, Verdict
from scoring.pipelines.reportbench import REFERENCE_KIND

from scoring.metric_names import NOT_METRICS, PERCENT_PROTOCOLS, metric_label, ordered_metrics

from .selectors import (
    N_RESAMPLES,
    POOLED_METRICS,
    CardRow,
    _interval,
    _number,
    _report_cards,
    precision_over_cards,
)

QUARTILES = (1, 2, 3, 4)
COVERAGE_KEY = "claim_coverage_by_window"  # DeepScholar cards: {"0": x, "1": y, ...}
RUBRIC_COMPONENTS = ("rubric_outline", "rubric_content", "rubric_reference")
RUBRIC_OVERALL = "rubric_overall"
NO_DISCIPLINE = "(no discipline)"


def protocol_param(raw: str, default: str) -> str:
    """A ``protocol`` query parameter: empty means ``default``; an unknown name is refused, not replaced."""
    protocol = raw or default
    if protocol not in Protocol.values:
        raise ValueError(f"protocol: {protocol!r} is not one of {', '.join(Protocol.values)}")
    return protocol


def id_param(name: str, raw: str) -> int | None:
    """An id query parameter: empty means none; anything but an id in range is refused."""
    return id_from_text(name, raw)


def _system_order(cards: list[CardRow]) -> dict[int, str]:
    names = {c.system_id: system_label(c.system_name, c.system_version, c.system_display_name) for c in cards}
    return dict(sorted(names.items(), key=lambda kv: kv[1]))


# --------------------------------------------------------------------------- ReportBench Table 2


def _task_quartiles(refs: list[tuple[int, int | None, int | None]]) -> tuple[dict[int, int], str, int]:
    """Quartile of each gold reference (bib entry id → 1–4) of one task, how they were obtained,
    and how many references had to be left out.

    The paper (App. A.2.1) cuts each survey's references at the quartiles of their citation
    counts (``citation_quartiles``). When a curator or importer stored ``citation_quartile`` on
    the task's references, those are used as given; otherwise the quartiles are computed from
    ``BibEntry.citation_count``. References with neither cannot be placed and are left out."""
    stored = {bib: q for bib, _count, q in refs if q is not None}
    if stored:
        return stored, "stored", len(refs) - len(stored)
    counted = [(bib, count) for bib, count, _q in refs if count is not None]
    if not counted:
        return {}, "none", len(refs)
    quartiles = m.citation_quartiles([count for _, count in counted])
    return {bib: int(q) for (bib, _), q in zip(counted, quartiles, strict=True)}, "counts", len(refs) - len(counted)


def recall_by_quartile(*, run_id: int | None = None, task_set_id: int | None = None) -> dict:
    """Citation recall per reference-importance quartile and system (ReportBench App. A.2.1, Table 2).

    Within each task the gold references (not rejected) are split into Q1 (least cited) … Q4
    (most cited); per system, Q*k*'s recall is the share of all Q*k* references, pooled over the
    tasks the system has a report-level card for, that its report cited — a reference counts as
    cited when the card's judge configuration stored a ``matched`` reference verdict for it
    (``reportbench.references``). Three queries."""
    cards = _report_cards(protocol=Protocol.REPORTBENCH, run_id=run_id, task_set_id=task_set_id)
    task_ids = {c.task_id for c in cards}
    gold: dict[int, list[tuple]] = defaultdict(list)
    rows = (GoldReference.objects.filter(task_id__in=task_ids).exclude(review_status=ReviewStatus.REJECTED)
            .order_by("task_id", "position", "pk")
            .values_list("task_id", "bib_entry_id", "bib_entry__citation_count", "citation_quartile"))
    for task_id, bib_id, count, quartile in rows:
        gold[task_id].append((bib_id, count, quartile))
    placed = {task_id: _task_quartiles(refs) for task_id, refs in gold.items()}
    wanted = {(c.report_id, c.judge_config_id, c.prompt_version) for c in cards}
    matched: dict[int, set[int]] = defaultdict(set)
    verdicts = Verdict.objects.filter(report_id__in={c.report_id for c in cards}, target_kind=REFERENCE_KIND,
                                      label="matched", error="")
    for report_id, config_id, version, bib_id in verdicts.values_list(
            "report_id", "judge_config_id", "prompt_version", "raw_response__gold__bib_entry"):
        if (report_id, config_id, version) in wanted and isinstance(bib_id, int):
            matched[report_id].add(bib_id)
    names = _system_order(cards)
    totals = {sid: np.zeros(4, dtype=int) for sid in names}
    hits = {sid: np.zeros(4, dtype=int) for sid in names}
    tasks = defaultdict(int)
    for card in cards:
        quartiles = placed.get(card.task_id, ({}, "none", 0))[0]
        if not quartiles:
            continue
        tasks[card.system_id] += 1
        cited = matched.get(card.report_id, set())
        for bib_id, q in quartiles.items():
            totals[card.system_id][q - 1] += 1
            hits[card.system_id][q - 1] += bib_id in cited
    rows_out = []
    for sid, name in names.items():
        cells = [{"quartile": f"Q{q}", "n_references": int(totals[sid][q - 1]), "n_cited": int(hits[sid][q - 1]),
                  "recall": float(hits[sid][q - 1] / totals[sid][q - 1]) if totals[sid][q - 1] else None}
                 for q in QUARTILES]
        rows_out.append({"system_id": sid, "system": name, "n_tasks": tasks[sid], "cells": cells})
    sources = [source for _, source, _ in placed.values()]
    return {
        "rows": rows_out, "quartiles": [f"Q{q}" for q in QUARTILES], "n_tasks": len(task_ids),
        "n_tasks_without_gold": len(task_ids - set(gold)),
        "n_tasks_unplaced": sources.count("none"), "n_tasks_stored": sources.count("stored"),
        "n_tasks_counts": sources.count("counts"),
        "n_references_left_out": sum(left for _, source, left in placed.values() if source != "none"),
    }


# --------------------------------------------------------------------------- DeepScholar-bench Fig. 5


def _window(key: Any) -> int | None:
    text = str(key)
    return int(text) if text.isascii() and text.isdigit() else None


def coverage_by_window(*, run_id: int | None = None, task_set_id: int | None = None,
                       n_resamples: int = N_RESAMPLES) -> dict:
    """Mean claim coverage per window size w and system (DeepScholar-bench App., Fig. 5), with a
    percentile-bootstrap 95 % interval over tasks (``bootstrap_ci``), from the cards'
    ``claim_coverage_by_window``. Entries whose key is not a window size (a whole number ≥ 0) or
    whose value is not a number are counted as malformed and left out. One query."""
    cards = _report_cards(protocol=Protocol.DEEPSCHOLAR, run_id=run_id, task_set_id=task_set_id)
    names = _system_order(cards)
    values: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    malformed = cards_with = 0
    for card in cards:
        by_window = (card.metrics or {}).get(COVERAGE_KEY)
        if not isinstance(by_window, dict):
            continue
        cards_with += 1
        for key, raw in by_window.items():
            window, number = _window(key), _number(raw)
            if window is None or (number is None and raw is not None):
                malformed += 1
            elif number is not None:
                values[card.system_id][window].append(number)
    windows = sorted({w for per in values.values() for w in per})
    series = []
    for sid, name in names.items():
        if sid not in values:
            continue
        points = []
        for w in windows:
            found = values[sid].get(w)
            if found:
                points.append({"window": w, **_interval(found, n_resamples), "n_tasks": len(found)})
        series.append({"system_id": sid, "system": name, "points": points})
    return {"windows": windows, "series": series, "n_cards": len(cards), "n_cards_with": cards_with,
            "n_malformed": malformed}


# --------------------------------------------------------------------------- SurveyLens Fig. 5


def _card_value(metrics: dict, metric: str) -> float | None:
    """A card's value of ``metric``; ``rubric_overall`` falls back to the mean of the three
    component rubric scores (SurveyLens Fig. 4's "Overall") when the card does not store it."""
    value = _number((metrics or {}).get(metric))
    if value is None and metric == RUBRIC_OVERALL:
        parts = [_number((metrics or {}).get(k)) for k in RUBRIC_COMPONENTS]
        if all(p is not None for p in parts):
            value = float(np.mean(parts))
    return value


def _metric_keys(cards: list[CardRow], protocol: str) -> list[str]:
    keys = {k for c in cards for k, v in (c.metrics or {}).items() if k not in NOT_METRICS and _number(v) is not None}
    if any(all(_number((c.metrics or {}).get(k)) is not None for k in RUBRIC_COMPONENTS) for c in cards):
        keys.add(RUBRIC_OVERALL)
    ordered = sorted(keys, key=lambda k: (k != RUBRIC_OVERALL, not k.startswith("rubric_"), k))
    return ordered_metrics(protocol, ordered) if protocol not in (Protocol.SURVEYLENS, Protocol.SURVEYSCOPE) else ordered


def discipline_heatmap(*, protocol: str = Protocol.SURVEYLENS, metric: str = "", run_id: int | None = None,
                       task_set_id: int | None = None) -> dict:
    """Mean of one metric per discipline (of the task's gold survey) × system, with the number of
    report cards behind each cell (SurveyLens Fig. 5 / App. E). Default metric: the overall
    rubric score. One query."""
    if protocol not in Protocol.values:
        raise ValueError(f"protocol: {protocol!r} is not one of {', '.join(Protocol.values)}")
    cards = _report_cards(protocol=protocol, run_id=run_id, task_set_id=task_set_id)
    metrics = _metric_keys(cards, protocol)
    if not metric:
        metric = metrics[0] if metrics else RUBRIC_OVERALL
    elif cards and metric not in metrics:
        raise ValueError(f"metric: no {Protocol(protocol).label} score card has {metric!r}; "
                         f"choose one of {', '.join(metrics) or '(none)'}")
    names = _system_order(cards)
    cells: dict[tuple[str, int], list[float]] = defaultdict(list)
    for card in cards:
        value = _card_value(card.metrics, metric)
        if value is not None:
            cells[(card.discipline or NO_DISCIPLINE, card.system_id)].append(value)
    disciplines = sorted({d for d, _ in cells}, key=lambda d: (d == NO_DISCIPLINE, d))
    systems = [{"system_id": sid, "system": name} for sid, name in names.items() if any(s == sid for _, s in cells)]
    rows = []
    for discipline in disciplines:
        row = []
        for system in systems:
            found = cells.get((discipline, system["system_id"]), [])
            row.append({"system": system["system"], "mean": float(np.mean(found)) if found else None, "n": len(found)})
        rows.append({"discipline": discipline, "cells": row})
    means = [c["mean"] for r in rows for c in r["cells"] if c["mean"] is not None]
    return {"protocol": protocol, "metric": metric, "metric_label": metric_label(metric),
            "metrics": [{"key": k, "label": metric_label(k)} for k in metrics], "systems": systems, "rows": rows,
            "low": min(means, default=None), "high": max(means, default=None), "n_cards": len(cards)}


# --------------------------------------------------------------------------- ReportBench A.2.4


def sensitivity_judges(*, protocol: str) -> list[dict]:
    """Judge configurations with report-level cards for ``protocol``, most recently used first (one query)."""
    rows = (JudgeConfig.objects.filter(runs__protocol=protocol, runs__score_cards__report__isnull=False)
            .annotate(last=Max("runs__created_at")).order_by("-last", "name").values("id", "name", "prompt_version"))
    return list(rows[:100])


def _ranks(values: list[float]) -> list[int]:
    """1 = best (highest); ties share the better rank."""
    return [1 + sum(1 for other in values if other > v) for v in values]


def judge_sensitivity(*, protocol: str, judge_a: int | None = None, judge_b: int | None = None,
                      task_set_id: int | None = None) -> dict:
    """How much the system ranking depends on the judge (ReportBench App. A.2.4, Table 4).

    Report-level cards of two judge configurations on the same protocol (newest card per judge,
    system and task); only (system, task) pairs scored under both count, so both sides average
    the same reports. Per metric: each system's mean under either judge, their ranks, and
    Spearman ρ and Kendall τ-b between the two judges' system means (``spearman``,
    ``kendall_tau``). Defaults: the two most recently used configurations. Two queries."""
    if protocol not in Protocol.values:
        raise ValueError(f"protocol: {protocol!r} is not one of {', '.join(Protocol.values)}")
    judges = sensitivity_judges(protocol=protocol)
    by_id = {j["id"]: j for j in judges}
    if judge_a is None and judge_b is None and len(judges) >= 2:
        judge_a, judge_b = judges[0]["id"], judges[1]["id"]
    out = {"protocol": protocol, "judges": judges, "judge_a": judge_a, "judge_b": judge_b,
           "percent": protocol in PERCENT_PROTOCOLS, "metrics": [], "n_shared": 0}
    if judge_a is None or judge_b is None:
        if len(judges) < 2:
            out["note"] = (f"{len(judges)} judge configuration{'s' if len(judges) != 1 else ''} scored "
                           f"{Protocol(protocol).label} reports: two are needed to compare")
            return out
        raise ValueError("judge_a, judge_b: choose two judge configurations")
    for name, config_id in (("judge_a", judge_a), ("judge_b", judge_b)):
        if config_id not in by_id:
            raise ValueError(f"{name}: judge configuration {config_id} has no report score card "
                             f"for {Protocol(protocol).label}")
    if judge_a == judge_b:
        raise ValueError("judge_b: choose a judge configuration different from judge_a")
    out["judge_a_name"], out["judge_b_name"] = by_id[judge_a]["name"], by_id[judge_b]["name"]
    cards = _report_cards(protocol=protocol, task_set_id=task_set_id, judge_config_ids=[judge_a, judge_b])
    side: dict[int, dict[tuple[int, int], CardRow]] = {judge_a: {}, judge_b: {}}
    for card in cards:
        side[card.judge_config_id][(card.system_id, card.task_id)] = card
    shared = sorted(set(side[judge_a]) & set(side[judge_b]))
    out["n_shared"] = len(shared)
    out["n_tasks"] = len({task for _, task in shared})
    names = _system_order([side[judge_a][key] for key in shared])
    keys: set[str] = set()
    for key in shared:
        for config in (judge_a, judge_b):
            keys |= {k for k, v in (side[config][key].metrics or {}).items()
                     if k not in NOT_METRICS and _number(v) is not None}
    for metric in ordered_metrics(protocol, sorted(keys)):
        systems = []
        for sid, name in names.items():
            # tasks where both judges produced a number, so the two means are over the same reports
            pairs = [(_number(side[judge_a][key].metrics.get(metric)), _number(side[judge_b][key].metrics.get(metric)))
                     for key in shared if key[0] == sid]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            if pairs:
                a, b = float(np.mean([a for a, _ in pairs])), float(np.mean([b for _, b in pairs]))
                if metric in POOLED_METRICS.get(protocol, ()):  # as the leaderboard: eq. 7 over the same reports
                    mine = [key for key in shared if key[0] == sid]
                    pooled = [precision_over_cards([side[config][key].metrics for key in mine])
                              for config in (judge_a, judge_b)]
                    if None not in pooled:
                        a, b = pooled
                systems.append({"system_id": sid, "system": name, "n_tasks": len(pairs), "a": a, "b": b})
        if not systems:
            continue
        rank_a, rank_b = _ranks([s["a"] for s in systems]), _ranks([s["b"] for s in systems])
        for s, ra, rb in zip(systems, rank_a, rank_b, strict=True):
            s.update(rank_a=ra, rank_b=rb, difference=s["b"] - s["a"])
        systems.sort(key=lambda s: (s["rank_a"], s["system"]))
        entry = {"key": metric, "label": metric_label(metric), "systems": systems, "n_systems": len(systems),
                 "spearman": None, "kendall": None, "same_ranking": rank_a == rank_b}
        if len(systems) >= 2:
            xs, ys = [s["a"] for s in systems], [s["b"] for s in systems]
            entry["spearman"] = m.spearman(xs, ys)
            entry["kendall"] = m.kendall_tau(xs, ys)
        out["metrics"].append(entry)
    return out
