"""Importing in the browser: upload a file or a zip, watch the worker import it, read the counts
or every error. Curators only; the job's life is ``benchmark.services.imports``'."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render

from core.accounts import is_global_curator
from core.http import refuse

from .forms import ImportForm
from .models import ImportJob
from .services.imports import import_request

CURATORS_ONLY = "Only curators import data."


@login_required
def import_new(request):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    form = ImportForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                job = import_request(user=request.user, format_name=form.cleaned_data["format"],
                                     upload=form.cleaned_data["file"])
            except ValueError as exc:
                field, _, why = str(exc).partition(": ")
                form.add_error(field if why and field in form.fields else None, why or str(exc))
            else:
                return redirect("benchmark:import_detail", job_id=job.pk)
    recent = ImportJob.objects.filter(requested_by=request.user).order_by("-created_at")[:10]
    return render(request, "benchmark/imports/new.html", {"form": form, "recent": recent}, status=status)


@login_required
def import_detail(request, job_id: int):
    """The job's page; htmx re-fetches its status part every second while it is queued or running."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    job = get_object_or_404(ImportJob, pk=job_id, requested_by=request.user)
    template = "benchmark/imports/_status.html" if request.htmx else "benchmark/imports/detail.html"
    return render(request, template, {"job": job})
