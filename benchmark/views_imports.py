"""Importing in the browser: upload a file or a zip, watch the worker import it, read the counts
or every error. Curators only; the job's life is ``benchmark.services.imports``'."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render

from core.accounts import is_global_curator
from core.http import refuse

from .forms import ImportForm
from .models import ImportJob
from .services.imports import import_progress, import_request

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
    """The job's page; htmx re-fetches its status part (with the importer's progress, when it
    reports one) every second while it is queued or running. Any curator may read any job."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    job = get_object_or_404(ImportJob.objects.select_related("requested_by"), pk=job_id)
    template = "benchmark/imports/_status.html" if request.htmx else "benchmark/imports/detail.html"
    return render(request, template, {"job": job, "progress": import_progress(job)})


HISTORY_PAGE = 50


@login_required
def import_history(request):
    """Every import job, newest first: who asked, when, what, how it ended and what it stored.
    Curators only, like the jobs themselves (a global curator sees every project's data anyway)."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    page = Paginator(ImportJob.objects.select_related("requested_by").order_by("-created_at", "-id"),
                     HISTORY_PAGE).get_page(request.GET.get("page"))
    rows = [{"job": job, "counts": _counts_line(job.counts)} for job in page]
    return render(request, "benchmark/imports/history.html", {"page": page, "rows": rows})


def _counts_line(counts: dict) -> str:
    """``task 3 created, 1 updated; report 9 created``: what the job stored, in one line."""
    return "; ".join(f"{kind} " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
                     for kind, outcomes in sorted((counts or {}).items()))
