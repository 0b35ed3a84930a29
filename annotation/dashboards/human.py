"""Human rankings: Bradley–Terry strengths of systems from pairwise preferences, and their
correlation with the automated leaderboards."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count

from annotation.models import PairwisePreference
from scoring import metrics as m

from .agreement import agreement_stats
from .selectors import N_RESAMPLES, automated_scores, system_label

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


def human_vs_automated(*, source: str = "", component: str = "", metric: str = "",
                       n_resamples: int = N_RESAMPLES) -> dict:
    """The human ranking's correlation with one automated metric (``protocol:metric``, the first by default)."""
    ranking = human_ranking(source=source, component=component, n_resamples=n_resamples)
    options = [f'{c["protocol"]}:{c["metric"]}' for c in ranking["correlations"]]
    chosen = metric or (options[0] if options else "")
    corr = next((c for c in ranking["correlations"] if f'{c["protocol"]}:{c["metric"]}' == chosen), None)
    return {"metric": chosen, "options": options, "correlation": corr, "correlations": ranking["correlations"]}
