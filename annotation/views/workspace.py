"""The labelling workspace: the claimed item, submit, skip, undo — htmx swaps ``#workspace``.

Every response to an htmx request is the panel partial (plus the progress line out of band);
the same URLs serve full pages without JavaScript. What an item shows comes from
``item_context_for`` only (it enforces blind mode).
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchmark import selectors as benchmark_selectors
from benchmark.models import Task

from ..assignment import assignment_skip, next_item_for
from ..forms import label_form_for, service_error_attach
from ..models import AnnotationItem, AnnotationProject, Assignment, TargetKind
from ..selectors import LABELLING_ROLES, item_context_for, project_progress
from ..services.errors import AnnotationError, ProjectNotOpenError
from ..services.labels import label_submit, label_undo_last
from . import display
from .access import alert, item_in, project_for, refuse

Kind = AnnotationProject.Kind


def _task_of(context: dict):
    """Verify panels show the proposal's task (its survey and sibling proposals) beside it."""
    task_id = context["item"]["task_id"]
    if context["project"]["kind"] != Kind.VERIFY or not task_id or context["target"].get("missing"):
        return None
    try:
        return benchmark_selectors.task_detail(task_id=task_id)
    except Task.DoesNotExist:
        return None


def _own_progress(project: AnnotationProject, user) -> dict:
    stats = project_progress(project=project, user=user)
    mine = next((row for row in stats["annotators"] if row["user_id"] == user.pk), {"labels": 0, "skips": 0})
    return {"mine": mine, "settled": stats["items"] - stats["open"], "items": stats["items"]}


def _render(request, project, *, item=None, form=None, flash="", notice="", status=200):
    """The panel for ``item`` (or the "nothing left" panel), as a page or an htmx partial."""
    context = item_context_for(item=item, user=request.user) if item is not None else None
    page = {"project": project, "ctx": context, "flash": flash, "notice": notice, "oob": bool(request.htmx)}
    if context is not None:
        can_label = (
            context["own_label"] is None
            and context["item"]["status"] == AnnotationItem.Status.OPEN
            and context["role"] in LABELLING_ROLES
            and project.status == AnnotationProject.Status.OPEN
        )
        if form is None and can_label:
            form = label_form_for(context)  # a form passed in carries the user's input: always shown
        shown = display.kind_view(context, task=_task_of(context))
        if form is not None and context["project"]["kind"] == Kind.VERIFY:
            shown["fields"] = [dict(row, edit=form.edit_form[row["name"]]) for row in shown.get("fields", [])]
        page.update(
            kind=context["project"]["kind"], kind_label=TargetKind(context["item"]["target_kind"]).label,
            display=shown, labels=display.labels_view(context), form=form,
        )
    page["progress"] = _own_progress(project, request.user)
    template = "annotation/_panel.html" if request.htmx else "annotation/workspace.html"
    return render(request, template, page, status=status)


def _next(request, project, *, flash: str = "", status: int = 200):
    """Claim the user's next item (or keep the held one) and show it."""
    try:
        assignment = next_item_for(project=project, user=request.user)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except ProjectNotOpenError as exc:
        return _render(request, project, notice=str(exc), flash=flash, status=status)
    return _render(request, project, item=assignment.item if assignment else None, flash=flash, status=status)


@login_required
def workspace(request, project_id: int):
    """GET claims (or returns the held) next item: a reservation that expires, never a label."""
    project, _ = project_for(request, project_id)
    return _next(request, project)


@login_required
def item_detail(request, project_id: int, item_id: int):
    project, _ = project_for(request, project_id)
    return _render(request, project, item=item_in(project, item_id))


@require_POST
@login_required
def label_create(request, project_id: int, item_id: int):
    project, _ = project_for(request, project_id)
    item = item_in(project, item_id)
    form = label_form_for(item_context_for(item=item, user=request.user), data=request.POST)
    if not form.is_valid():
        return _render(request, project, item=item, form=form, status=422)
    try:
        label_submit(
            item=item, annotator=request.user, value=form.value(), client_token=form.cleaned_data["client_token"]
        )
    except ValueError as exc:
        service_error_attach(form, exc)
        return _render(request, project, item=item, form=form, status=422)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except AnnotationError as exc:
        form.add_error(None, str(exc))
        return _render(request, project, item=item, form=form, status=409)
    if project.kind == Kind.AGREEMENT:  # show the judge's verdict now that the label is committed
        if not request.htmx:
            return redirect("annotation:item", project_id=project.pk, item_id=item.pk)
        return _render(request, project, item=item, flash="Saved. Here is what the judge said.")
    if not request.htmx:
        return redirect("annotation:workspace", project_id=project.pk)
    return _next(request, project, flash=f"Saved your label on item {item.position}. Press u to undo it.")


def _held_claim(project, item_id: int, user) -> Assignment | None:
    return Assignment.objects.filter(
        project=project, item_id=item_id, user=user, status=Assignment.Status.ACTIVE
    ).first()


@require_POST
@login_required
def item_skip(request, project_id: int, item_id: int):
    project, _ = project_for(request, project_id)
    item = item_in(project, item_id)
    claim = _held_claim(project, item.pk, request.user)
    if claim is None:
        flash = f"Item {item.position} was not reserved for you, so there was nothing to skip; here is your next item."
    else:
        try:
            assignment_skip(assignment=claim, user=request.user)
        except PermissionError as exc:
            return refuse(request, str(exc))
        except AnnotationError as exc:
            return alert(request, str(exc))
        flash = f"Skipped item {item.position}. Press u to undo."
    if not request.htmx:
        return redirect("annotation:workspace", project_id=project.pk)
    return _next(request, project, flash=flash)


@require_POST
@login_required
def undo(request, project_id: int):
    """Undo the user's last label or skip and show that item again, ready to be labelled anew.
    The claim the user held meanwhile stays theirs: it comes back after this item."""
    project, _ = project_for(request, project_id)
    try:
        event = label_undo_last(annotator=request.user, project=project)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except AnnotationError as exc:
        return alert(request, str(exc))
    if event is None:
        return alert(request, "Nothing to undo in this project.", status=200, tone="info")
    item = item_in(project, event.target_id)
    what = "skip" if event.action == "assignment.skip_undo" else "label"
    if not request.htmx:
        return redirect("annotation:item", project_id=project.pk, item_id=item.pk)
    return _render(request, project, item=item, flash=f"Undid your {what} on item {item.position}; label it again.")
