"""Task sets in the browser: the list and a set's page (tasks, versions, hash, changelog, export
form), a new set from picked or filtered tasks, freezing a version, and starting the next one. Curators only (the API's ``CuratorWrites`` rule); the rules live in
``benchmark.services.tasksets``, whose refusals come back as a message or a field error."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.accounts import is_global_curator
from core.http import refuse

from .forms import TASKS_SHOWN, TaskFilterForm, TaskSetCreateForm
from .models import TaskSet
from .services.bundles import taskset_changes, taskset_formats_for
from .services.tasksets import (
    TaskSetError,
    taskset_create,
    taskset_freeze,
    taskset_history_exportable,
    taskset_new_version,
    taskset_readiness,
)

CURATORS_ONLY = "Only curators make, freeze or version task sets."


@login_required
def taskset_list(request):
    task_sets = TaskSet.objects.select_related("frozen_by").annotate(n_tasks=Count("tasks")).order_by("name", "-version")
    context = {"task_sets": task_sets, "can_create": is_global_curator(request.user)}
    return render(request, "benchmark/tasksets/list.html", context)


@login_required
def taskset_detail(request, task_set_id: int):
    task_set = get_object_or_404(TaskSet.objects.select_related("frozen_by", "previous"), pk=task_set_id)
    versions = TaskSet.objects.filter(name=task_set.name).select_related("frozen_by").order_by("-version")
    against_id = request.GET.get("against", "")
    against = versions.exclude(pk=task_set.pk).filter(pk=against_id).first() if against_id.isdigit() else None
    try:
        changes, changes_error = taskset_changes(task_set=task_set, against=against), ""
    except TaskSetError as exc:
        changes, changes_error = None, str(exc)
    context = {
        "task_set": task_set,
        "tasks": task_set.tasks.order_by("protocol", "key"),
        "versions": versions,
        "against": against,
        "is_latest": task_set.version == versions[0].version,
        "changes": changes,
        "changes_error": changes_error,
        "formats": taskset_formats_for(task_set),
        "can_export": is_global_curator(request.user),
    }
    if context["can_export"]:
        # what freezing needs (an open set), and whether an export with history would work now
        context["readiness"] = None if task_set.is_frozen else taskset_readiness(task_set=task_set)
        context["history_exportable"] = taskset_history_exportable(task_set=task_set)
    return render(request, "benchmark/tasksets/detail.html", context)


@login_required
def taskset_new(request):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    task_filter = TaskFilterForm(request.GET)
    form = TaskSetCreateForm(request.POST or None, task_filter=task_filter)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                task_set = taskset_create(name=form.cleaned_data["name"], description=form.cleaned_data["description"],
                                          tasks=form.chosen_tasks(), actor=request.user)
            except TaskSetError as exc:
                field, _, why = str(exc).partition(": ")
                form.add_error(field if why and field in form.fields else None, why or str(exc))
            else:
                messages.success(request, f"Task set {task_set} created with {task_set.tasks.count()} tasks.")
                return redirect("benchmark:taskset_detail", task_set_id=task_set.pk)
    context = {"form": form, "task_filter": task_filter, "tasks_shown": TASKS_SHOWN}
    return render(request, "benchmark/tasksets/new.html", context, status=status)


@require_POST
@login_required
def taskset_freeze_view(request, task_set_id: int):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    task_set = get_object_or_404(TaskSet, pk=task_set_id)
    try:
        frozen = taskset_freeze(task_set=task_set, actor=request.user,
                                allow_uncurated=bool(request.POST.get("allow_uncurated")))
    except TaskSetError as exc:
        messages.error(request, f"Not frozen: {exc}")
    else:
        messages.success(request, f"Task set {task_set} frozen{' as a pilot version' if frozen.pilot else ''}.")
    return redirect("benchmark:taskset_detail", task_set_id=task_set.pk)


@require_POST
@login_required
def taskset_version_view(request, task_set_id: int):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    task_set = get_object_or_404(TaskSet, pk=task_set_id)
    try:
        successor = taskset_new_version(task_set=task_set, actor=request.user)
    except TaskSetError as exc:
        messages.error(request, f"No new version: {exc}")
        return redirect("benchmark:taskset_detail", task_set_id=task_set.pk)
    messages.success(request, f"Version {successor.version} started from v{task_set.version}.")
    return redirect("benchmark:taskset_detail", task_set_id=successor.pk)
