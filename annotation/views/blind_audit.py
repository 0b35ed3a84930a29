"""The curator's blind audit page: the known attacks on the project, run as one of its annotators
(``annotation.blind_audit``), on request (a POST: it claims and labels in a rolled-back transaction)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from core.http import refuse

from ..blind_audit import ALPHA, blind_audit
from ..models import ProjectMembership, Role
from .access import project_for


@login_required
def audit(request, project_id: int):
    project, role = project_for(request, project_id)
    if role != Role.CURATOR:
        return refuse(request, f"Only curators audit project “{project.name}”.")
    annotators = list(ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR)
                      .order_by("user__username").values_list("user__username", flat=True))
    page = {"project": project, "annotators": annotators, "report": None, "error": "", "alpha": ALPHA}
    status = 200
    if request.method == "POST":
        username = request.POST.get("as") or None
        try:
            report = blind_audit(project=project, username=username)
        except ValueError as exc:
            page["error"], status = str(exc), 400
        else:
            page["report"] = report
    return render(request, "annotation/blind_audit.html", page, status=status)
