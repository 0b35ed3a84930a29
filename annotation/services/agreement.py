"""Stored dashboard figures (``ProjectStatistics``): storing them and asking a worker for new
ones. One mechanism for every kind of figures: a project's inter-annotator agreement
(``annotation.dashboards.inter_annotator`` reads them and says which are due), and figures
stored by scope (``annotation.dashboards.stored``): a human ranking (``human_stored``) and judge
vs people over a set of projects (``judge_stored``).

The figures are derived data (recomputing them from the labels gives them back), so they are
written without an audit row. Asking is debounced per row: one computation pending at a time
(``requested_at``, set by one conditional UPDATE, so of many requests — page polls, API calls,
several web processes — one sends the message), and a row's next computation starts no sooner
than ``DEBOUNCE_SECONDS`` after its last one ended: labels keep arriving during a labelling
session, and each computation reads every label then stored, so a burst of labels costs one
computation, not one per label or per page view.

A row is named by its key: ``{"project_id": id}`` (a project's figures) or ``{"project_id":
None, "scope": digest}`` (a scope's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from ..models import ProjectStatistics
from ..tasks import refresh_human_ranking, refresh_judge_agreement, refresh_project_agreement

logger = logging.getLogger(__name__)

KIND = ProjectStatistics.Kind.INTER_ANNOTATOR
RANKING = ProjectStatistics.Kind.HUMAN_RANKING
JUDGE = ProjectStatistics.Kind.JUDGE_AGREEMENT
DEBOUNCE_SECONDS = 60
PENDING_SECONDS = 15 * 60  # a request older than this is taken for lost (its worker died) and made again


def statistics_store(*, kind: str, key: dict, version: str, values: dict, seconds: float, computed_at=None,
                     parameters: dict | None = None) -> None:
    """Store one row's figures with the inputs' version they are of; ends its pending request."""
    defaults = {"version": version, "values": values, "seconds": seconds,
                "computed_at": computed_at or timezone.now(), "requested_at": None}
    if parameters is not None:
        defaults["parameters"] = parameters
    ProjectStatistics.objects.update_or_create(kind=kind, **key, defaults=defaults)


def statistics_request(*, kind: str, waiting: list[dict], send: Callable[[dict, float], None]) -> list[dict]:
    """Ask a worker for new figures of each row in ``waiting`` (each: its ``key``, whether a row
    is ``stored``, its ``computed_at`` and ``requested_at``; a scope's also its ``parameters``)
    that has no computation pending, to start ``DEBOUNCE_SECONDS`` after its last one at the
    earliest (``send(key, countdown)`` sends the message); returns the keys asked for. A row
    already pending costs no write (the page polls). A message the broker refuses is logged and
    asked for again at the next read: the page keeps serving the stored figures."""
    now = timezone.now()
    lost = now - timedelta(seconds=PENDING_SECONDS)
    due = [w for w in waiting if w["requested_at"] is None or w["requested_at"] < lost]
    ProjectStatistics.objects.bulk_create([ProjectStatistics(kind=kind, parameters=w.get("parameters"), **w["key"])
                                           for w in due if not w["stored"]], ignore_conflicts=True)
    rows = ProjectStatistics.objects.filter(kind=kind)
    free = Q(requested_at__isnull=True) | Q(requested_at__lt=lost)
    asked = []
    for row in due:
        key = row["key"]
        if not rows.filter(free, **key).update(requested_at=now):
            continue  # asked for meanwhile: the computation to come reads these inputs too
        last = row["computed_at"]
        countdown = max(0.0, (last + timedelta(seconds=DEBOUNCE_SECONDS) - now).total_seconds()) if last else 0.0
        try:
            send(key, countdown)
        except Exception:  # the broker is away: serve what is stored, ask again next time
            logger.exception("could not ask a worker for the %s figures of %s", kind, key)
            rows.filter(requested_at=now, **key).update(requested_at=None)
            continue
        asked.append(key)
    return asked


def statistics_failed(*, kind: str, key: dict) -> None:
    """A computation failed: no longer pending, so the next read asks again."""
    ProjectStatistics.objects.filter(kind=kind, **key).update(requested_at=None)


# --------------------------------------------------------------------------- inter-annotator agreement


def agreement_statistics_store(*, project_id: int, version: str, values: dict, seconds: float,
                               computed_at=None) -> None:
    """Store one project's figures with the inputs' version they are of; ends its pending request."""
    statistics_store(kind=KIND, key={"project_id": project_id}, version=version, values=values, seconds=seconds,
                     computed_at=computed_at)


def _send_agreement(key: dict, countdown: float) -> None:
    refresh_project_agreement.apply_async((key["project_id"],), countdown=countdown)


def agreement_statistics_request(*, waiting: list[dict]) -> list[int]:
    """Ask a worker (``annotation.refresh_project_agreement``) for new figures of each project in
    ``waiting`` (``inter_annotator``'s: project id, whether a row is stored, its ``computed_at``
    and ``requested_at``), debounced as ``statistics_request``; returns the ids asked for."""
    rows = [{**w, "key": {"project_id": w["project_id"]}} for w in waiting]
    return [key["project_id"] for key in statistics_request(kind=KIND, waiting=rows, send=_send_agreement)]


def agreement_statistics_settle(iaa: dict) -> dict:
    """What a read of ``inter_annotator`` left to do: store the figures it computed and ask a
    worker for the projects it found due; returns ``iaa`` without those two lists."""
    for computed in iaa.pop("computed_here", []):
        agreement_statistics_store(**computed)
    agreement_statistics_request(waiting=iaa.pop("waiting", []))
    return iaa


def agreement_statistics_refresh_due() -> dict[str, int]:
    """After each recovery of a worker (``core.jobs``, every ``JOB_RECOVERY_SECONDS``): ask for new
    figures of every project too large to compute in a request whose labels changed since its
    figures were computed, so that a worker computes them when labels change (debounced as
    above), not only once somebody opens the page. A small project is computed when it is read.
    Then the same for the figures stored by scope (``scope_statistics_refresh_due``)."""
    from ..dashboards.agreement import curated_projects
    from ..dashboards.inter_annotator import INLINE_LABELS, inputs_version

    waiting = []
    for project in curated_projects(None, with_fingerprint=True, everyone=True):
        if (project["n_labels"] or 0) <= INLINE_LABELS:
            continue
        if project["stored__values"] is not None and project["stored__version"] == inputs_version(project):
            continue
        waiting.append({"project_id": project["id"], "stored": project["stored__id"] is not None,
                        "computed_at": project["stored__computed_at"],
                        "requested_at": project["stored__requested_at"]})
    return {"agreement_figures_asked": len(agreement_statistics_request(waiting=waiting)),
            **scope_statistics_refresh_due()}


def project_agreement_refresh(*, project_id: int) -> dict | None:
    """Compute one project's figures from its labels now and store them (a worker's task, or a
    curator's "compute here now"); None when there is no such project. The inputs' version is
    read before the labels: a label stored meanwhile leaves the figures marked stale, never a
    stale version on newer figures."""
    from ..dashboards.agreement import curated_projects
    from ..dashboards.inter_annotator import agreement_compute, inputs_version

    project = next(iter(curated_projects(None, with_fingerprint=True, only=project_id)), None)
    if project is None:
        return None
    version = inputs_version(project)
    try:
        values, seconds = agreement_compute(project)
    except Exception:
        statistics_failed(kind=KIND, key={"project_id": project_id})
        raise
    agreement_statistics_store(project_id=project_id, version=version, values=values, seconds=seconds)
    return values


# --------------------------------------------------------------------------- figures stored by scope


def _scoped(kind: str):
    """The module that reads and computes a kind of figures stored by scope, and its worker task."""
    from ..dashboards import human_stored, judge_stored

    return {RANKING: (human_stored, refresh_human_ranking), JUDGE: (judge_stored, refresh_judge_agreement)}[kind]


def _sender(kind: str) -> Callable[[dict, float], None]:
    def send(key: dict, countdown: float) -> None:
        _scoped(kind)[1].apply_async((key["scope"],), countdown=countdown)

    return send


def scope_statistics_settle(read: dict, *, kind: str) -> dict:
    """What a read of figures stored by scope (``human_stored.human_ranking_read``,
    ``judge_stored.judge_agreement_read``) left to do: store the figures it computed, or ask a
    worker for its scope's, debounced as ``statistics_request``; returns ``read`` without those
    two lists."""
    for computed in read.pop("computed_here", []):
        statistics_store(kind=kind, **computed)
    statistics_request(kind=kind, waiting=read.pop("waiting", []), send=_sender(kind))
    return read


def ranking_statistics_settle(read: dict) -> dict:
    return scope_statistics_settle(read, kind=RANKING)


def judge_statistics_settle(read: dict) -> dict:
    return scope_statistics_settle(read, kind=JUDGE)


def scope_statistics_refresh_due() -> dict[str, int]:
    """At each recovery of a worker: ask for new figures of every stored scope too large to
    compute in a request whose inputs changed since (a scope is stored once somebody read it),
    so that they do not wait for the next reader."""
    counts = {}
    for kind, name in ((RANKING, "ranking_figures_asked"), (JUDGE, "judge_figures_asked")):
        module = _scoped(kind)[0]
        counts[name] = len(statistics_request(kind=kind, waiting=module.figures_due(), send=_sender(kind)))
    return counts


def scope_statistics_refresh(*, kind: str, scope: str) -> dict | None:
    """Compute one stored scope's figures now and store them (a worker's task, or a curator's
    "compute here now"); None when no row names that scope. The inputs' version is read before
    the inputs, as ``project_agreement_refresh`` does."""
    module = _scoped(kind)[0]
    key = {"project_id": None, "scope": scope}
    parameters = ProjectStatistics.objects.filter(kind=kind, **key).values_list("parameters", flat=True).first()
    if parameters is None:
        return None
    version, _ = module.figures_inputs(parameters)
    try:
        values, seconds = module.figures_compute(parameters)
    except Exception:
        statistics_failed(kind=kind, key=key)
        raise
    statistics_store(kind=kind, key=key, version=version, values=values, seconds=seconds)
    return values
