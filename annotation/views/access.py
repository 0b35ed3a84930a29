"""Who may open which project page, and how refusals look (full page, or a message htmx shows)."""

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django_htmx.http import reswap, retarget

from ..blind import NO_ITEM, reachable_item
from ..models import AnnotationItem, AnnotationProject
from ..selectors.projects import project_with_role

ALERT_TARGET = "#ws-alert"


def project_for(request, project_id: int) -> tuple[AnnotationProject, str]:
    """The project and the user's role in it; 404 for non-members, so outsiders cannot tell
    which projects exist."""
    try:
        project, role = project_with_role(project_id=project_id, user=request.user)
    except AnnotationProject.DoesNotExist:
        raise Http404("No such project") from None
    if role is None:
        raise Http404("No such project")
    return project, role


def item_in(project: AnnotationProject, item_id: int, *, role: str | None, user) -> AnnotationItem:
    """The item of ``project`` that ``user`` (of ``role`` there) may reach (``blind.item_reachable``:
    in a blind project, through their own claim or label); any other id is the same 404."""
    item = reachable_item(item_id=item_id, project=project, role=role, user=user)
    if item is None:
        raise Http404(NO_ITEM)
    item.project = project
    return item


def alert(request, message: str, *, status: int = 409, tone: str = "error") -> HttpResponse:
    """A message shown above the workspace without touching the item being labelled."""
    response = render(request, "annotation/_alert.html", {"message": message, "tone": tone}, status=status)
    return reswap(retarget(response, ALERT_TARGET), "innerHTML")
