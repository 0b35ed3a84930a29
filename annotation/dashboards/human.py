"""Human rankings: Bradley–Terry strengths of systems from pairwise preferences, and their
correlation with the automated leaderboards."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
from django.db.models import Count

from annotation.models import AnnotationProject, PairwisePreference, ProjectStatistics
from annotation.kinds import kind_of, kinds_with
from annotation.services.values import preference_outcome
from benchmark.models import Protocol, TaskSet
from benchmark.naming import system_label
from core.converters import id_from_text
from scoring import metrics as m

from .agreement import agreement_stats
from .human_bias import position_bias
from .human_correlation import P_METHODS, correlations_in_scope
from .inter_annotator import INLINE_LABELS
from .selectors import N_RESAMPLES

# --------------------------------------------------------------------------- scope

SCOPE_FIELDS = ("protocol", "task_set", "project", "source", "component", "discipline", "annotator")
BREAKDOWNS = ("discipline", "annotator")


@dataclass(frozen=True)
class Scope:
    """Which preferences a ranking is of. Empty fields do not narrow; every ranking states its scope."""

    protocol: str = ""
    task_set: int | None = None
    project: int | None = None
    source: str = ""
    component: str = ""
    discipline: str = ""  # the task's survey discipline name
    annotator: str = ""  # a username

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in SCOPE_FIELDS}


def scope_from_params(params) -> Scope:
    """A ``Scope`` from query parameters; ``ValueError`` naming the parameter when one is invalid."""
    values: dict[str, Any] = {}
    for name in SCOPE_FIELDS:
        raw = (params.get(name) or "").strip()
        if name in ("task_set", "project"):
            values[name] = id_from_text(name, raw)  # a number beyond any id is refused, not sent to the database
        else:
            values[name] = raw
    if values["protocol"] and values["protocol"] not in Protocol.values:
        raise ValueError(f"protocol: {values['protocol']!r} is not one of {', '.join(Protocol.values)}")
    return Scope(**values)


class PreferenceRow(NamedTuple):
    left_system: int
    left_name: str
    left_version: str
    right_system: int
    right_name: str
    right_version: str
    choice: str
    annotator_id: int
    username: str
    task_id: int
    left: int
    right: int
    discipline: str | None
    left_display_name: str
    right_display_name: str
    component: str
    project_id: int | None
    project_name: str | None
    source: str


def preference_sources() -> list[dict]:
    return list(PairwisePreference.objects.values("source", "component").annotate(n=Count("pk")).order_by("source", "component"))


def scope_options() -> dict:
    """The values each scope filter offers (bounded queries)."""
    prefs = PairwisePreference.objects.order_by()
    return {
        "protocols": Protocol.choices,
        "task_sets": list(TaskSet.objects.order_by("name", "-version").values("id", "name", "version")[:100]),
        "projects": list(AnnotationProject.objects.filter(kind__in=kinds_with("human_ranking")).order_by("name")
                         .values("id", "name")[:100]),
        "sources": preference_sources(),
        "disciplines": sorted(d for d in prefs.values_list("task__survey__discipline__name", flat=True).distinct() if d),
        "annotators": sorted(prefs.values_list("annotator__username", flat=True).distinct()),
    }


def scoped_preferences(scope: Scope):
    """The pairwise preferences in ``scope`` (a queryset: the rows ranked, or their fingerprint)."""
    prefs = PairwisePreference.objects.all()
    lookups = {"protocol": "task__protocol", "task_set": "task__task_sets", "project": "project_id",
               "source": "source", "component": "component", "discipline": "task__survey__discipline__name",
               "annotator": "annotator__username"}
    for name, lookup in lookups.items():
        value = getattr(scope, name)
        if value not in ("", None):
            prefs = prefs.filter(**{lookup: value})
    return prefs


def _preference_rows(scope: Scope) -> list[PreferenceRow]:
    return list(map(PreferenceRow._make, scoped_preferences(scope).order_by("labeled_at", "pk").values_list(
        "report_left__system_id", "report_left__system__name", "report_left__system__version",
        "report_right__system_id", "report_right__system__name", "report_right__system__version",
        "choice", "annotator_id", "annotator__username", "task_id", "report_left_id", "report_right_id",
        "task__survey__discipline__name", "report_left__system__display_name", "report_right__system__display_name",
        "component", "project_id", "project__name", "source",
    )))


def _pair_agreement(rows: list[PreferenceRow]) -> dict:
    """Do several annotators judge the same pair (task, two reports)? ``agreement_stats`` over
    those that do, each preference coded as its pair's outcome (``preference_outcome``, pair
    ordered by system): first better, second better or tie."""
    units: dict[tuple, dict[int, Any]] = defaultdict(dict)
    names = {}
    for r in rows:
        names[r.annotator_id] = r.username
        order = {r.left: r.left_system, r.right: r.right_system}
        units[(r.task_id, frozenset((r.left, r.right)))][r.annotator_id] = preference_outcome(
            r.choice, r.left, r.right, order=order)
    shared = sum(1 for labels in units.values() if len(labels) >= 2)
    stats = agreement_stats(units, names)
    return {"n_pairs": len(units), "n_shared": shared, "n_annotators": len(names), "stats": stats}


def imported_agreement() -> list[dict]:
    """For each (source, component) of imported preferences: do annotators judge the same pairs,
    and how well do they agree on those they share."""
    groups: dict[tuple[str, str], list[PreferenceRow]] = defaultdict(list)
    for row in PairwisePreference.objects.filter(project__isnull=True).order_by("pk").values_list(
            "source", "component", "report_left__system_id", "report_left__system__name", "report_left__system__version",
            "report_right__system_id", "report_right__system__name", "report_right__system__version",
            "choice", "annotator_id", "annotator__username", "task_id", "report_left_id", "report_right_id",
            "task__survey__discipline__name", "report_left__system__display_name",
            "report_right__system__display_name", "component", "project_id", "project__name", "source"):
        groups[(row[0], row[1])].append(PreferenceRow._make(row[2:]))
    return [{"source": src, "component": comp, "n": len(group), **_pair_agreement(group)}
            for (src, comp), group in sorted(groups.items())]


# --------------------------------------------------------------------------- ranking


PRIOR_OPTIONS = {"": "where_needed", "weak": "always"}  # the page's and API's ``prior`` → ``bradley_terry_clustered``
CLUSTERS = ("item", "topic")  # what a bootstrap resample draws whole: a task's report pair, or the task (topic)
# Online Elo, each by its source (same update E = 1/(1 + 10^((R_j − R_i)/400)), R += K(S − E),
# in labelling order; they differ in K and start):
SURVEYLENS_ELO = {"k": 32.0, "initial": 1500.0}  # TechnicolorGUO/SurveyLens scripts/evaluation/eval_preference.py, EloCalculator
ARENA_ELO = {"k": 4.0, "initial": 1000.0}  # Chatbot Arena's compute_online_elo


def _bt_fit(comparisons: list[tuple], clusters: list, n_items: int, n_resamples: int, prior: str) -> dict:
    """``bradley_terry_clustered`` (seed 0): the fit and its bootstrap refits, most of a ranking's
    cost (it is computed once per change of its inputs and stored: ``human_stored``)."""
    bt = m.bradley_terry_clustered(np.asarray(comparisons, dtype=float), clusters=clusters, n_items=n_items,
                                   n_resamples=n_resamples, seed=0, prior=prior)
    return {k: bt[k] for k in ("estimate", "low", "high", "n_separable", "n_resamples", "n_clusters",
                               "prior_used", "small_sample_factor", "few_clusters")}


def _warnings(structure: dict, names: list[str]) -> list[str]:
    """What makes the unpenalised estimate meaningless, naming the systems."""
    def listed(group):
        return ", ".join(names[i] for i in group)

    out = []
    if len(structure["components"]) > 1:
        groups = "; ".join(f"{{{listed(g)}}}" for g in structure["components"])
        out.append(f"the comparison graph is disconnected: {groups} are never compared with each other, so "
                   "their strengths are placed relative to each other only by the prior")
    out += [f"{listed(g)} never lost a comparison against the other systems they met (separation): the "
            "estimate is held finite by the prior" for g in structure["never_lose"]]
    out += [f"{listed(g)} never won a comparison against the other systems they met (separation): the "
            "estimate is held finite by the prior" for g in structure["never_win"]]
    return out


def _rank(rows: list[PreferenceRow], n_resamples: int, prior: str = "", cluster: str = "item") -> dict:
    """Bradley–Terry strengths of the systems in ``rows`` (see ``human_ranking``)."""
    names: dict[int, str] = {}
    for r in rows:
        names[r.left_system] = system_label(r.left_name, r.left_version, r.left_display_name)
        names[r.right_system] = system_label(r.right_name, r.right_version, r.right_display_name)
    ids = sorted(names, key=lambda i: names[i])
    index = {sid: i for i, sid in enumerate(ids)}
    comparisons, clusters, wins, losses, ties = [], [], Counter(), Counter(), Counter()
    skipped = 0
    for r in rows:
        if r.left_system == r.right_system:
            skipped += 1
            continue
        outcome = {"left": 1.0, "right": 0.0, "tie": 0.5}[r.choice]
        comparisons.append((index[r.left_system], index[r.right_system], outcome))
        clusters.append((r.task_id, min(r.left, r.right), max(r.left, r.right)))  # the item: one task, two reports
        if outcome == 0.5:
            ties[r.left_system] += 1
            ties[r.right_system] += 1
        else:
            winner, loser = (r.left_system, r.right_system) if outcome == 1.0 else (r.right_system, r.left_system)
            wins[winner] += 1
            losses[loser] += 1
    out = {"n_comparisons": len(comparisons), "skipped_same_system": skipped, "systems": [], "warnings": [],
           "n_annotators": len({r.annotator_id for r in rows}), "n_items": len(set(clusters)),
           "n_topics": len({c[0] for c in clusters}), "cluster": cluster, "prior": prior or "where needed",
           "prior_precision": m.PRIOR_PRECISION, "prior_used": False, "estimator": "", "prior_sensitivity": None,
           "n_resamples": 0, "n_separable_resamples": 0}
    if not comparisons:
        return out
    labels = [names[sid] for sid in ids]
    out["warnings"] = _warnings(m.comparison_structure(comparisons, n_items=len(ids)), labels)
    drawn = [c[0] for c in clusters] if cluster == "topic" else clusters
    bt = _bt_fit(comparisons, drawn, len(ids), n_resamples, PRIOR_OPTIONS[prior])
    out.update(n_resamples=bt["n_resamples"], n_separable_resamples=bt["n_separable"], prior_used=bt["prior_used"],
               estimator=(f"MAP under θ ~ N(0, {1 / m.PRIOR_PRECISION:g})" if bt["prior_used"]
                          else "maximum likelihood"))
    if bt["prior_used"]:
        found = m.prior_sensitivity(comparisons, n_items=len(ids))
        out["prior_sensitivity"] = {"prior_sd": found["prior_sd"], "systems": [
            {"system": labels[i], "theta": [float(t) for t in found["estimates"][:, i]]} for i in range(len(ids))]}
    if bt["n_separable"] and not out["warnings"]:
        out["warnings"].append(f"{bt['n_separable']} of {bt['n_resamples']} resamples are separable: the interval "
                               "leans on the prior there")
    out["small_sample_factor"] = bt["small_sample_factor"]
    if cluster == "topic" and bt["few_clusters"]:
        out["warnings"].append(
            f"only {bt['n_clusters']} topics: the interval resamples topics and is widened to t with"
            f" {max(bt['n_clusters'] - 1, 0)} degrees of freedom (× {bt['small_sample_factor'] or 0:.2f} the bootstrap"
            " sd); below 5 topics its coverage is unmeasured" if bt["n_clusters"] >= 2 else
            f"only {bt['n_clusters']} topic: no interval over topics is possible; use cluster=item")
    ranks = m.rank_with_ci(bt["low"], bt["high"])
    scaled = {key: m.to_elo_scale(bt[key]) for key in ("estimate", "low", "high")}
    surveylens = m.elo(comparisons, n_items=len(ids), **SURVEYLENS_ELO)  # in labelling order
    arena = m.elo(comparisons, n_items=len(ids), **ARENA_ELO)
    systems = [
        {"system_id": sid, "system": names[sid], "theta": float(bt["estimate"][i]), "low": float(bt["low"][i]),
         "high": float(bt["high"][i]), "bt_elo_scale": float(scaled["estimate"][i]),
         "bt_elo_scale_low": float(scaled["low"][i]), "bt_elo_scale_high": float(scaled["high"][i]),
         "surveylens_elo": float(surveylens[i]), "arena_elo": float(arena[i]), "rank": int(ranks[i]),
         "wins": wins[sid], "losses": losses[sid],
         "ties": ties[sid], "n": wins[sid] + losses[sid] + ties[sid]}
        for i, sid in enumerate(ids)
    ]
    systems.sort(key=lambda s: (s["rank"], -s["theta"], s["system"]))
    out["systems"] = systems
    return out


def design_of(scope: Scope) -> dict | None:
    """An adaptive project's budget and standing when the scope is that project (its design is
    unbalanced: the ranking says so)."""
    from ..services.adaptive_pairs import adaptive_design

    project = AnnotationProject.objects.filter(pk=scope.project).first() if scope.project else None
    return adaptive_design(project=project) if project is not None else None


RATING_PROJECTS_SHOWN = 20


def expert_ratings(scope: Scope) -> list[dict]:
    """Rating projects' figures (``Rating.statistics``: per criterion and system the experts' mean
    beside the judge's, judge vs experts), the scope's project only when it names one; the newest
    ``RATING_PROJECTS_SHOWN`` with labels."""
    projects = AnnotationProject.objects.filter(kind__in=kinds_with("rating"), labels__isnull=False).distinct()
    if scope.project:
        projects = projects.filter(pk=scope.project)
    if scope.protocol:  # the leaderboard's: rating projects of its tasks
        projects = projects.filter(tasks__protocol=scope.protocol)
    if scope.task_set:
        projects = projects.filter(tasks__task_sets=scope.task_set)
    rows = list(projects.order_by("-created_at", "-id").annotate(n_labels=Count("labels", distinct=True))
                [:RATING_PROJECTS_SHOWN])
    # A large project's figures are those its workers stored with its agreement figures
    # (``agreement_compute``), as of when they were computed: the page computes small ones only.
    stored = dict(ProjectStatistics.objects.filter(
        project__in=[p.pk for p in rows if p.n_labels > INLINE_LABELS],
        kind=ProjectStatistics.Kind.INTER_ANNOTATOR).values_list("project_id", "values"))
    out = []
    for project in rows:
        if project.n_labels > INLINE_LABELS:
            figures = (stored.get(project.pk) or {}).get(project.kind) or {"criteria": [], "pending": True}
        else:
            figures = kind_of(project).statistics({"id": project.pk, "kind": project.kind})
        out.append({"id": project.pk, "name": project.name, **figures})
    return out


def ranking_options_check(*, by: str, prior: str, cluster: str, p_method: str) -> None:
    """``ValueError`` naming the option when one of a ranking's options is not offered."""
    if by and by not in BREAKDOWNS:
        raise ValueError(f"by: {by!r} is not one of {', '.join(BREAKDOWNS)}")
    if prior not in PRIOR_OPTIONS:
        raise ValueError(f"prior: {prior!r} is not 'weak' (or empty: the prior only where the MLE does not exist)")
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster: {cluster!r} is not one of {', '.join(CLUSTERS)}")
    if p_method not in P_METHODS:
        raise ValueError(f"p: {p_method!r} is not one of {', '.join(P_METHODS)}")


def ranking_figures(*, scope: Scope = Scope(), n_resamples: int = N_RESAMPLES, with_correlations: bool = True,
                    by: str = "", p_method: str = "asymptotic", prior: str = "", cluster: str = "item") -> dict:
    """The figures of ``human_ranking`` computed from the preferences and score cards (what
    ``human_stored`` stores): all of it but the rating projects' figures and the adaptive
    design, which have their own sources."""
    ranking_options_check(by=by, prior=prior, cluster=cluster, p_method=p_method)
    rows = _preference_rows(scope)
    out = {"scope": scope.as_dict(), **_rank(rows, n_resamples, prior, cluster), "agreement": _pair_agreement(rows),
           "position_bias": position_bias(rows),
           "correlations": [], "correlation_note": "", "correlation_skipped": [], "automated_scope": None,
           "by": by, "breakdown": []}
    if by:
        groups: dict[str, list[PreferenceRow]] = defaultdict(list)
        for r in rows:
            groups[(r.discipline or "(none)") if by == "discipline" else r.username].append(r)
        out["breakdown"] = [{"group": g, **_rank(group, n_resamples, prior, cluster)} for g, group in sorted(groups.items())]
    if with_correlations and out["systems"]:
        if scope.protocol:
            found = correlations_in_scope(systems=out["systems"], protocol=scope.protocol, task_set=scope.task_set,
                                          task_ids={r.task_id for r in rows}, components={r.component for r in rows},
                                          p_method=p_method, n_resamples=n_resamples)
            out.update(correlations=found["correlations"], correlation_note=found["correlation_note"],
                       correlation_skipped=found["skipped"], automated_scope=found["automated_scope"])
        else:
            out["correlation_note"] = ("choose a protocol: correlations compare that protocol's human ranking with "
                                       "its own leaderboard")
    return out


def human_ranking(*, scope: Scope = Scope(), n_resamples: int = N_RESAMPLES, with_correlations: bool = True,
                  by: str = "", p_method: str = "asymptotic", prior: str = "", cluster: str = "item") -> dict:
    """Bradley–Terry strengths of systems from the pairwise preferences in ``scope`` (left win 1,
    right win 0, tie ½): the maximum-likelihood θ where it exists, the MAP θ under a weak prior
    θ ~ N(0, 1/``PRIOR_PRECISION``) where it does not (or everywhere with ``prior="weak"``), with
    ``prior_sensitivity`` where the prior is used; percentile bootstrap intervals over items
    (task × report pair: every annotator's comparison of the item is drawn together) or, with
    ``cluster="topic"``, over topics (tasks) (``bradley_terry_clustered``); Chatbot Arena ranks
    (``rank_with_ci``), ``warnings`` when the comparisons are disconnected or separable, the
    same θ on the Elo-like scale (``bt_elo_scale``) and the online Elo of SurveyLens' released
    code (``surveylens_elo``: K 32, start 1500) and of Chatbot Arena (``arena_elo``: K 4, start
    1000), both in labelling order. With a protocol in the scope, Spearman ρ, Kendall τ-b and pairwise
    concordance of θ with each metric of the scoped component, the metric scored on the scoped
    preferences' tasks only (``correlations_in_scope``), n systems and tasks shown.
    ``by`` ("discipline" or "annotator") adds one ranking per value of that field (``breakdown``).

    Computed here, in full: the pages and the API serve the same figures stored
    (``human_stored.human_ranking_read``), and a worker computes them with this function."""
    out = ranking_figures(scope=scope, n_resamples=n_resamples, with_correlations=with_correlations, by=by,
                          p_method=p_method, prior=prior, cluster=cluster)
    return {**out, "ratings": expert_ratings(scope), "design": design_of(scope)}


def human_vs_automated_scope(*, scope: Scope, metric: str) -> Scope:
    """The scope of the human ranking a ``metric`` (``protocol:metric``) is compared with: that
    metric's protocol, else the scope's, else the first protocol with preferences."""
    chosen_protocol = metric.split(":", 1)[0] if metric else ""
    if chosen_protocol and not scope.protocol:
        scope = replace(scope, protocol=chosen_protocol)
    if not scope.protocol:
        scope = replace(scope, protocol=_first_protocol_with_preferences())
    return scope


def human_vs_automated_pick(*, ranking: dict, metric: str) -> dict:
    """One metric's correlation (the first by default) out of a human ranking's correlations."""
    options = [f'{c["protocol"]}:{c["metric"]}' for c in ranking["correlations"]]
    chosen = metric or (options[0] if options else "")
    corr = next((c for c in ranking["correlations"] if f'{c["protocol"]}:{c["metric"]}' == chosen), None)
    return {"metric": chosen, "options": options, "correlation": corr, "correlations": ranking["correlations"],
            "scope": ranking["scope"]}


def human_vs_automated(*, scope: Scope = Scope(), metric: str = "", n_resamples: int = N_RESAMPLES) -> dict:
    """The human ranking's correlation with one automated metric (``protocol:metric``, the first
    by default); the ranking is scoped to that metric's protocol. Computed here; the page and the
    API serve it from the stored ranking (``human_stored``)."""
    scope = human_vs_automated_scope(scope=scope, metric=metric)
    return human_vs_automated_pick(ranking=human_ranking(scope=scope, n_resamples=n_resamples), metric=metric)


def _first_protocol_with_preferences() -> str:
    return PairwisePreference.objects.order_by("task__protocol").values_list("task__protocol", flat=True).first() or ""
