"""Reads for the annotation workspace: bounded queries, no per-row lookups.

``item_context_for`` is the one place that decides what a user may see of an item
(blind mode); views and the API must go through it.
"""

from collections import Counter, defaultdict
from typing import Any

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Case, Count, Exists, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from benchmark import selectors as benchmark_selectors
from core.accounts import is_global_curator
from benchmark.models import (
    SETTLED_STATUSES,
    ChecklistGroup,
    ChecklistItem,
    GoldReference,
    ReviewStatus,
    Task,
    TaskPrompt,
)
from benchmark.services.history import snapshot
from scoring.models import Verdict
from scoring.pipelines.judged import judged_inputs as scoring_judged_inputs

from . import rawsql
from .services.values import agreement_labels
from .models import (
    VERIFY_TARGETS,
    AnnotationItem,
    AnnotationProject,
    Assignment,
    Label,
    ProjectMembership,
    ReportPair,
    Role,
    TargetKind,
)

LABELLING_ROLES = (Role.CURATOR, Role.ANNOTATOR)


# --- Roles --------------------------------------------------------------------------------


def project_role(*, project: AnnotationProject, user) -> str | None:
    """The user's role in the project: their membership's role; else ``curator`` for global
    curators; else None (no access)."""
    if not getattr(user, "is_authenticated", False):
        return None
    role = ProjectMembership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
    if role:
        return role
    return Role.CURATOR if is_global_curator(user) else None


def project_with_role(*, project_id: int, user) -> tuple[AnnotationProject, str | None]:
    """The project and ``project_role`` of ``user`` in it, in one query (the membership's role
    rides along as a subquery); raises ``AnnotationProject.DoesNotExist``. Views resolve the
    role once per request with this and pass it down."""
    if not getattr(user, "is_authenticated", False):
        return AnnotationProject.objects.get(pk=project_id), None
    project = rawsql.first_row(
        AnnotationProject,
        f"SELECT p.*, (SELECT m.role FROM {rawsql.table(ProjectMembership)} m"
        f" WHERE m.project_id = p.id AND m.user_id = %s) AS my_role FROM {rawsql.table(AnnotationProject)} p"
        " WHERE p.id = %s",
        [user.pk, project_id],
    )
    if project is None:
        raise AnnotationProject.DoesNotExist(f"no annotation project {project_id}")
    if project.my_role:
        return project, project.my_role
    return project, Role.CURATOR if is_global_curator(user) else None


def projects_for(user) -> QuerySet[AnnotationProject]:
    """Projects the user may open, each annotated with ``my_role`` (membership role, or None for a
    global curator without membership), ``n_items`` and ``n_settled`` (complete or adjudicated).

    Annotators and viewers see only projects they belong to; global curators see all.
    """
    if not getattr(user, "is_authenticated", False):
        return AnnotationProject.objects.none()
    items = AnnotationItem.objects.filter(project=OuterRef("pk")).order_by().values("project")
    projects = AnnotationProject.objects.annotate(
        my_role=Subquery(ProjectMembership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]),
        n_items=Coalesce(Subquery(items.annotate(n=Count("pk")).values("n")), 0),
        n_settled=Coalesce(
            Subquery(items.exclude(status=AnnotationItem.Status.OPEN).annotate(n=Count("pk")).values("n")), 0
        ),
    )
    if is_global_curator(user):
        return projects
    return projects.filter(Exists(ProjectMembership.objects.filter(project=OuterRef("pk"), user=user)))


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
    mine = Label.objects.filter(annotator=user, project_id__in=list(stats)).values_list("project").annotate(
        n=Count("pk")
    )
    for project_id, n in mine.order_by():
        stats[project_id]["mine"] = n
    totals = (
        AnnotationItem.objects.filter(project_id__in=curated)
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


# --- Targets --------------------------------------------------------------------------------


# A pair's task prompt: its general prompt first, else the first one not rejected.
_PAIR_PROMPT = Subquery(
    TaskPrompt.objects.filter(task_id=OuterRef("task_id")).exclude(review_status=ReviewStatus.REJECTED)
    .order_by(Case(When(level=TaskPrompt.Level.GENERAL, then=0), default=1), "pk").values("text")[:1]
)


def _proposables(kind: str) -> QuerySet:
    """The rows of a verify kind, with what their ``str()`` reads (a gold reference is its bib entry)."""
    model = VERIFY_TARGETS[kind][0]
    return model.objects.select_related("bib_entry") if model is GoldReference else model.objects.all()


def item_targets(items: list[AnnotationItem], *, with_text: bool = False) -> dict[int, Any]:
    """item id → its target row (benchmark proposable, ``ReportPair`` or ``Verdict``): one query per kind.
    ``with_text``: a pair's reports come with their parsed outlines (the workspace shows them)."""
    by_kind: dict[str, list[AnnotationItem]] = defaultdict(list)
    for item in items:
        by_kind[item.target_kind].append(item)
    out: dict[int, Any] = {}
    for kind, group in by_kind.items():
        if kind == TargetKind.REPORT_PAIR:
            rows = ReportPair.objects.select_related("report_left__system", "report_right__system")
            if not with_text:
                rows = rows.defer("report_left__parsed", "report_right__parsed")
            else:  # with what both reports answer (``_pair_task``), in the same query
                rows = rows.select_related("task__survey").defer("task__survey__full_text").annotate(
                    task_prompt=_PAIR_PROMPT)
        elif kind == TargetKind.VERDICT:
            rows = Verdict.objects.select_related("report__system", "judge_config").defer(
                "report__parsed", "raw_response"
            )
        else:
            rows = _proposables(kind)
        found = rows.in_bulk([item.target_id for item in group])
        for item in group:
            out[item.pk] = found.get(item.target_id)
    return out


def item_target(item: AnnotationItem, *, with_text: bool = False) -> Any:
    """The target row of one item (None when it was deleted); ``with_text``: see ``item_targets``."""
    model = VERIFY_TARGETS.get(item.target_kind, (None,))[0]
    if model is not None and model is not GoldReference:  # a plain row: no related row to read along
        return rawsql.by_pk(model, item.target_id)
    return item_targets([item], with_text=with_text)[item.pk]


def _report_brief(report, *, blind: bool) -> dict:
    return {"report_id": report.pk, "system": None if blind else str(report.system),
            "system_label": None if blind else report.system.label}


def target_brief(item: AnnotationItem, target: Any, *, blind: bool = False, label_set: dict | None = None) -> dict:
    """A compact, JSON-ready description of an item's target for lists and the workspace.
    ``label_set``: the project's, of which a verdict's item offers its step's labels."""
    if target is None:
        return {"kind": item.target_kind, "id": item.target_id, "missing": True}
    if item.target_kind == TargetKind.REPORT_PAIR:
        return {
            "kind": item.target_kind, "id": target.pk, "task_id": target.task_id, "leg": target.leg,
            "left": _report_brief(target.report_left, blind=blind),
            "right": _report_brief(target.report_right, blind=blind),
        }
    if item.target_kind == TargetKind.VERDICT:
        return {
            "kind": item.target_kind, "id": target.pk, "report_id": target.report_id, "step": target.step,
            "judged_kind": target.target_kind, "judged_id": target.target_id, "judged_key": target.target_key,
            "labels": agreement_labels(label_set=label_set or {}, step=target.step),
        }
    return {
        "kind": item.target_kind, "id": target.pk, "text": str(target), "version": target.version,
        "review_status": target.review_status, "fields": snapshot(target),
    }


def _judge_view(verdict: Verdict) -> dict:
    return {
        "label": verdict.label, "score": verdict.score, "confidence": verdict.confidence,
        "rationale": verdict.rationale, "evidence": verdict.evidence, "judge_config": str(verdict.judge_config),
    }


def judged_inputs(verdicts: list[Verdict]) -> dict[int, dict]:
    """verdict id → what its judge was shown (``scoring.pipelines.judged``): ``judged_text`` in
    words and ``judged_input``, its parts (the whole report is marked, not copied). A bounded
    number of queries: one per judged kind, and a few per report for the steps that read its
    citations. It holds the question, never the verdict: blind mode shows it before labelling."""
    return {
        pk: {"judged_text": judged.text, "judged_input": judged.as_dict()}
        for pk, judged in scoring_judged_inputs(verdicts).items()
    }


def label_view(label: Label) -> dict:
    return {
        "id": label.pk, "annotator_id": label.annotator_id, "annotator": label.annotator.get_username(),
        "value": label.value, "created_at": label.created_at,
    }


def _gold_view(item: AnnotationItem) -> dict | None:
    gold = getattr(item, "gold", None) if item.status == AnnotationItem.Status.ADJUDICATED else None
    if gold is None:
        return None
    return {"value": gold.value, "note": gold.note, "decided_by_id": gold.decided_by_id, "decided_at": gold.decided_at}


# --- The workspace ----------------------------------------------------------------------------


def _claim_view(*, item: AnnotationItem, user) -> dict | None:
    """The user's unexpired claim on the item, for the workspace's countdown."""
    return (
        Assignment.objects.filter(item=item, user=user, status=Assignment.Status.ACTIVE, expires_at__gt=timezone.now())
        .values("id", "claimed_at", "expires_at")
        .first()
    )


# What the verify panel reads of the task for each kind of proposal, beside the survey
# (``display.verify_view``): the proposal's group, or its gold reference's bib entry.
_TASK_PANEL_PREFETCH = {
    TargetKind.CHECKLIST_ITEM: (
        Prefetch(
            "checklist_groups",
            queryset=ChecklistGroup.objects.prefetch_related(
                Prefetch("items", queryset=ChecklistItem.objects.order_by("position"))
            ).order_by("position"),
        ),
    ),
    TargetKind.GOLD_REFERENCE: (
        Prefetch("gold_references", queryset=GoldReference.objects.select_related("bib_entry")),
    ),
}
_TASK_PANEL_PREFETCH[TargetKind.CHECKLIST_GROUP] = _TASK_PANEL_PREFETCH[TargetKind.CHECKLIST_ITEM]


def _claim_dict(claim: Assignment) -> dict | None:
    if claim.status != Assignment.Status.ACTIVE or claim.expires_at <= timezone.now():
        return None
    return {"id": claim.pk, "claimed_at": claim.claimed_at, "expires_at": claim.expires_at}


def _pair_task(pair: ReportPair) -> dict:
    """What both reports of a pair answer: the task's key, title and prompt (its general prompt,
    else its first prompt not rejected, else its title) — benchmark content, never hidden. Read
    along with the pair (``item_targets`` with ``with_text``)."""
    title = pair.task.title or pair.task.survey.title
    return {"key": pair.task.key, "title": title, "prompt": pair.task_prompt or title}


def _verify_task(item: AnnotationItem, target: Any) -> Task | None:
    """The proposal's task with its survey and what the panel shows of the proposal's own
    kind (its checklist group, its gold reference); None for discipline-wide rubric criteria
    and deleted targets. Every sibling proposal (``task_material``) is read only when the
    workspace asks for it: most proposals never need it, and it is the bulk of the panel."""
    if item.project.kind != AnnotationProject.Kind.VERIFY or not item.task_id or target is None:
        return None
    tasks = (
        Task.objects.select_related("survey").defer("survey__full_text")  # megabytes the panel never shows
        .prefetch_related(*_TASK_PANEL_PREFETCH.get(item.target_kind, ()))
    )
    return tasks.filter(pk=item.task_id).first()


def task_material(*, task_id: int) -> Task:
    """The task with its survey and every proposal of every kind, prefetched (a bounded number
    of queries): the workspace's "everything proposed for this task" section."""
    return benchmark_selectors.task_detail(task_id=task_id)


def _project_view(project: AnnotationProject) -> dict:
    return {
        "id": project.pk, "name": project.name, "kind": project.kind, "blind": project.blind,
        "label_set": project.label_set, "dimensions": project.dimensions, "status": project.status,
    }


def label_form_context(*, item: AnnotationItem, project: AnnotationProject, target: Any) -> dict:
    """What a label form needs of an item (``forms.label_form_for``): the project and the
    target as an unrevealed labeller sees it — a submission is checked against this before
    ``label_submit`` takes the item's lock, without reading labels or claims. ``target``: the
    item's target row (``item_target``), which the caller passes on to ``label_submit``."""
    return {"project": _project_view(project),
            "target": target_brief(item, target, blind=project.blind, label_set=project.label_set)}


def item_context_for(
    *, item: AnnotationItem, user, with_task: bool = False, role: str | None = None, claim: Assignment | None = None,
    project: AnnotationProject | None = None, target: Any = None,
) -> dict:
    """Everything the workspace may show ``user`` about ``item``.

    In a blind project, other annotators' labels, the judge's verdict (agreement) and the
    system names (pairwise) stay hidden until the user has committed their own label;
    curators also see them once the item has all its labels. Raises ``PermissionError``
    for users outside the project.

    ``with_task`` (verify items): ``context["task"]`` is the proposal's task — its survey and
    sibling proposals, which the workspace shows beside the proposal — else None. Blind mode
    hides nothing of it: it is benchmark content, not anyone's label. A sibling's review
    status changes only once its own item has settled (agreed labels or a curator's gold
    label), and the current proposal's status stays "proposed" until this item settles, so it
    reveals no label of this item. Off by default: the API and the adjudication queue do not
    show it and need not pay its queries.

    ``role``: the user's role in the item's project when the caller already resolved it
    (``project_with_role``) in this request; else it is looked up. ``claim``: the user's
    unexpired claim on the item that ``claim_next_item`` just returned (then ``item`` is that
    claim's item, read in its transaction, and ``project`` the item's project read in this
    request: neither is read again); else the item is read afresh. ``target``: the item's
    target row when the caller read it in this request (``item_targets``, for a batch).
    """
    if claim is not None and project is not None and claim.item_id == item.pk and item.project_id == project.pk:
        item.project = project
    else:
        item = AnnotationItem.objects.select_related("project", "gold").get(pk=item.pk)
    project = item.project
    if role is None:
        role = project_role(project=project, user=user)
    if role is None:
        raise PermissionError(f"{user} is not a member of project {project.name!r}")
    revealed = not project.blind or (role == Role.CURATOR and item.status != AnnotationItem.Status.OPEN)
    # A claim the user holds is one they have not labelled under (a label ends it): nothing to read.
    held = claim is not None and claim.user_id == user.pk and claim.status == Assignment.Status.ACTIVE
    if not revealed and not held:  # blind: revealed by the user's own label; an unlabelled item reads no label
        (revealed,) = rawsql.scalar_row(
            f"SELECT EXISTS (SELECT 1 FROM {rawsql.table(Label)} WHERE item_id = %s AND annotator_id = %s)",
            [item.pk, user.pk],
        )
        revealed = bool(revealed)
    labels = list(item.labels.select_related("annotator")) if revealed else []
    own = next((label for label in labels if label.annotator_id == user.pk), None)
    if target is None or target.pk != item.target_id:
        target = item_target(item, with_text=True)
    context = {
        "project": _project_view(project),
        "role": role,
        "item": {
            "id": item.pk, "position": item.position, "status": item.status, "labels_needed": item.labels_needed,
            "labels_done": item.labels_done, "target_kind": item.target_kind, "target_id": item.target_id,
            "task_id": item.task_id, "conflict": item.conflict if revealed else "",
        },
        "target": target_brief(item, target, blind=not revealed, label_set=project.label_set),
        "own_label": label_view(own) if own else None,
        "claim": _claim_view(item=item, user=user) if claim is None else _claim_dict(claim),
        "revealed": revealed,
        "other_labels": [label_view(label) for label in labels if label is not own] if revealed else None,
        "judge": None,
        "gold": _gold_view(item) if revealed else None,
        "task": _verify_task(item, target) if with_task else None,
    }
    if target is not None and item.target_kind == TargetKind.REPORT_PAIR:
        context["target"]["task"] = _pair_task(target if hasattr(target, "task_prompt") else
                                               item_target(item, with_text=True))
        for side in ("left", "right"):
            report = getattr(target, f"report_{side}")
            outline = [[entry.get("level"), entry.get("title")] for entry in (report.parsed or {}).get("outline", [])]
            context["target"][side].update(text=report.text, outline=outline)
    if target is not None and item.target_kind == TargetKind.VERDICT:
        context["target"].update(judged_inputs([target])[target.pk])
        context["item"]["labels"] = context["target"]["labels"]
        context["target"]["report_text"] = target.report.text
        if revealed:
            context["judge"] = _judge_view(target)
    return context


def adjudication_queue(*, project: AnnotationProject, limit: int = 200) -> list[dict]:
    """Items waiting for a curator: complete, and their labels disagree (with each other, or with
    the judge in agreement projects), or an agreed decision could not be applied (``conflict``).
    Labels side by side, verdicts with the text of what the judge assessed (``judged_text``);
    a bounded number of queries whatever the length (items, labels with their annotators, one
    per target kind, one per judged kind)."""
    items = list(
        AnnotationItem.objects.filter(project=project, status=AnnotationItem.Status.COMPLETE)
        .filter(Q(disagreement=True) | ~Q(conflict=""))
        .prefetch_related("labels__annotator")
        .order_by("position", "id")[:limit]
    )
    targets = item_targets(items)
    verdicts = [
        targets[item.pk] for item in items if item.target_kind == TargetKind.VERDICT and targets[item.pk] is not None
    ]
    judged = judged_inputs(verdicts)
    rows = []
    for item in items:
        target = targets[item.pk]
        row = {
            "item_id": item.pk, "position": item.position, "task_id": item.task_id, "conflict": item.conflict,
            "target": target_brief(item, target, label_set=project.label_set),
            "labels": [label_view(label) for label in item.labels.all()],
        }
        if item.target_kind == TargetKind.VERDICT and target is not None:
            row["target"].update(judged[target.pk])
            row["judge"] = _judge_view(target)
        rows.append(row)
    return rows


def project_items(*, project: AnnotationProject, status: str = "") -> QuerySet[AnnotationItem]:
    items = AnnotationItem.objects.filter(project=project).order_by("position", "id")
    return items.filter(status=status) if status else items


def project_progress(*, project: AnnotationProject, user=None) -> dict:
    """Totals for the project and per-annotator counts: everyone's for curators (and for
    ``user=None``, internal use), only their own for annotators, none for viewers."""
    role = Role.CURATOR if user is None else project_role(project=project, user=user)
    if role is None:
        raise PermissionError(f"{user} is not a member of project {project.name!r}")
    now = timezone.now()
    totals = AnnotationItem.objects.filter(project=project).aggregate(
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
        label_scope = {} if role == Role.CURATOR else {"annotator": user}
        label_counts = (
            Label.objects.filter(project=project, **label_scope)
            .values_list("annotator")
            .annotate(n=Count("pk"))
            .order_by()
        )
        for annotator_id, n in label_counts:
            per_user[annotator_id]["labels"] = n
        assignment_counts = (
            Assignment.objects.filter(project=project, **scope)
            .values_list("user")
            .annotate(
                skips=Count("pk", filter=Q(status=Assignment.Status.SKIPPED)),
                active=Count("pk", filter=Q(status=Assignment.Status.ACTIVE, expires_at__gt=now)),
            )
            .order_by()
        )
        for user_id, skips, active in assignment_counts:
            per_user[user_id].update(skips=skips, active_claims=active)
        members = ProjectMembership.objects.filter(project=project, role__in=LABELLING_ROLES, **scope).values_list(
            "user", flat=True
        )
        for user_id in members:  # members with nothing done yet still get a row
            per_user.setdefault(user_id, Counter())
        if role != Role.CURATOR:
            per_user.setdefault(user.pk, Counter())
    names = dict(get_user_model().objects.filter(pk__in=per_user).values_list("pk", "username"))
    annotators = [
        {
            "user_id": user_id, "username": names.get(user_id, ""), "labels": counts["labels"],
            "skips": counts["skips"], "active_claims": counts["active_claims"],
        }
        for user_id, counts in sorted(per_user.items(), key=lambda kv: names.get(kv[0], ""))
    ]
    return {"project_id": project.pk, "role": role, **totals, "annotators": annotators}


PROGRESS_TOTALS_SECONDS = 5


def project_item_totals(*, project: AnnotationProject) -> dict:
    """``items`` and ``settled`` (not open) of the project, cached for a few seconds: counting
    every item of a large project costs more than the rest of a workspace request, and other
    annotators move the figure all the time anyway. Exact figures: ``project_progress``."""
    key = f"annotation:item-totals:{project.pk}"
    totals = cache.get(key)
    if totals is None:
        counts = AnnotationItem.objects.filter(project=project).aggregate(
            items=Count("pk"), open=Count("pk", filter=Q(status=AnnotationItem.Status.OPEN))
        )
        totals = {"items": counts["items"], "settled": counts["items"] - counts["open"]}
        cache.set(key, totals, PROGRESS_TOTALS_SECONDS)
    return totals


def own_progress(*, project: AnnotationProject, user) -> dict:
    """The workspace's progress line: the user's own labels and skips in the project
    (``mine``, exact) and the project's ``project_item_totals``."""
    labels, skips = rawsql.scalar_row(
        f"SELECT (SELECT COUNT(*) FROM {rawsql.table(Label)} WHERE project_id = %s AND annotator_id = %s),"
        f" (SELECT COUNT(*) FROM {rawsql.table(Assignment)} WHERE project_id = %s AND user_id = %s AND status = %s)",
        [project.pk, user.pk, project.pk, user.pk, Assignment.Status.SKIPPED],
    )
    return {"mine": {"labels": labels, "skips": skips}, **project_item_totals(project=project)}


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

