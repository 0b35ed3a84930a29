"""Inter-annotator agreement per project, served from stored figures (``ProjectStatistics``).

A project's figures (``agreement.ratings_stats`` over its labels) are stored with the version of
their inputs (``inputs_version``): the label counters the loop keeps on its items in the same
transaction as the labels, the newest label id, and what the computation reads from the
project itself (kind, declared level and label set). Reading that version costs two indexed
queries per project, whatever its number of labels; the labels are read only to compute.

On a read (``inter_annotator``):

- stored version equals the inputs' version: the stored figures, no query of the labels;
- otherwise, a project of at most ``INLINE_LABELS`` labels is computed here (under 0.1 s) and
  the caller stores it (``agreement_statistics_settle``);
- a larger one is left to a worker (``annotation.refresh_project_agreement``, asked for by the
  caller, debounced there): the stored figures, if any, are served marked with the labels
  they are of and when they were computed, and the page polls until new ones are stored. At
  1M labels a computation takes tens of seconds and some 60 MiB: never inside a request
  unless a curator asks for it (the page's "compute here now" when no worker is alive).

Workers also look for large projects whose labels changed at each recovery
(``services.agreement.agreement_statistics_refresh_due``), so new figures do not wait for a reader.
"""

from __future__ import annotations

import hashlib
import json
import time

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.kinds import kind_of
from annotation.services.values import label_numbers

from .agreement import STORED_FIELDS, curated_projects, named_stats, numeric_ratings, project_ratings, ratings_stats
from .selectors import jsonable

# At most this many labels: computed in the request. Measured on PostgreSQL, 3 annotators (the
# bootstrap of each pair's κ dominates): 65 ms at 3,000 labels, 105 ms at 9,000, 180 ms at 21,000.
INLINE_LABELS = 5_000
FORMAT = 1  # the stored figures' shape: raise it when ``ratings_stats`` changes, so older ones are recomputed
POLL_SECONDS = 3  # the page asks again this often while a worker computes
POLL_NO_WORKER_SECONDS = 10  # ... and this often while no worker is alive (it updates once one starts)


def inputs_version(project: dict) -> str:
    """What a project's figures are of: labels (their counters' sum and the newest id: labels are
    only added and deleted, ids only grow, so every new label, undo, or undo and relabel moves
    one of them) and the project's fields the computation reads. ``project``: a row of
    ``curated_projects(with_fingerprint=True)``."""
    declared = json.dumps([project["kind"], project["label_level"], project["label_set"]], sort_keys=True)
    digest = hashlib.sha256(declared.encode()).hexdigest()[:12]
    return f"{FORMAT}:{project['n_labels'] or 0}:{project['last_label'] or 0}:{digest}"


def agreement_compute(project: dict) -> tuple[dict, float]:
    """One project's figures as plain JSON (``ratings_stats``, coders as user ids) and the seconds
    taken. ``project``: a row of ``curated_projects(with_fingerprint=True)``."""
    started = time.perf_counter()
    kind = kind_of(project)
    scored = kind.agreement_units(project)
    if scored is None:  # categories: the labels' consensus keys
        ratings = project_ratings(project, expected=project["n_labels"] or 0)
        level = project["label_level"]
        numbers = label_numbers(level=level, label_set=project["label_set"], labels=ratings.categories)
    else:  # numbers (a rating's scores): α at the interval level over the kind's units
        ratings, level = numeric_ratings(*scored), "interval"
        numbers = [float(value) for value in ratings.categories]
    values = jsonable(ratings_stats(ratings, level=level, numbers=numbers))
    own = kind.statistics(project)
    if own is not None:
        values[kind.name] = jsonable(own)
    return values, time.perf_counter() - started


def inter_annotator(*, user) -> dict:
    """Per project ``user`` may see (``curated_projects``): its figures (``stats``: None while
    none were ever computed) and ``statistics``: ``state`` (``current``; ``updating``: a worker
    is asked for new figures; ``no_worker``: new figures are due but no worker is alive),
    ``computed_at``, ``seconds``, ``of_labels`` (the labels the figures are of) and ``n_labels``
    (the project's labels now).

    Also, for ``agreement_statistics_settle`` (which removes them): ``computed_here`` (figures
    computed in this read, to store) and ``waiting`` (projects due for a worker, with their
    stored row's times)."""
    from core.workers import live_workers

    projects = curated_projects(user, with_fingerprint=True)
    out, computed_here, waiting, workers_alive = [], [], [], None
    for project in projects:
        version, n_labels = inputs_version(project), project["n_labels"] or 0
        stored = {f: project.pop(f"stored__{f}") for f in STORED_FIELDS}
        if stored["values"] is not None and stored["version"] == version:
            values, state, computed_at, seconds = stored["values"], "current", stored["computed_at"], stored["seconds"]
        elif n_labels <= INLINE_LABELS:
            values, seconds = agreement_compute(project)
            state, computed_at = "current", timezone.now()
            computed_here.append({"project_id": project["id"], "version": version, "values": values,
                                  "seconds": seconds, "computed_at": computed_at})
        else:
            if workers_alive is None:
                workers_alive = bool(live_workers())
            state = "updating" if workers_alive else "no_worker"
            values, computed_at, seconds = stored["values"], stored["computed_at"], stored["seconds"]
            waiting.append({"project_id": project["id"], "stored": stored["id"] is not None,
                            "computed_at": computed_at, "requested_at": stored["requested_at"]})
        statistics = {"state": state, "computed_at": computed_at, "seconds": seconds, "n_labels": n_labels,
                      "of_labels": values["n_labels"] if values is not None else None}
        out.append(({k: v for k, v in project.items() if k not in ("n_labels", "last_label")}, values, statistics))
    coder_ids = {p[k] for _, values, _ in out if values for p in values["pairs"] for k in "ab"}
    names = dict(get_user_model().objects.filter(pk__in=coder_ids).values_list("pk", "username")) if coder_ids else {}
    states = {statistics["state"] for *_, statistics in out}
    poll = POLL_SECONDS if "updating" in states else POLL_NO_WORKER_SECONDS if "no_worker" in states else None
    return {"projects": [{**project, "stats": named_stats(values, names) if values is not None else None,
                          "statistics": statistics} for project, values, statistics in out],
            "visible": bool(projects), "poll_seconds": poll, "inline_labels": INLINE_LABELS,
            "computed_here": computed_here, "waiting": waiting}
