"""Pages for task sets and exports: the set list and detail (tasks, versions, hash, changelog,
export form), the export form's POST, the user's export jobs with live progress (each
running row polls itself every second and stops once done), the download and the deletion.

Views only translate: ``benchmark.services.exports`` decides who may export and see what.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.exporters import FORMATS as ANNOTATION_FORMATS
from annotation.selectors import is_global_curator, projects_for

from .models import ExportJob, TaskSet
from .services.exports import (
    export_delete as export_delete_job,
    export_file,
    export_get,
    export_request,
    exports_for,
    taskset_changes,
    taskset_formats_for,
)
from .services.tasksets import TaskSetError

RECENT_JOBS = 100


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
    return render(request, "benchmark/tasksets/detail.html", context)


@require_POST
@login_required
def export_create(request):
    """Queue an export from a form; errors come back as a message on the page the form was on."""
    kind = request.POST.get("kind", "")
    if kind == ExportJob.Kind.TASK_SET:
        parameters = {"task_set": request.POST.get("task_set"), "format": request.POST.get("format"),
                      "include_history": request.POST.get("include_history", ""),
                      "include_unreviewed": request.POST.get("include_unreviewed", "")}
    else:
        parameters = {"project": request.POST.get("project") or None, "format": request.POST.get("format")}
    try:
        job = export_request(user=request.user, kind=kind, parameters=parameters)
    except (ValueError, PermissionError, ObjectDoesNotExist, TaskSetError) as exc:
        messages.error(request, f"Export not started: {exc}")
        back = request.META.get("HTTP_REFERER", "")
        return redirect(back if back.startswith(request.build_absolute_uri("/")) else "benchmark:export_list")
    messages.success(request, f"Export #{job.pk} queued: {job.filename}")
    return redirect("benchmark:export_list")


@login_required
def export_list(request):
    context = {
        "jobs": exports_for(request.user).select_related("requested_by")[:RECENT_JOBS],
        "projects": projects_for(request.user).order_by("name"),
        "annotation_formats": ANNOTATION_FORMATS,
        "is_curator": is_global_curator(request.user),
    }
    return render(request, "benchmark/exports/list.html", context)


def _job(request, job_id: int) -> ExportJob:
    try:
        return export_get(job_id=job_id, user=request.user)
    except ExportJob.DoesNotExist:
        raise Http404("No such export") from None


@login_required
def export_row(request, job_id: int):
    return render(request, "benchmark/exports/_row.html", {"job": _job(request, job_id)})


@login_required
def export_download(request, job_id: int):
    job = _job(request, job_id)
    try:
        path = export_file(job=job)
    except ValueError as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    return FileResponse(path.open("rb"), as_attachment=True, filename=job.filename, content_type="application/zip")


@require_POST
@login_required
def export_delete(request, job_id: int):
    """Delete an export (cancel it while queued). htmx swaps the row away, or back with the
    reason it stays; without JavaScript the list comes back with a message."""
    try:
        export_delete_job(job_id=job_id, user=request.user)
    except ExportJob.DoesNotExist:
        raise Http404("No such export") from None
    except ValueError as exc:
        if request.htmx:
            return render(request, "benchmark/exports/_row.html", {"job": _job(request, job_id), "row_error": exc})
        messages.error(request, f"Not deleted: {exc}")
        return redirect("benchmark:export_list")
    if request.htmx:
        return HttpResponse("")
    messages.success(request, f"Export #{job_id} deleted, with its file.")
    return redirect("benchmark:export_list")
