"""Reads of crowd studies: the next claims of a worker (the loop's claim planner), where a worker
stands against their quota, and attention-check results per annotator."""

import random
from collections import defaultdict
from datetime import datetime

from django.db.models import Q

from ..models import AnnotationItem, AnnotationProject, Assignment, Label
from .models import AttentionCheck, CrowdStudy, CrowdWorker
from .services import check_seed


def worker_in(*, project: AnnotationProject, user) -> CrowdWorker | None:
    """The user's crowd account in the project, with its study; None for everyone else."""
    return CrowdWorker.objects.select_related("study").filter(user=user, study__project=project).first()


def check_slots(study: CrowdStudy, user_id: int) -> set[int]:
    """Which of a worker's ``quota`` positions (0-based) are attention checks: ``check_rate`` of
    them, rounded, drawn with the worker's secret seed, so neither their place nor their spacing
    can be told from outside."""
    n_checks = round(study.quota * study.check_rate)
    return set(random.Random(check_seed(study, user_id)).sample(range(study.quota), n_checks))


def claim_plan(*, project: AnnotationProject, user, now: datetime, held: list[Assignment], want: int) -> list:
    """The loop's claim planner (``annotation.loop.claims.claim_planner_register``): for a crowd
    worker, at most their quota less what they labelled and hold, each slot either an attention
    check (an item, locked) or None (the next item in the usual order); for anyone else ``want``
    Nones. Inside the claim's transaction."""
    worker = worker_in(project=project, user=user)
    if worker is None:
        return [None] * want
    study = worker.study
    used = Label.objects.filter(project=project, annotator=user).count() + len(held)
    n = max(0, min(want, study.quota - used))
    if not n:
        return []
    slots = check_slots(study, user.pk)
    plan: list = [None] * n
    due = [i for i, slot in enumerate(range(used, used + n)) if slot in slots]
    if due:
        taken = {claim.item_id for claim in held}
        candidates = list(
            AnnotationItem.objects.select_for_update(no_key=True, skip_locked=True, of=("self",))
            .filter(project=project, status=AnnotationItem.Status.OPEN, attention_check__isnull=False)
            .exclude(pk__in=taken).exclude(labels__annotator=user)
            .exclude(assignments__user=user, assignments__status=Assignment.Status.SKIPPED)
            .order_by("pk")
        )
        random.Random(check_seed(study, user.pk) + used).shuffle(candidates)
        for i in due:
            if candidates:
                plan[i] = candidates.pop()
    return plan


def worker_standing(*, worker: CrowdWorker) -> dict:
    """How far the worker is: ``labelled`` of ``quota``, and ``done`` once the quota is reached or
    nothing is left for them (``nothing_left``, asked by the caller that tried to claim)."""
    labelled = Label.objects.filter(project_id=worker.study.project_id, annotator_id=worker.user_id).count()
    return {"labelled": labelled, "quota": worker.study.quota, "done": labelled >= worker.study.quota}


def check_passed(expected: dict, value: dict) -> bool:
    """A label passes an attention check when every field of the known answer has its value."""
    return all(value.get(field) == answer for field, answer in expected.items())


def attention_results(*, project: AnnotationProject, user_ids=None) -> dict[int, dict]:
    """Per annotator with a label on an attention check of the project (``user_ids``: only these):
    ``checks`` labelled, ``failed`` of them, and ``flagged`` (``failed`` reached the study's
    ``max_failures``; without a study, one failure). One query for the labels, one for the study."""
    rows = Label.objects.filter(project=project, item__attention_check__isnull=False)
    if user_ids is not None:
        rows = rows.filter(annotator_id__in=list(user_ids))
    threshold = CrowdStudy.objects.filter(project=project).values_list("max_failures", flat=True).first() or 1
    results: dict[int, dict] = defaultdict(lambda: {"checks": 0, "failed": 0, "flagged": False})
    for user_id, value, expected in rows.values_list("annotator_id", "value", "item__attention_check__expected"):
        row = results[user_id]
        row["checks"] += 1
        row["failed"] += not check_passed(expected, value or {})
        row["flagged"] = row["failed"] >= threshold
    return dict(results)


def flagged_annotators(*, project: AnnotationProject) -> set[int]:
    """The annotators of the project whose attention checks flag them (``attention_results``)."""
    return {user_id for user_id, row in attention_results(project=project).items() if row["flagged"]}


def check_item_filter(prefix: str = "") -> Q:
    """Items that are no attention check, as a filter (``prefix``: the path to the item)."""
    return Q(**{f"{prefix}attention_check__isnull": True})


__all__ = ["AttentionCheck", "attention_results", "check_item_filter", "check_passed", "claim_plan",
           "flagged_annotators", "worker_in", "worker_standing"]
