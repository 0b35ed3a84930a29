"""Counts: per project for the project list, per annotator for a project, the project's item
totals that the workspace's progress line shows (its own counts: ``annotation.loop.progress``),
and the review status of a task's proposals."""

from collections import Counter, defaultdict

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from benchmark.models import SETTLED_STATUSES, ReviewStatus, Task

from ..blind import revealed_unlabelled
from ..crowd.models import AttentionCheck
from ..crowd.selectors import attention_results, check_item_filter
from ..models import VERIFY_TARGETS, AnnotationItem, AnnotationProject, Assignment, Label, ProjectMembership, Role
from ..rules import claims_live
from .projects import LABELLING_ROLES, project_role, projects_for


def labelling_counts(*, project_ids: list[int], user=None) -> dict[tuple[int, int], Counter]:
    """(project id, user id) → the user's ``labels``, ``skips`` and unexpired ``active_claims``
    in the project, for everyone or for ``user`` alone: one query. Users with none of these have
    no entry. The workspace's progress line, on every request, reads its twin
    ``annotation.loop.store.own_counts``."""
    if not project_ids:
        return {}
    mine_labels = {} if user is None else {"annotator_id": user.pk}
    mine_claims = {} if user is None else {"user_id": user.pk}
    labels = (
        Label.objects.filter(project_id__in=project_ids, **mine_labels).order_by()
        .values_list("project_id", "annotator_id")
        .annotate(labels=Count("pk"), skips=Value(0), active=Value(0))
    )
    claims = (
        Assignment.objects.filter(project_id__in=project_ids, status__in=[Assignment.Status.SKIPPED,
                                                                          Assignment.Status.ACTIVE], **mine_claims)
        .order_by().values_list("project_id", "user_id")
        .annotate(labels=Value(0), skips=Count("pk", filter=Q(status=Assignment.Status.SKIPPED)),
                  active=Count("pk", filter=claims_live(timezone.now())))
    )
    counts: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for project_id, user_id, n_labels, skips, active in labels.union(claims, all=True):
        counts[project_id, user_id].update(labels=n_labels, skips=skips, active_claims=active)
    return counts


def projects_progress_for(*, user, projects) -> dict[int, dict]:
    """Per project (id →): the user's ``role`` in it, ``is_curator``, their own label count
    (``mine``) and the share of items settled (``percent``); for projects they curate also the
    label totals (``labels_done``, ``labels_needed``), the number of ``annotators`` and the items
    ``awaiting`` adjudication. For the project list: three queries whatever the number of
    projects (``projects`` come from ``projects_for``, whose rows carry ``my_role``, ``n_items``
    and ``n_settled``; other querysets are re-read through it, one query more).
    """
    projects = list(projects)
    ids = [project.pk for project in projects]
    if not ids:
        return {}
    if not all(hasattr(project, "n_items") for project in projects):
        projects = list(projects_for(user).filter(pk__in=ids))
    stats: dict[int, dict] = {}
    for project in projects:
        role = project.my_role or Role.CURATOR  # projects_for lists non-member projects to global curators only
        stats[project.pk] = {
            "role": role, "is_curator": role == Role.CURATOR, "mine": 0,
            "percent": round(100 * project.n_settled / project.n_items) if project.n_items else 0,
        }
    curated = [pk for pk, row in stats.items() if row["is_curator"]]
    for (project_id, _), counts in labelling_counts(project_ids=list(stats), user=user).items():
        stats[project_id]["mine"] = counts["labels"]
    totals = (
        # without crowd studies' attention checks: a NOT IN of a small table, not a join of every item
        AnnotationItem.objects.filter(project_id__in=curated).exclude(
            pk__in=AttentionCheck.objects.filter(item__project_id__in=curated).values("item_id"))
        .values_list("project")
        .annotate(
            labels_done=Sum("labels_done"), labels_needed=Sum("labels_needed"),
            awaiting=Count(
                "pk", filter=Q(status=AnnotationItem.Status.COMPLETE) & (Q(disagreement=True) | ~Q(conflict=""))
            ),
        )
        .order_by()
    )
    for project_id in curated:
        stats[project_id].update(labels_done=0, labels_needed=0, awaiting=0, annotators=0)
    for project_id, done, needed, awaiting in totals:
        stats[project_id].update(labels_done=done, labels_needed=needed, awaiting=awaiting)
    members = (
        ProjectMembership.objects.filter(project_id__in=curated, role=Role.ANNOTATOR)
        .values_list("project")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for project_id, n in members:
        stats[project_id]["annotators"] = n
    return stats


def project_progress(*, project: AnnotationProject, user=None) -> dict:
    """Totals for the project and per-annotator counts: everyone's for curators (and for
    ``user=None``, internal use), only their own for annotators, none for viewers. In a blind
    project that is not closed, annotators and viewers get no adjudication counts (None; the
    adjudicated items count as complete)."""
    role = Role.CURATOR if user is None else project_role(project=project, user=user)
    if role is None:
        raise PermissionError(f"{user} is not a member of project {project.name!r}")
    # a crowd study's attention checks are no items of the study (``annotation.crowd``): counted apart
    items = AnnotationItem.objects.filter(project=project)
    if project.has_crowd_study:
        items = items.filter(check_item_filter())
    totals = items.aggregate(
        items=Count("pk"),
        open=Count("pk", filter=Q(status=AnnotationItem.Status.OPEN)),
        complete=Count("pk", filter=Q(status=AnnotationItem.Status.COMPLETE)),
        adjudicated=Count("pk", filter=Q(status=AnnotationItem.Status.ADJUDICATED)),
        awaiting_adjudication=Count(
            "pk", filter=Q(status=AnnotationItem.Status.COMPLETE) & (Q(disagreement=True) | ~Q(conflict=""))
        ),
        labels_done=Coalesce(Sum("labels_done"), 0),
        labels_needed=Coalesce(Sum("labels_needed"), 0),
    )
    per_user: dict[int, Counter] = defaultdict(Counter)
    scope = {} if role == Role.CURATOR else {"user": user}
    if role != Role.VIEWER:
        counted = labelling_counts(project_ids=[project.pk], user=None if role == Role.CURATOR else user)
        for (_, user_id), counts in counted.items():
            per_user[user_id] = counts
        members = ProjectMembership.objects.filter(project=project, role__in=LABELLING_ROLES, **scope).values_list(
            "user", flat=True
        )
        for user_id in members:  # members with nothing done yet still get a row
            per_user.setdefault(user_id, Counter())
        if role != Role.CURATOR:
            per_user.setdefault(user.pk, Counter())
    names = dict(get_user_model().objects.filter(pk__in=per_user).values_list("pk", "username"))
    timing = annotator_timing(project=project, user_ids=list(per_user))
    # attention checks (``annotation.crowd``): curators' alone, since a worker told of a failure
    # would learn which items were checks
    checks = attention_results(project=project, user_ids=list(per_user)) if (
        role == Role.CURATOR and project.has_crowd_study) else None
    no_checks = {"checks": 0, "failed": 0, "flagged": False}
    annotators = [
        {
            "user_id": user_id, "username": names.get(user_id, ""), "labels": counts["labels"],
            "skips": counts["skips"], "active_claims": counts["active_claims"],
            **timing.get(user_id, {"seconds_median": None, "seconds_mean": None, "n_timed": 0, "last_activity": None}),
            **({"attention_checks": None, "attention_failed": None, "flagged": None} if checks is None else dict(
                zip(("attention_checks", "attention_failed", "flagged"), checks.get(user_id, no_checks).values()))),
        }
        for user_id, counts in sorted(per_user.items(), key=lambda kv: names.get(kv[0], ""))
    ]
    if not revealed_unlabelled(blind=project.blind, role=role, status=AnnotationItem.Status.COMPLETE,
                               closed=project.status == AnnotationProject.Status.CLOSED):
        # Blind mode: how many labels disagreed (with each other, with the judge) is the curators'
        # until the study closes; a count that moves after a label would tell whose did.
        totals["complete"] += totals["adjudicated"]
        totals["adjudicated"] = totals["awaiting_adjudication"] = None
    return {"project_id": project.pk, "role": role, **totals, "annotators": annotators}


def annotator_timing(*, project: AnnotationProject, user_ids: list[int]) -> dict[int, dict]:
    """Per annotator of the project: the median and mean ``seconds_taken`` of their labels that
    carry one (``n_timed`` of them; labels from before the time was recorded, or sent by an API
    client that did not measure it, do not count) and ``last_activity``, the time of their newest
    label or skip in the project. docs/statistics.md § Time per item."""
    if not user_ids:
        return {}
    seconds: dict[int, list[float]] = defaultdict(list)
    last: dict[int, object] = {}
    rows = Label.objects.filter(project=project, annotator_id__in=user_ids).values_list(
        "annotator_id", "seconds_taken", "created_at")
    for user_id, taken, created_at in rows.iterator(chunk_size=5000):
        if taken is not None:
            seconds[user_id].append(taken)
        if user_id not in last or created_at > last[user_id]:
            last[user_id] = created_at
    skipped = Assignment.objects.filter(project=project, user_id__in=user_ids, status=Assignment.Status.SKIPPED,
                                        ended_at__isnull=False).values("user_id").annotate(newest=Max("ended_at"))
    for row in skipped:
        if row["user_id"] not in last or row["newest"] > last[row["user_id"]]:
            last[row["user_id"]] = row["newest"]
    timing = {}
    for user_id in set(seconds) | set(last):
        values = sorted(seconds.get(user_id, []))
        n = len(values)
        median = (values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2) if n else None
        timing[user_id] = {"seconds_median": median, "seconds_mean": sum(values) / n if n else None, "n_timed": n,
                           "last_activity": last.get(user_id)}
    return timing


PROGRESS_TOTALS_SECONDS = 5


def project_item_totals(*, project: AnnotationProject) -> dict:
    """``items`` and ``settled`` (not open) of the project, cached for a few seconds: counting
    every item of a large project costs more than the rest of a workspace request, and other
    annotators move the figure all the time anyway. Exact figures: ``project_progress``. The
    workspace's progress line: ``annotation.loop.progress.own_progress``."""
    key = f"annotation:item-totals:{project.pk}"
    totals = cache.get(key)
    if totals is None:
        items = AnnotationItem.objects.filter(project=project)
        counts = (items.filter(check_item_filter()) if project.has_crowd_study else items).aggregate(
            items=Count("pk"), open=Count("pk", filter=Q(status=AnnotationItem.Status.OPEN))
        )
        totals = {"items": counts["items"], "settled": counts["items"] - counts["open"]}
        cache.set(key, totals, PROGRESS_TOTALS_SECONDS)
    return totals


def task_curation_status(*, task: Task) -> dict:
    """Review-status counts of every proposable item of the task, per kind: one query per kind.

    ``curatable`` is true when there is at least one item and all are settled
    (accepted, edited or rejected).
    """
    kinds = {}
    total = settled = 0
    for kind, (model, task_path) in VERIFY_TARGETS.items():
        rows = model.objects.filter(**{task_path: task}).values_list("review_status").annotate(n=Count("pk")).order_by()
        counts = dict(rows)
        kinds[kind] = {status: counts.get(status, 0) for status in ReviewStatus.values}
        total += sum(counts.values())
        settled += sum(counts.get(status, 0) for status in SETTLED_STATUSES)
    return {
        "task_id": task.pk, "status": task.status, "total": total, "settled": settled, "unsettled": total - settled,
        "curatable": total > 0 and settled == total, "kinds": kinds,
    }



def task_unsettled_proposals(*, task: Task, limit: int) -> list[tuple[str, object]]:
    """The task's first ``limit`` proposals nobody has settled (proposed, or imported without a
    review), as ``(kind, row)`` in ``VERIFY_TARGETS`` order then creation order: what the task
    page's solo review lists."""
    rows: list[tuple[str, object]] = []
    for kind, (model, task_path) in VERIFY_TARGETS.items():
        if len(rows) >= limit:
            break
        query = model.objects.filter(**{task_path: task}).exclude(review_status__in=SETTLED_STATUSES).order_by("pk")
        if kind == "checklist_item":
            query = query.select_related("group")
        elif kind == "gold_reference":
            query = query.select_related("bib_entry")
        rows += [(kind, row) for row in query[:limit - len(rows)]]
    return rows
