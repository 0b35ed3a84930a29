"""Export pages: the export form's POST (task sets and annotations), the user's export jobs with
live progress (each running row polls itself every second and stops once done), the download
and the deletion. Views only translate: ``annotation.services.exports`` decides who may export
and see what. (URL paths stay under ``/benchmark/exports/``.)
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchmark.services.tasksets import TaskSetError
from core.accounts import is_global_curator

from ..exporters import FORMATS as ANNOTATION_FORMATS
from ..models import ExportJob
from ..selectors.projects import projects_for
from ..services.exports import (
    export_delete as export_delete_job,
    export_file,
    export_get,
    export_request,
    exports_for,
)

RECENT_JOBS = 100


@require_POST
@login_required
def export_create(request):
    """Queue an export from a form; errors come back as a message on the page the form was on."""
    kind = request.POST.get("kind", "")
    if kind == ExportJob.Kind.TASK_SET:
        parameters = {"task_set": request.POST.get("task_set"), "format": request.POST.get("format"),
                      "include_history": request.POST.get("include_history", ""),
                      "include_unreviewed": request.POST.get("include_unreviewed", ""),
                      "include_labels": request.POST.get("include_labels", "")}
    else:
        parameters = {"project": request.POST.get("project") or None, "format": request.POST.get("format")}
    try:
        job = export_request(user=request.user, kind=kind, parameters=parameters)
    except (ValueError, PermissionError, ObjectDoesNotExist, TaskSetError) as exc:
        messages.error(request, f"Export not started: {exc}")
        back = request.META.get("HTTP_REFERER", "")
        return redirect(back if back.startswith(request.build_absolute_uri("/")) else "exports:export_list")
    messages.success(request, f"Export #{job.pk} queued: {job.filename}")
    return redirect("exports:export_list")


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
        return redirect("exports:export_list")
    if request.htmx:
        return HttpResponse("")
    messages.success(request, f"Export #{job_id} deleted, with its file.")
    return redirect("exports:export_list")
