"""The task page's curation card (a panel registered with ``benchmark.views``): the task's status,
what keeps it from "curated", and the action — a solo review of its open proposals (accept, edit,
reject) and "mark curated" once nothing is left. Curators only; the rules are the services'
(``services.solo_review``, ``loop.settle.task_curate``)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from benchmark.models import SETTLED_STATUSES, Task
from benchmark.services.history import StaleEditError, snapshot
from core.accounts import is_global_curator
from core.http import refuse

from ..forms import VerifyEditForm
from ..models import VERIFY_TARGETS, TargetKind
from ..selectors.progress import task_curation_status, task_unsettled_proposals
from ..loop.settle import task_curate
from ..services.solo_review import SoloReviewError, proposal_review_solo

REVIEW_SHOWN = 40  # proposals listed at once; each decision brings the next one in
CURATORS_ONLY = "Only curators review a task's proposals or mark it curated."
_PLURAL = {"checklist_group": "checklist groups", "checklist_item": "checklist items", "prompt": "prompts",
           "constraint_question": "constraint questions", "gold_reference": "gold references",
           "nugget": "nuggets", "rubric_criterion": "rubric criteria"}


def _edit_form(kind: str, row, data=None) -> VerifyEditForm:
    # one form per row on the page: ids carry the row so none repeats
    return VerifyEditForm(data, prefix="edit", target_kind=kind, current=snapshot(row), auto_id=f"id_{kind}_{row.pk}_%s")


def curation_panel(request, task: Task) -> dict:
    """The context of ``benchmark/_curation.html``; nothing for anyone but a curator (the review
    statuses of a project's items are a curator's business)."""
    if not is_global_curator(request.user):
        return {}
    status = task_curation_status(task=task)
    blocking = []
    for kind, counts in status["kinds"].items():
        unsettled = sum(n for review_status, n in counts.items() if review_status not in SETTLED_STATUSES)
        if unsettled:
            blocking.append({"kind": kind, "n": unsettled,
                             "label": _PLURAL[kind] if unsettled > 1 else TargetKind(kind).label.lower()})
    rows = [{"kind": kind, "kind_label": TargetKind(kind).label, "row": row, "form": _edit_form(kind, row)}
            for kind, row in task_unsettled_proposals(task=task, limit=REVIEW_SHOWN)]
    return {"curation": {**status, "blocking": blocking, "pending": rows}}


def _back(task_id: int, anchor: str = "curation"):
    return redirect(f"{reverse('benchmark:task_detail', args=[task_id])}#{anchor}")


@require_POST
@login_required
def proposal_review(request, task_id: int, kind: str, pk: int):
    task = get_object_or_404(Task, pk=task_id)
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    decision = request.POST.get("decision", "")
    version = request.POST.get("expected_version", "")
    if not version.isdigit():
        messages.error(request, "Not applied: the form lacks the version it was based on; reload the page.")
        return _back(task.pk)
    edits = None
    if decision == "edit":
        model = VERIFY_TARGETS.get(kind, (None,))[0]
        row = model.objects.filter(pk=pk).first() if model else None
        if row is None:
            messages.error(request, f"Not applied: no {kind.replace('_', ' ')} #{pk}.")
            return _back(task.pk)
        form = _edit_form(kind, row, request.POST)
        if not form.is_valid():
            problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
            messages.error(request, f"Not applied: {problems}")
            return _back(task.pk, f"review-{kind}-{pk}")
        edits = form.edits()
    try:
        updated = proposal_review_solo(kind=kind, pk=pk, decision=decision, expected_version=int(version),
                                       actor=request.user, edits=edits, note=request.POST.get("note", ""))
    except LookupError as exc:
        messages.error(request, f"Not applied: {exc}.")
    except (SoloReviewError, StaleEditError, ValueError) as exc:
        messages.error(request, f"Not applied: {exc}")
    except ValidationError as exc:
        messages.error(request, f"Not applied: {'; '.join(exc.messages)}")
    else:
        what = f"{TargetKind(kind).label} #{pk} {updated.review_status}"
        task.refresh_from_db(fields=["status"])
        messages.success(request, f"{what}." + (" Every proposal is settled: the task is now curated."
                                                if updated.task_curated else ""))
    return _back(task.pk)


@require_POST
@login_required
def task_mark_curated(request, task_id: int):
    task = get_object_or_404(Task, pk=task_id)
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    try:
        task_curate(task=task, actor=request.user)
    except ValueError as exc:
        messages.error(request, f"Not curated: {exc}.")
    else:
        messages.success(request, f"Task {task.key} is curated.")
    return _back(task.pk)
