"""Calibrated scores computed by a worker and stored with the digest of their inputs
(``models.CalibratedScores``), as the agreement figures are (``services.agreement``).

A web process reads the inputs (verdicts and labels, with the ORM: ``selectors.calibrated_scores``)
and never imports ``ppi_py``, which loads numba, statsmodels, scikit-learn and pandas (+158 MiB
resident and ~9 s under load in the first request of every web worker, measured before this).
On a read:

- figures stored for exactly these inputs: served, ``state`` ``current``;
- otherwise a row with the inputs is stored and a worker asked for it
  (``annotation.refresh_calibrated_scores``; one request pending per row: a conditional UPDATE of
  ``requested_at``, so page polls and several web processes send one message); the newest figures
  computed for the same project, run and audience are served meanwhile, marked with when they
  were computed (``updating``, or ``no_worker`` while no worker is alive).

``audience`` is the digest of what a blind study hides from the reader (the verdict items still
blind to them, the reports a blind pair hides): figures of other inputs are only served to readers
who are hidden exactly the same things, so a stale figure never carries a verdict the reader may
not see. A worker's figures replace the older rows of their project, run and audience.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from ..blind import blind_items, hidden_reports
from ..models import CalibratedScores, TargetKind

logger = logging.getLogger(__name__)

FORMAT = 2  # the stored figures' shape: raise it when ``calibration_figures`` changes, so older ones are recomputed
PENDING_SECONDS = 15 * 60  # a request older than this is taken for lost (its worker died) and made again


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def audience_of(user) -> str:
    """What a blind study hides from ``user`` that the calibrated population would otherwise hold."""
    blind = sorted(blind_items(user).filter(target_kind=TargetKind.VERDICT).values_list("target_id", flat=True))
    hidden = sorted(hidden_reports(user).values_list("pk", flat=True))
    return _digest([blind, hidden])


def calibrated_figures_stored(*, project, run, user, inputs: list[dict]) -> tuple[list[dict], dict]:
    """``(metrics, statistics)`` for ``inputs`` as stored, asking a worker when they are not (see above)."""
    from core.workers import live_workers

    audience = audience_of(user)
    version = _digest([FORMAT, run.pk if run is not None else None, inputs])
    rows = CalibratedScores.objects.filter(project=project, audience=audience)
    row = rows.filter(version=version).values("pk", "values", "computed_at", "seconds", "requested_at").first()
    if row is not None and row["values"] is not None:
        return row["values"], {"state": "current", "computed_at": row["computed_at"], "seconds": row["seconds"]}
    if row is None:
        CalibratedScores.objects.bulk_create([CalibratedScores(
            project=project, run=run, audience=audience, version=version, inputs=inputs)], ignore_conflicts=True)
        row = rows.filter(version=version).values("pk", "values", "computed_at", "seconds", "requested_at").first()
    calibrated_scores_request(row_id=row["pk"])
    fresh = rows.filter(pk=row["pk"], values__isnull=False).values("values", "computed_at", "seconds").first()
    if fresh is not None:  # computed meanwhile (an eager worker, or one faster than this read)
        return fresh["values"], {"state": "current", "computed_at": fresh["computed_at"], "seconds": fresh["seconds"]}
    older = rows.filter(run=run, values__isnull=False).order_by("-created_at", "-pk").values(
        "values", "computed_at", "seconds").first()
    state = "updating" if live_workers() else "no_worker"
    if older is None:
        return [], {"state": state, "computed_at": None, "seconds": None}
    return older["values"], {"state": state, "computed_at": older["computed_at"], "seconds": older["seconds"]}


def calibrated_scores_request(*, row_id: int) -> bool:
    """Ask a worker for one row's figures unless a request is pending; True when asked. A message the
    broker refuses is logged and asked again at the next read (the stored figures stay served)."""
    from ..tasks import refresh_calibrated_scores

    now = timezone.now()
    free = Q(requested_at__isnull=True) | Q(requested_at__lt=now - timedelta(seconds=PENDING_SECONDS))
    if not CalibratedScores.objects.filter(free, pk=row_id, values__isnull=True).update(requested_at=now):
        return False
    try:
        refresh_calibrated_scores.apply_async((row_id,))
    except Exception:  # the broker is away
        logger.exception("could not ask a worker for calibrated scores %s", row_id)
        CalibratedScores.objects.filter(pk=row_id, requested_at=now).update(requested_at=None)
        return False
    return True


def calibrated_scores_refresh(*, row_id: int) -> bool:
    """Compute one row's figures from its stored inputs and store them (a worker's task); the older
    rows of its project, run and audience (computed or not: their inputs are superseded) are deleted. False when there is no such row."""
    from .selectors import calibration_figures

    row = CalibratedScores.objects.filter(pk=row_id).first()
    if row is None:
        return False
    started = time.perf_counter()
    try:
        values = calibration_figures(row.inputs)
    except Exception:
        CalibratedScores.objects.filter(pk=row_id).update(requested_at=None)
        raise
    seconds = time.perf_counter() - started
    CalibratedScores.objects.filter(pk=row_id).update(values=values, seconds=seconds, computed_at=timezone.now(),
                                                      requested_at=None)
    CalibratedScores.objects.filter(project_id=row.project_id, run_id=row.run_id, audience=row.audience,
                                    created_at__lte=row.created_at).exclude(pk=row_id).delete()
    return True
