"""The project list and the per-project progress page."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q, Sum
from django.shortcuts import render

from ..models import AnnotationItem, AnnotationProject, Label, ProjectMembership, Role
from ..selectors import project_progress, projects_for
from .access import project_for


@login_required
def project_list(request):
    rows = _project_rows(request.user, projects_for(request.user))
    return render(request, "annotation/project_list.html", {"rows": rows})


@login_required
def progress(request, project_id: int):
    project, role = project_for(request, project_id)
    stats = project_progress(project=project, user=request.user)
    stats["percent"] = round(100 * (stats["items"] - stats["open"]) / stats["items"]) if stats["items"] else 0
    return render(request, "annotation/progress.html", {"project": project, "role": role, "stats": stats})


def _project_list_stats(user, projects: list[AnnotationProject]) -> dict[int, dict]:
    """Per listed project: the user's own label count, and for projects the user curates the
    label totals, annotator count and items awaiting adjudication. Three queries whatever the
    number of projects.

    Stop-gap read helper: ``projects_for`` has no per-user or per-project label counts and
    ``project_progress`` is per project (five queries each); the request for a
    ``projects_progress_for(user, projects)`` selector is in the hand-over report.
    """
    ids = [project.pk for project in projects]
    curated = [project.pk for project in projects if (project.my_role or Role.CURATOR) == Role.CURATOR]
    stats = {pk: {"mine": 0} for pk in ids}
    mine = Label.objects.filter(annotator=user, project_id__in=ids).values_list("project").annotate(n=Count("pk"))
    for project_id, n in mine.order_by():
        stats[project_id]["mine"] = n
    totals = (
        AnnotationItem.objects.filter(project_id__in=curated)
        .values_list("project")
        .annotate(
            labels_done=Sum("labels_done"), labels_needed=Sum("labels_needed"),
            awaiting=Count(
                "pk", filter=Q(status=AnnotationItem.Status.COMPLETE) & (Q(disagreement=True) | ~Q(conflict=""))
            ),
        )
        .order_by()
    )
    for project_id, done, needed, awaiting in totals:
        stats[project_id].update(labels_done=done, labels_needed=needed, awaiting=awaiting)
    members = (
        ProjectMembership.objects.filter(project_id__in=curated, role=Role.ANNOTATOR)
        .values_list("project")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for project_id, n in members:
        stats[project_id]["annotators"] = n
    return stats


def _project_rows(user, projects) -> list[dict]:
    projects = list(projects)
    stats = _project_list_stats(user, projects)
    rows = []
    for project in projects:
        role = project.my_role or Role.CURATOR
        row = {"project": project, "role": role, "is_curator": role == Role.CURATOR, **stats[project.pk]}
        row["percent"] = round(100 * project.n_settled / project.n_items) if project.n_items else 0
        rows.append(row)
    return rows
