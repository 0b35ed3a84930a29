"""Reading figures stored by scope (``ProjectStatistics`` rows with no project, named by the
digest of their parameters): the human ranking (``human_stored``) and judge vs people
(``judge_stored``). The rule is the inter-annotator agreement's (``inter_annotator``):

- the stored version equals the inputs' version: the stored figures;
- otherwise, inputs of at most the kind's inline size: computed in the read, and the caller
  stores them (``services.agreement.scope_statistics_settle``);
- larger: left to a worker (asked for by the caller, debounced there); the stored figures, if
  any, are served with when they were computed and how large their inputs were, and the page
  polls until new ones are stored.

Each kind's module says what its figures are of (``figures_inputs``: the version and the size)
and computes them (``figures_compute``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.utils import timezone

from annotation.models import ProjectStatistics

from .inter_annotator import POLL_NO_WORKER_SECONDS, POLL_SECONDS

STORED_FIELDS = ("id", "version", "values", "computed_at", "seconds", "requested_at")
RECOVERY_SCOPES = 100  # at a worker's recovery: the most recently computed scopes of a kind looked at


def scope_key(parameters: dict) -> str:
    """The name of the row of figures with these parameters."""
    return hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest()


def version_size(version: str) -> int | None:
    """The size of the inputs stored figures are of (a version reads ``FORMAT:size:...``)."""
    try:
        return int(version.split(":")[1])
    except (IndexError, ValueError):
        return None


def scope_read(*, kind: str, parameters: dict, version: str, size: int, inline: int,
               compute: Callable[[dict], tuple[dict, float]]) -> dict:
    """The stored figures of ``parameters`` as the rule above says: ``values`` (None: none were
    ever computed), ``statistics`` (``state``: ``current``, ``updating`` or ``no_worker``;
    ``computed_at``, ``seconds``, ``of_size``: the inputs' size the figures are of, ``size``:
    now, ``scope_key``), ``poll_seconds``, and for the settling service ``computed_here`` and
    ``waiting``."""
    from core.workers import live_workers

    key = {"project_id": None, "scope": scope_key(parameters)}
    stored = ProjectStatistics.objects.filter(kind=kind, project__isnull=True, scope=key["scope"]) \
        .values(*STORED_FIELDS).first() or dict.fromkeys(STORED_FIELDS)
    computed_here, waiting = [], []
    if stored["values"] is not None and stored["version"] == version:
        values, state, computed_at, seconds, of = stored["values"], "current", stored["computed_at"], stored["seconds"], size
    elif size <= inline:
        values, seconds = compute(parameters)
        state, computed_at, of = "current", timezone.now(), size
        computed_here.append({"key": key, "version": version, "values": values, "seconds": seconds,
                              "computed_at": computed_at, "parameters": parameters})
    else:
        state = "updating" if live_workers() else "no_worker"
        values, computed_at, seconds = stored["values"], stored["computed_at"], stored["seconds"]
        of = version_size(stored["version"]) if values is not None else None
        waiting.append({"key": key, "stored": stored["id"] is not None, "computed_at": computed_at,
                        "requested_at": stored["requested_at"], "parameters": parameters})
    return {"values": values, "poll_seconds": {"updating": POLL_SECONDS, "no_worker": POLL_NO_WORKER_SECONDS}.get(state),
            "statistics": {"state": state, "computed_at": computed_at, "seconds": seconds, "of_size": of,
                           "size": size, "scope_key": key["scope"]},
            "computed_here": computed_here, "waiting": waiting}


def scope_stored(*, kind: str, scope: str) -> bool:
    """Whether a row names these figures (what "compute here now" may compute)."""
    return ProjectStatistics.objects.filter(kind=kind, project__isnull=True, scope=scope,
                                            parameters__isnull=False).exists()


def scopes_due(*, kind: str, inputs: Callable[[dict], tuple[str, int]], inline: int) -> list[dict]:
    """Stored figures of a kind (the ``RECOVERY_SCOPES`` computed last) too large to compute in a
    request whose inputs changed since they were computed: ``statistics_request``'s rows."""
    rows = ProjectStatistics.objects.filter(kind=kind, project__isnull=True, parameters__isnull=False) \
        .order_by("-computed_at").values("scope", "parameters", *STORED_FIELDS)[:RECOVERY_SCOPES]
    due = []
    for row in rows:
        version, size = inputs(row["parameters"])
        if size <= inline or (row["values"] is not None and row["version"] == version):
            continue
        due.append({"key": {"project_id": None, "scope": row["scope"]}, "stored": True,
                    "computed_at": row["computed_at"], "requested_at": row["requested_at"]})
    return due
