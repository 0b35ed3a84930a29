"""The human ranking served from stored figures (``ProjectStatistics`` of kind ``human_ranking``),
by the mechanism that serves inter-annotator agreement (``inter_annotator``, ``stored``,
``services.agreement``).

A ranking is named by its parameters (``ranking_parameters``: the preferences' scope and the
ranking's options); one row per parameters, keyed by their digest (``ranking_key``). Its
figures (``human.ranking_figures``) are stored with the version of their inputs
(``ranking_inputs``): the scope's preferences (their count and newest id: preferences are only
added and deleted, ids only grow), the score cards of the scope's protocol when the ranking
carries correlations (count, newest id, last change), and when the systems both name were last
changed (a renamed system is shown by its new name). Reading that version costs one aggregate
query per source; the preferences are read only to compute.

On a read (``human_ranking_read``, by ``stored.scope_read``):

- stored version equals the inputs' version: the stored figures, no preference read;
- otherwise a scope of at most ``INLINE_PREFERENCES`` preferences is computed here and the
  caller stores it (``services.agreement.scope_statistics_settle``);
- a larger one is left to a worker (``annotation.refresh_human_ranking``, asked for by the
  caller, debounced there): the stored figures, if any, are served marked with the
  preferences they are of and when they were computed, and the page polls until new ones are
  stored ("compute here now" for curators while no worker is alive).

What a ranking costs does not grow with its preferences as much as it is fixed: its 1,000
bootstrap refits take 0.24–0.28 s from 12 comparisons to 5,000 on this machine. The threshold
keeps the first view of a small study (a few annotators, a few tasks) on the page; anything
larger never costs a web request more than reading the stored figures.

The rating projects' figures beside the ranking (``human.expert_ratings``) and an adaptive
project's design are read as before: they have their own sources.
"""

from __future__ import annotations

import hashlib
import json
import time

from django.db.models import Count, Max

from annotation.models import ProjectStatistics
from scoring.models import ScoreCard

from . import human
from .selectors import N_RESAMPLES, jsonable
from .stored import scope_key, scope_read, scopes_due

KIND = ProjectStatistics.Kind.HUMAN_RANKING
FORMAT = 1  # the stored figures' shape: raise it when ``human.ranking_figures`` changes, so older ones are recomputed
INLINE_PREFERENCES = 100


def ranking_parameters(*, scope: human.Scope = human.Scope(), by: str = "", p_method: str = "asymptotic",
                       prior: str = "", cluster: str = "item", with_correlations: bool = True,
                       n_resamples: int = N_RESAMPLES) -> dict:
    """What a ranking is of, as plain JSON; ``ValueError`` naming an option that is not offered."""
    human.ranking_options_check(by=by, prior=prior, cluster=cluster, p_method=p_method)
    return {"scope": scope.as_dict(), "by": by, "p_method": p_method, "prior": prior, "cluster": cluster,
            "with_correlations": with_correlations, "n_resamples": n_resamples}


def ranking_key(parameters: dict) -> str:
    return scope_key(parameters)


def _scope(parameters: dict) -> human.Scope:
    return human.Scope(**parameters["scope"])


def figures_inputs(parameters: dict) -> tuple[str, int]:
    """The version of what a ranking's figures are of, and its number of preferences."""
    scope = _scope(parameters)
    found = human.scoped_preferences(scope).order_by().aggregate(
        n=Count("pk"), last=Max("pk"), left_named=Max("report_left__system__updated_at"),
        right_named=Max("report_right__system__updated_at"))
    n_preferences = found.pop("n") or 0
    others = {"named": [found.pop("left_named"), found.pop("right_named")]}  # a renamed system shows its new name
    if parameters["with_correlations"] and scope.protocol:
        others["cards"] = ScoreCard.objects.filter(run__protocol=scope.protocol, report__isnull=False).order_by() \
            .aggregate(n=Count("pk"), last=Max("pk"), changed=Max("updated_at"), named=Max("system__updated_at"))
    digest = hashlib.sha256(json.dumps(jsonable(others), sort_keys=True).encode()).hexdigest()[:16]
    return f"{FORMAT}:{n_preferences}:{found['last'] or 0}:{digest}", n_preferences


def figures_compute(parameters: dict) -> tuple[dict, float]:
    """One ranking's figures as plain JSON and the seconds taken."""
    started = time.perf_counter()
    values = jsonable(human.ranking_figures(
        scope=_scope(parameters), n_resamples=parameters["n_resamples"],
        with_correlations=parameters["with_correlations"], by=parameters["by"], p_method=parameters["p_method"],
        prior=parameters["prior"], cluster=parameters["cluster"]))
    return values, time.perf_counter() - started


def figures_due() -> list[dict]:
    return scopes_due(kind=KIND, inputs=figures_inputs, inline=INLINE_PREFERENCES)


def _pending(parameters: dict) -> dict:
    """What a page shows of a ranking whose figures were never computed: its scope, no system."""
    return {"scope": parameters["scope"], "systems": [], "warnings": [], "n_comparisons": 0, "correlations": [],
            "correlation_note": "", "correlation_skipped": [], "automated_scope": None, "by": parameters["by"],
            "breakdown": [], "agreement": None, "position_bias": None}


def human_ranking_read(*, scope: human.Scope = human.Scope(), by: str = "", p_method: str = "asymptotic",
                       prior: str = "", cluster: str = "item", with_correlations: bool = True,
                       n_resamples: int = N_RESAMPLES) -> dict:
    """``human.human_ranking``'s figures as stored (see the module), with ``pending`` (no figures
    were ever computed: ``systems`` is empty until a worker stores them), ``statistics``:
    ``state`` (``current``; ``updating``: a worker is asked for new figures; ``no_worker``: new
    figures are due but no worker is alive), ``computed_at``, ``seconds``, ``of_preferences``,
    ``n_preferences`` (now) and ``scope_key`` (the row's name, for "compute here now"), and
    ``poll_seconds`` (None: nothing is due).

    Also, for ``scope_statistics_settle`` (which removes them): ``computed_here`` (figures
    computed in this read, to store) and ``waiting`` (the scope, when due for a worker)."""
    parameters = ranking_parameters(scope=scope, by=by, p_method=p_method, prior=prior, cluster=cluster,
                                    with_correlations=with_correlations, n_resamples=n_resamples)
    version, n_preferences = figures_inputs(parameters)
    read = scope_read(kind=KIND, parameters=parameters, version=version, size=n_preferences,
                      inline=INLINE_PREFERENCES, compute=figures_compute)
    values, statistics = read["values"], read["statistics"]
    statistics.update(of_preferences=statistics.pop("of_size"), n_preferences=statistics.pop("size"))
    return {**(values if values is not None else _pending(parameters)), "pending": values is None,
            "ratings": human.expert_ratings(scope), "design": human.design_of(scope), "statistics": statistics,
            "poll_seconds": read["poll_seconds"], "inline_preferences": INLINE_PREFERENCES,
            "computed_here": read["computed_here"], "waiting": read["waiting"]}
