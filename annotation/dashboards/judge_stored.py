"""Judge vs people (``agreement.judge_agreement``) served from stored figures
(``ProjectStatistics`` of kind ``judge_agreement``), by the mechanism of the inter-annotator
figures and the human ranking (``stored``, ``services.agreement``).

A reader's figures are those of the agreement projects they may see (``agreement.judge_projects``):
one row per set of projects (``parameters``: their ids and the number of disagreements listed),
so a row is served only to readers who may see exactly its projects. The version of its inputs
(``figures_inputs``): per project its labels (the items' counters and the newest label id, as
``inter_annotator`` reads them), its name and declared scale; the gold labels of its items
(count, newest id, newest decision) and the judged verdicts (count, last change, and when the
systems they are about last changed). Labels are counted by the counters, never read, and the
size is the number of labels.

A set of at most ``INLINE_LABELS`` labels (the inter-annotator threshold: its bootstraps cost
about the same per label) is computed in the read; a larger one by a worker
(``annotation.refresh_judge_agreement``), the stored figures served meanwhile marked stale."""

from __future__ import annotations

import hashlib
import json
import time

from django.db.models import Count, Max, Sum

from annotation.models import AnnotationItem, Label, ProjectStatistics
from scoring.models import Verdict

from .agreement import DISAGREEMENT_LIMIT, judge_agreement_of, judge_projects
from .inter_annotator import INLINE_LABELS
from .selectors import jsonable
from .stored import scope_key, scope_read, scopes_due

KIND = ProjectStatistics.Kind.JUDGE_AGREEMENT
FORMAT = 1  # the stored figures' shape: raise it when ``judge_agreement_of`` changes, so older ones are recomputed


def judge_parameters(projects: list[dict], *, limit: int = DISAGREEMENT_LIMIT) -> dict:
    return {"projects": sorted(p["id"] for p in projects), "limit": limit}


def judge_key(parameters: dict) -> str:
    return scope_key(parameters)


def figures_inputs(parameters: dict, *, projects: list[dict] | None = None) -> tuple[str, int]:
    """The version of what judge-vs-people figures are of, and their number of labels.
    ``projects``: the rows of ``parameters``' projects when the caller has read them."""
    ids = parameters["projects"]
    projects = judge_projects(None, only=ids) if projects is None else projects
    items = AnnotationItem.objects.filter(project_id__in=ids, target_kind="verdict").order_by()
    found = items.aggregate(n=Sum("labels_done"), golds=Count("gold"), newest_gold=Max("gold__id"),
                            gold_decided=Max("gold__decided_at"))  # an item has at most one gold label
    n_labels = found.pop("n") or 0
    newest = [Label.objects.filter(project_id=p["id"]).order_by("-pk").values_list("pk", flat=True).first()
              for p in projects]  # one index step per project (see ``curated_projects``)
    others = {
        "projects": [[p["id"], p["name"], p["label_level"], p["label_set"]] for p in projects], "newest": newest,
        "gold": found,
        "verdicts": Verdict.objects.filter(pk__in=items.values("target_id")).order_by().aggregate(
            n=Count("pk"), changed=Max("updated_at"), named=Max("report__system__updated_at")),
    }
    digest = hashlib.sha256(json.dumps(jsonable(others), sort_keys=True).encode()).hexdigest()[:16]
    return f"{FORMAT}:{n_labels}:{digest}", n_labels


def figures_compute(parameters: dict) -> tuple[dict, float]:
    """One set of projects' judge-vs-people figures as plain JSON and the seconds taken."""
    started = time.perf_counter()
    values = jsonable(judge_agreement_of(projects=judge_projects(None, only=parameters["projects"]),
                                         limit=parameters["limit"]))
    return values, time.perf_counter() - started


def figures_due() -> list[dict]:
    return scopes_due(kind=KIND, inputs=figures_inputs, inline=INLINE_LABELS)


def judge_agreement_read(*, user, limit: int = DISAGREEMENT_LIMIT) -> dict:
    """``agreement.judge_agreement``'s figures for ``user`` as stored (see the module), with
    ``pending`` (none were ever computed: no group until a worker stores them), ``statistics``
    (``state``, ``computed_at``, ``seconds``, ``of_labels``, ``n_labels`` now, ``scope_key``) and
    ``poll_seconds``; and, for ``scope_statistics_settle``, ``computed_here`` and ``waiting``."""
    projects = judge_projects(user)
    parameters = judge_parameters(projects, limit=limit)
    version, n_labels = figures_inputs(parameters, projects=projects)
    read = scope_read(kind=KIND, parameters=parameters, version=version, size=n_labels, inline=INLINE_LABELS,
                      compute=figures_compute)
    values, statistics = read["values"], read["statistics"]
    statistics.update(of_labels=statistics.pop("of_size"), n_labels=statistics.pop("size"))
    return {**(values if values is not None else {"groups": [], "n_projects": len(projects)}),
            "pending": values is None, "statistics": statistics, "poll_seconds": read["poll_seconds"],
            "computed_here": read["computed_here"], "waiting": read["waiting"]}
