"""Correlation of a human ranking with the automated metrics, both sides in the same scope
(SurveyLens Table 7): the automated side is scored on exactly the tasks the scoped preferences
are on and only the metrics of the component those preferences judge."""

from __future__ import annotations

from collections.abc import Iterable

from scoring import metrics as m

from .selectors import N_RESAMPLES, leaderboard

MIN_SYSTEMS = 3  # fewer systems: no correlation (ρ of two points is ±1 whatever they are)
P_METHODS = ("asymptotic", "permutation")
# Preference components that are whole reports: every metric of the protocol is about them.
WHOLE_REPORT = frozenset({"", "report"})
# A component's name in the metric keys (``rubric_outline``, ``rams_reference``, ``reference_f1``).
_METRIC_STEM = {"references": "reference", "section": "content", "sections": "content"}


def component_metrics(component: str, keys: Iterable[str]) -> list[str]:
    """The metric keys that score ``component``: all for a whole report, else those with the
    component's name as a word of the key (``outline`` → ``rubric_outline``, ``rams_outline``,
    ``tams_outline``)."""
    keys = list(keys)
    if component in WHOLE_REPORT:
        return keys
    stem = _METRIC_STEM.get(component, component)
    return [k for k in keys if stem in k.split("_")]


def correlations_in_scope(*, systems: list[dict], protocol: str, task_set: int | None, task_ids: set[int],
                          components: set[str], p_method: str = "asymptotic",
                          n_resamples: int = N_RESAMPLES) -> dict:
    """Spearman ρ, Kendall τ-b and pairwise concordance of the human θ (``systems``) with each
    metric of the scoped component, the metric's system means taken over ``task_ids`` only (the
    tasks of the scoped preferences; within ``protocol`` and ``task_set``). Over the systems in
    both, at least ``MIN_SYSTEMS``; n = systems and tasks. p-values Holm-adjusted across the
    metrics of the table (``p_holm``); ``p_method="permutation"`` adds exact permutation
    p-values (``permutation_p_values``), Holm-adjusted too."""
    if p_method not in P_METHODS:
        raise ValueError(f"p: {p_method!r} is not one of {', '.join(P_METHODS)}")
    out = {"correlations": [], "correlation_note": "", "skipped": [],
           "automated_scope": {"protocol": protocol, "task_set": task_set, "n_tasks": len(task_ids),
                               "component": "", "p_method": p_method}}
    if len(components) > 1:
        out["correlation_note"] = (f"the preferences judge several components ({', '.join(sorted(components))}): "
                                   "choose a component, each is compared with its own metrics")
        return out
    component = next(iter(components), "")
    out["automated_scope"]["component"] = component
    board = leaderboard(protocol=protocol, task_set_id=task_set, task_ids=sorted(task_ids), n_resamples=n_resamples)
    keys = component_metrics(component, [metric["key"] for metric in board["metrics"]])
    if not board["rows"]:
        out["correlation_note"] = f"no automated score on the {len(task_ids)} tasks of these preferences"
        return out
    if not keys:
        out["correlation_note"] = f"no metric of this protocol scores the {component} component"
        return out
    strength = {s["system_id"]: s["theta"] for s in systems}
    labels = {metric["key"]: metric["label"] for metric in board["metrics"]}
    for key in keys:
        pairs, tasks = [], set()
        for row in board["rows"]:
            cell = next(c for c in row["cells"] if c["metric"] == key)
            if row["system_id"] in strength and not cell["empty"]:
                pairs.append((row["system"], strength[row["system_id"]], cell["estimate"]))
                tasks |= set(board["systems"][row["system_id"]].values.get(key, {}))
        if len(pairs) < MIN_SYSTEMS:
            out["skipped"].append({"metric": key, "label": labels[key], "n_systems": len(pairs)})
            continue
        x, y = [p[1] for p in pairs], [p[2] for p in pairs]
        entry = {"protocol": protocol, "metric": key, "label": labels[key], "n": len(pairs), "n_systems": len(pairs),
                 "n_tasks": len(tasks), "spearman": m.spearman(x, y), "kendall": m.kendall_tau(x, y),
                 "concordance": m.pairwise_concordance(x, y),
                 "points": [{"system": p[0], "human": p[1], "metric": p[2]} for p in pairs],
                 "percent": board["percent"]}
        if p_method == "permutation":
            entry["permutation"] = m.permutation_p_values(x, y)
        out["correlations"].append(entry)
    _holm(out["correlations"], p_method)
    if out["skipped"] and not out["correlations"]:
        out["correlation_note"] = f"fewer than {MIN_SYSTEMS} of these systems have automated scores on these tasks"
    return out


def _holm(correlations: list[dict], p_method: str) -> None:
    """Holm's adjustment across the metrics of one table, per statistic and p-value kind."""
    for stat in ("spearman", "kendall"):
        for entry, adjusted in zip(correlations, m.holm_adjust([c[stat]["p_value"] for c in correlations])):
            entry[stat]["p_holm"] = adjusted
        if p_method == "permutation":
            for entry, adjusted in zip(correlations, m.holm_adjust([c["permutation"][stat] for c in correlations])):
                entry["permutation"][f"{stat}_holm"] = adjusted
