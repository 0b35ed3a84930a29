"""The item browser: a project's items for its curators — filter, sort, search, jump to an item,
and release the claims on several items or reopen them, each audited. Curators of the project
only (an annotator, a global curator among them, gets a 403; non-members a 404); what a row
shows of a blind project is ``selectors.item_browser``'s rule."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.http import refuse

from ..models import AnnotationItem, Role
from ..selectors.item_browser import (SORTS, STATUSES, ItemFilters, item_browser_page, item_status_counts,
                                      project_annotators)
from ..services.errors import AnnotationError
from ..services.item_browser import items_claims_release, items_reopen
from .access import project_for


def _curator_project(request, project_id: int):
    project, role = project_for(request, project_id)
    if role != Role.CURATOR:
        return project, refuse(request, f"Only curators of project “{project.name}” browse its items.")
    return project, None


@login_required
def item_list(request, project_id: int):
    project, refused = _curator_project(request, project_id)
    if refused:
        return refused
    jump = request.GET.get("jump", "").strip().lstrip("#")
    if jump:
        item = AnnotationItem.objects.filter(project=project, position=int(jump)).first() if jump.isdigit() else None
        if item is not None:
            return redirect("annotation:item", project_id=project.pk, item_id=item.pk)
        messages.error(request, f"No item {jump} in this project (items are numbered by position).")
    filters = ItemFilters.from_query(request.GET)
    context = item_browser_page(project=project, filters=filters, page=request.GET.get("page", 1))
    context.update(project=project, filters=filters, query=filters.as_query(), statuses=STATUSES, sorts=SORTS,
                   annotators=project_annotators(project), counts=item_status_counts(project))
    return render(request, "annotation/items.html", context)


@require_POST
@login_required
def items_action(request, project_id: int):
    project, refused = _curator_project(request, project_id)
    if refused:
        return refused
    ids = [int(value) for value in request.POST.getlist("item") if value.isdigit()]
    action = request.POST.get("action", "")
    try:
        if action == "release":
            n = items_claims_release(project=project, actor=request.user, item_ids=ids)
            messages.success(request, f"{n} claim{'s' if n != 1 else ''} released: the items are back in the pool.")
        elif action == "reopen":
            n, refusals = items_reopen(project=project, actor=request.user, item_ids=ids)
            messages.success(request, f"{n} item{'s' if n != 1 else ''} reopened for one more label.")
            if refusals:
                messages.error(request, "Not reopened: " + "; ".join(refusals[:10]) + ("…" if len(refusals) > 10 else ""))
        else:
            messages.error(request, "Nothing done: choose “release claims” or “reopen”.")
    except AnnotationError as exc:
        messages.error(request, f"Nothing done: {exc}.")
    back = request.POST.get("back", "")
    return redirect(reverse("annotation:items", args=[project.pk]) + (f"?{back}" if back and "//" not in back else ""))
