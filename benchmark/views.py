from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.utils.safestring import mark_safe

from core.accounts import is_global_curator
from core.blind import blind_restrict

from . import selectors
from .models import Protocol, Report, Task, TaskSet
from .rendering import markdown_to_safe_html
from .views_survey_text import SurveyTextForm


# Parts of the task page that apps above benchmark show (scoring's proposal panel): each
# registers a function (request, task) -> template context when it is ready.
_TASK_PAGE_PANELS: list[Callable] = []


def task_page_panel_register(panel: Callable) -> None:
    if panel not in _TASK_PAGE_PANELS:  # ready() may run again (tests)
        _TASK_PAGE_PANELS.append(panel)


def _panels(request, task: Task) -> dict:
    context: dict = {}
    for panel in _TASK_PAGE_PANELS:
        context.update(panel(request, task))
    return context


@login_required
def home(request):
    overview = selectors.protocol_overview()
    context = {"overview": overview}
    if is_global_curator(request.user):
        # the steps of a study, each with what is there already (benchmark's own figures)
        context["study"] = {
            "tasks": sum(row["tasks"] for row in overview),
            "curated": sum(row["curated"] for row in overview),
            "frozen": TaskSet.objects.exclude(frozen_at=None).count(),
        }
    return render(request, "benchmark/home.html", context)


@login_required
def task_list(request):
    protocol = request.GET.get("protocol", "")
    status = request.GET.get("status", "")
    query = request.GET.get("q", "").strip()
    page = Paginator(selectors.task_list(protocol=protocol, status=status, query=query), 50).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "protocol": protocol,
        "status": status,
        "query": query,
        "protocols": Protocol.choices,
        "statuses": Task.Status.choices,
        "can_import": is_global_curator(request.user),
    }
    template = "benchmark/_task_rows.html" if request.htmx else "benchmark/task_list.html"
    return render(request, template, context)


@login_required
def task_detail(request, task_id: int):
    try:
        task = selectors.task_detail(task_id=task_id)
    except Task.DoesNotExist:
        raise Http404("No such task")
    shown = set(blind_restrict("report", task.reports.all(), request.user).values_list("pk", flat=True))
    reports = [report for report in task.reports.all() if report.pk in shown]  # blind pairs name no system
    survey_text_form = SurveyTextForm() if is_global_curator(request.user) else None
    return render(request, "benchmark/task_detail.html", {"task": task, "reports": reports,
                                                          "survey_text_form": survey_text_form,
                                                          **_panels(request, task)})


@login_required
def report_detail(request, report_id: int):
    try:
        report = selectors.report_detail(report_id=report_id)
        if not blind_restrict("report", Report.objects.filter(pk=report.pk), request.user).exists():
            # its system is what a blind pair hides
            raise Report.DoesNotExist
    except Report.DoesNotExist:
        raise Http404("No such report")
    html = mark_safe(markdown_to_safe_html(report.text))  # sanitized by nh3 above
    return render(request, "benchmark/report_detail.html", {"report": report, "html": html})
