"""The project list and the per-project progress page."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from core.accounts import is_global_curator

from ..calibration.views import planner_context, sampling_sentence
from ..rules import labeller_refusal
from ..selectors.progress import project_progress, projects_progress_for
from ..selectors.projects import projects_for
from .access import project_for


@login_required
def project_list(request):
    projects = list(projects_for(request.user))
    stats = projects_progress_for(user=request.user, projects=projects)
    # "Start labelling" only where the workspace would let the user label (no link to a 403)
    rows = [{"project": project, **stats[project.pk],
             "can_label": labeller_refusal(role=stats[project.pk].get("role"), blind=project.blind,
                                           project_status=project.status) is None} for project in projects]
    context = {"rows": rows, "can_create": is_global_curator(request.user)}
    return render(request, "annotation/project_list.html", context)


@login_required
def progress(request, project_id: int):
    project, role = project_for(request, project_id)
    stats = project_progress(project=project, user=request.user)
    stats["percent"] = round(100 * (stats["items"] - stats["open"]) / stats["items"]) if stats["items"] else 0
    context = {"project": project, "role": role, "stats": stats, "sampling": sampling_sentence(project, role),
               **planner_context(request, project, role)}
    return render(request, "annotation/progress.html", context)
