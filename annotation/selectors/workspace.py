"""One item as the workspace shows it to a user (``item_context_for``, which applies blind
mode), the label form's context, and the curator's adjudication queue."""

import copy
from typing import Any

from django.db.models import Prefetch, Q, prefetch_related_objects
from django.utils import timezone

from benchmark import selectors as benchmark_selectors
from benchmark.models import ChecklistGroup, ChecklistItem, GoldReference, Task
from core.compiled import CompiledRead

from ..blind import NO_ITEM, hidden_elsewhere, item_reachable, item_revealed, status_shown, target_id_shown
from ..blind import revealed as blind_revealed  # the rule itself; ``revealed`` names the item's flag here
from ..kinds.rating import task_criteria
from ..models import VERIFY_TARGETS, AnnotationItem, AnnotationProject, Assignment, ReportPair, TargetKind
from ..rules import claim_live, claims_live
from .projects import project_role
from .targets import gold_view, item_target, item_targets, judge_view, judged_inputs, label_view, target_brief


def _claim_view(*, item: AnnotationItem, user) -> dict | None:
    """The user's unexpired claim on the item, for the workspace's countdown."""
    return (
        Assignment.objects.filter(claims_live(timezone.now()), item=item, user=user)
        .values("id", "claimed_at", "expires_at")
        .first()
    )


def _task_panel_prefetch(kind: str, target_id: int) -> tuple:
    """What the verify panel reads of the task beside its survey (``display.verify_view``): the
    proposal's own group with its items, or its gold reference with its bib entry — bounded by
    what the panel shows, whatever the size of the task (a task of 465 checklist items read them
    all on every workspace POST before)."""
    if kind in (TargetKind.CHECKLIST_ITEM, TargetKind.CHECKLIST_GROUP):
        groups = ChecklistGroup.objects.filter(items__pk=target_id) if kind == TargetKind.CHECKLIST_ITEM else (
            ChecklistGroup.objects.filter(pk=target_id))
        return (Prefetch("checklist_groups", queryset=groups.prefetch_related(
            Prefetch("items", queryset=ChecklistItem.objects.order_by("position"))).order_by("position")),)
    if kind == TargetKind.GOLD_REFERENCE:
        return (Prefetch("gold_references",
                         queryset=GoldReference.objects.filter(pk=target_id).select_related("bib_entry")),)
    return ()


def _claim_dict(claim: Assignment) -> dict | None:
    if not claim_live(status=claim.status, expires_at=claim.expires_at, now=timezone.now()):
        return None
    return {"id": claim.pk, "claimed_at": claim.claimed_at, "expires_at": claim.expires_at}


def _pair_task(pair: ReportPair) -> dict:
    """What both reports of a pair answer: the task's key, title and prompt (its general prompt,
    else its first prompt not rejected, else its title) — benchmark content, never hidden. Read
    along with the pair (``item_targets`` with ``with_text``)."""
    title = pair.task.title or pair.task.survey.title
    return {"key": pair.task.key, "title": title, "prompt": pair.task_prompt or title}


_SURVEY_UNREAD = ("full_text",)  # megabytes the panel never shows
# the next item's task, on every workspace POST: compiled once per process (``core.compiled``)
_TASK_WITH_SURVEY = CompiledRead(lambda task_id: Task.objects.select_related("survey").defer(
    *(f"survey__{name}" for name in _SURVEY_UNREAD)).filter(pk=task_id).order_by()[:1], "task_id")


def _verify_task(item: AnnotationItem, target: Any, *, known: Task | None = None) -> Task | None:
    """The proposal's task with its survey and what the panel shows of the proposal's own
    kind (its checklist group, its gold reference); None for discipline-wide rubric criteria
    and deleted targets. Every sibling proposal (``task_material``) is read only when the
    workspace asks for it: most proposals never need it, and it is the bulk of the panel.
    ``known``: a task this request already read this way (the panel's other item); used when it
    is the item's and was read for the same proposal (a prefetch it already holds is not read again)."""
    if item.target_kind not in VERIFY_TARGETS or not item.task_id or target is None:
        return None
    panel_for = (item.target_kind, item.target_id)
    if known is not None and known.pk == item.task_id and getattr(known, "panel_for", None) == panel_for:
        return known
    if known is not None and known.pk == item.task_id:  # the same task, another proposal: its own part
        task = copy.copy(known)
        task._prefetched_objects_cache = {}
    else:
        task = _TASK_WITH_SURVEY.first(task_id=item.task_id)
    if task is None:
        return None
    prefetch_related_objects([task], *_task_panel_prefetch(item.target_kind, item.target_id))
    task.panel_for = panel_for  # the prefetch holds this proposal's part of the task only
    return task


def task_material(*, task_id: int) -> Task:
    """The task with its survey and every proposal of every kind, prefetched (a bounded number
    of queries): the workspace's "everything proposed for this task" section."""
    return benchmark_selectors.task_detail(task_id=task_id)


def _project_view(project: AnnotationProject) -> dict:
    return {
        "id": project.pk, "name": project.name, "kind": project.kind, "blind": project.blind,
        "label_set": project.label_set, "dimensions": project.dimensions, "status": project.status,
        "criteria": project.criteria, "scale": project.scale, "component": project.component,
        "label_help": project.label_help,
    }


def label_form_context(*, item: AnnotationItem, project: AnnotationProject, target: Any) -> dict:
    """What a label form needs of an item (``forms.label_form_for``): the project and the
    target as an unrevealed labeller sees it — a submission is checked against this before
    ``label_submit`` takes the item's lock, without reading labels or claims. ``target``: the
    item's target row (``item_target``), which the caller passes on to ``label_submit``."""
    brief = target_brief(item, target, blind=project.blind, label_set=project.label_set)
    if item.target_kind == TargetKind.REPORT and target is not None:
        brief["criteria"] = task_criteria(project, target.task_id)
    return {"project": _project_view(project), "target": brief}


def item_context_for(
    *, item: AnnotationItem, user, with_task: bool = False, role: str | None = None, claim: Assignment | None = None,
    project: AnnotationProject | None = None, target: Any = None, task: Task | None = None,
) -> dict:
    """Everything the workspace may show ``user`` about ``item``.

    In a blind project, other annotators' labels, the judge's verdict (agreement), the
    adjudication and the reports compared (pairwise: ids and systems; the sides' text is
    shown) stay hidden until the item is revealed to the user: after their own label, or when
    the study closes, as the project says; curators also see them once the item has all its
    labels (``annotation.blind``, whose ``item_revealed`` decides it). Raises
    ``PermissionError`` for users outside the project.

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
    target row when the caller read it in this request (``item_targets``, for a batch); else
    the row read along with the item (``item.target_row``: ``claim_next_items`` joins a verify
    item's), else it is read here. ``task``: with ``with_task``, a task this request already
    read for the panel's other item (``context["task"]`` of it): not read again when it is this
    item's.
    """
    if target is None:
        target = getattr(item, "target_row", None)
    if claim is not None and project is not None and claim.item_id == item.pk and item.project_id == project.pk:
        item.project = project
    else:
        item = AnnotationItem.objects.select_related("project", "gold").get(pk=item.pk)
    project = item.project
    if role is None:
        role = project_role(project=project, user=user)
    if role is None:
        raise PermissionError(f"{user} is not a member of project {project.name!r}")
    held = claim is not None and claim.user_id == user.pk and claim.status == Assignment.Status.ACTIVE
    if not item_reachable(item=item, project=project, role=role, user=user, holds_claim=held):
        raise AnnotationItem.DoesNotExist(NO_ITEM)  # as a missing item: blind mode's reach
    revealed = item_revealed(item=item, role=role, user=user, holds_claim=held)
    if target is None or target.pk != item.target_id:
        target = item_target(item, with_text=True)
    elsewhere = revealed and hidden_elsewhere(item=item, target=target, user=user)
    revealed = revealed and not elsewhere  # another project's blind study still hides it from this user
    if revealed:
        labels = list(item.labels.select_related("annotator"))
    elif held or (not elsewhere and blind_revealed(project=project, role=role, status=item.status, labelled=True)):
        labels = []  # not labelled: a claim is held, or ``item_revealed`` found no label of theirs
    else:  # a study that reveals at close: their own label, whose value names no report
        labels = list(item.labels.filter(annotator=user).select_related("annotator"))
    own = next((label for label in labels if label.annotator_id == user.pk), None)
    context = {
        "project": _project_view(project),
        "role": role,
        "item": {
            "id": item.pk, "position": item.position, "status": status_shown(item.status, revealed=revealed),
            # a crowd study's attention checks take every worker's label (``annotation.crowd``): their
            # counts would single them out, so its labellers see no item's counts
            **({"labels_needed": None, "labels_done": None} if project.has_crowd_study and role != "curator"
               else {"labels_needed": item.labels_needed, "labels_done": item.labels_done}),
            "target_kind": item.target_kind,
            "target_id": target_id_shown(kind=item.target_kind, target_id=item.target_id, revealed=revealed),
            "task_id": item.task_id, "conflict": item.conflict if revealed else "",
        },
        "target": target_brief(item, target, blind=not revealed, label_set=project.label_set),
        "own_label": label_view(own, revealed=revealed) if own else None,
        "claim": _claim_view(item=item, user=user) if claim is None else _claim_dict(claim),
        "revealed": revealed,
        "other_labels": [label_view(label) for label in labels if label is not own] if revealed else None,
        "judge": None,
        "gold": gold_view(item) if revealed else None,
        "task": _verify_task(item, target, known=task) if with_task else None,
    }
    if target is not None and item.target_kind == TargetKind.REPORT_PAIR:
        context["target"]["task"] = _pair_task(target if hasattr(target, "task_prompt") else
                                               item_target(item, with_text=True))
        for side in ("left", "right"):
            report = getattr(target, f"report_{side}")
            outline = [[entry.get("level"), entry.get("title")] for entry in (report.parsed or {}).get("outline", [])]
            context["target"][side].update(text=report.text, outline=outline)
    if target is not None and item.target_kind == TargetKind.REPORT:  # the rating's report and its criteria
        context["target"].update(text=target.text, task={"key": target.task.key,
                                                          "title": target.task.title or target.task.survey.title},
                                  criteria=task_criteria(project, target.task_id))
    if target is not None and item.target_kind == TargetKind.VERDICT:
        context["target"].update(judged_inputs([target])[target.pk])
        context["item"]["labels"] = context["target"]["labels"]
        context["target"]["report_text"] = target.report.text
        if revealed:
            context["judge"] = judge_view(target)
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
            row["judge"] = judge_view(target)
        rows.append(row)
    return rows

