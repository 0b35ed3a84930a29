from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.utils.safestring import mark_safe

from annotation.api.visibility import hidden_reports
from annotation.selectors import is_global_curator

from . import selectors
from .models import Protocol, Report, Task
from .rendering import markdown_to_safe_html
from .views_proposals import proposal_panel
from .views_survey_text import SurveyTextForm


@login_required
def home(request):
    return render(request, "benchmark/home.html", {"overview": selectors.protocol_overview()})


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
    hidden = set(hidden_reports(request.user).values_list("pk", flat=True))  # blind pairs name no system
    reports = [report for report in task.reports.all() if report.pk not in hidden]
    survey_text_form = SurveyTextForm() if is_global_curator(request.user) else None
    return render(request, "benchmark/task_detail.html", {"task": task, "reports": reports,
                                                          "survey_text_form": survey_text_form,
                                                          **proposal_panel(request, task)})


@login_required
def report_detail(request, report_id: int):
    try:
        report = selectors.report_detail(report_id=report_id)
        if hidden_reports(request.user).filter(pk=report.pk).exists():  # its system is what a blind pair hides
            raise Report.DoesNotExist
    except Report.DoesNotExist:
        raise Http404("No such report")
    html = mark_safe(markdown_to_safe_html(report.text))  # sanitized by nh3 above
    return render(request, "benchmark/report_detail.html", {"report": report, "html": html})
