"""Storing projects' inter-annotator agreement figures and asking a worker for new ones
(``annotation.dashboards.inter_annotator`` reads them and says which are due).

The figures are derived data (recomputing them from the labels gives them back), so they are
written without an audit row. Asking is debounced per project: one computation pending at a
time (``requested_at``, set by one conditional UPDATE, so of many requests — page polls, API
calls, several web processes — one sends the message), and a project's next computation starts
no sooner than ``DEBOUNCE_SECONDS`` after its last one ended: labels keep arriving during a
labelling session, and each computation reads every label then stored, so a burst of labels
costs one computation, not one per label or per page view.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from ..models import ProjectStatistics
from ..tasks import refresh_project_agreement

logger = logging.getLogger(__name__)

KIND = ProjectStatistics.Kind.INTER_ANNOTATOR
DEBOUNCE_SECONDS = 60
PENDING_SECONDS = 15 * 60  # a request older than this is taken for lost (its worker died) and made again


def agreement_statistics_store(*, project_id: int, version: str, values: dict, seconds: float,
                               computed_at=None) -> None:
    """Store one project's figures with the inputs' version they are of; ends its pending request."""
    ProjectStatistics.objects.update_or_create(project_id=project_id, kind=KIND, defaults={
        "version": version, "values": values, "seconds": seconds, "computed_at": computed_at or timezone.now(),
        "requested_at": None})


def agreement_statistics_request(*, waiting: list[dict]) -> list[int]:
    """Ask a worker (``annotation.refresh_project_agreement``) for new figures of each project in
    ``waiting`` (``inter_annotator``'s: project id, whether a row is stored, its ``computed_at``
    and ``requested_at``) that has no computation pending, to start ``DEBOUNCE_SECONDS`` after
    its last one at the earliest; returns the ids asked for. A project already pending costs no
    write (the page polls). A message the broker refuses is logged and asked for again at the
    next read: the page keeps serving the stored figures."""
    now = timezone.now()
    lost = now - timedelta(seconds=PENDING_SECONDS)
    due = [w for w in waiting if w["requested_at"] is None or w["requested_at"] < lost]
    ProjectStatistics.objects.bulk_create([ProjectStatistics(project_id=w["project_id"], kind=KIND)
                                           for w in due if not w["stored"]], ignore_conflicts=True)
    rows = ProjectStatistics.objects.filter(kind=KIND)
    free = Q(requested_at__isnull=True) | Q(requested_at__lt=lost)
    asked = []
    for project in due:
        project_id = project["project_id"]
        if not rows.filter(free, project_id=project_id).update(requested_at=now):
            continue  # asked for meanwhile: the computation to come reads these labels too
        last = project["computed_at"]
        countdown = max(0.0, (last + timedelta(seconds=DEBOUNCE_SECONDS) - now).total_seconds()) if last else 0.0
        try:
            refresh_project_agreement.apply_async((project_id,), countdown=countdown)
        except Exception:  # the broker is away: serve what is stored, ask again next time
            logger.exception("could not ask a worker for project %s's agreement figures", project_id)
            rows.filter(project_id=project_id, requested_at=now).update(requested_at=None)
            continue
        asked.append(project_id)
    return asked


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
    above), not only once somebody opens the page. A small project is computed when it is read."""
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
    return {"agreement_figures_asked": len(agreement_statistics_request(waiting=waiting))}


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
        ProjectStatistics.objects.filter(project_id=project_id, kind=KIND).update(requested_at=None)
        raise
    agreement_statistics_store(project_id=project_id, version=version, values=values, seconds=seconds)
    return values
