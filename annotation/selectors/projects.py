"""Roles in a project and the projects a user may open."""

from django.db.models import Count, Exists, F, FilteredRelation, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from core.accounts import is_global_curator
from core.compiled import CompiledRead

from ..models import AnnotationItem, AnnotationProject, ProjectMembership, Role
from ..rules import LABELLING_ROLES  # noqa: F401 (re-exported: the roles that label)


def project_role(*, project: AnnotationProject, user) -> str | None:
    """The user's role in the project: their membership's role; else ``curator`` for global
    curators; else None (no access)."""
    if not getattr(user, "is_authenticated", False):
        return None
    role = ProjectMembership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
    if role:
        return role
    return Role.CURATOR if is_global_curator(user) else None


def _project_with_membership(project_id: int, user_id: int) -> QuerySet[AnnotationProject]:
    mine = FilteredRelation("memberships", condition=Q(memberships__user_id=user_id))  # unique per project and user
    return AnnotationProject.objects.annotate(mine=mine).annotate(
        my_role=F("mine__role"), my_guidelines_seen=F("mine__guidelines_seen"),
    ).filter(pk=project_id).order_by()[:1]


_PROJECT_WITH_MEMBERSHIP = CompiledRead(_project_with_membership, "project_id", "user_id")


def project_with_role(*, project_id: int, user) -> tuple[AnnotationProject, str | None]:
    """The project and ``project_role`` of ``user`` in it, in one query (the membership's role
    and the guidelines version it was last shown, ``project.my_guidelines_seen``, ride along
    from the membership joined to the project; None without membership); raises
    ``AnnotationProject.DoesNotExist``. Views resolve the role once per request with this and
    pass it down; every request of the loop pays for it, so it is one plain join sliced without
    an ORDER BY, compiled once per process (``core.compiled``)."""
    if not getattr(user, "is_authenticated", False):
        return AnnotationProject.objects.get(pk=project_id), None
    project = _PROJECT_WITH_MEMBERSHIP.first(project_id=project_id, user_id=user.pk)
    if project is None:
        raise AnnotationProject.DoesNotExist(f"no annotation project {project_id}")
    if project.my_role:
        return project, project.my_role
    return project, Role.CURATOR if is_global_curator(user) else None


def projects_for(user) -> QuerySet[AnnotationProject]:
    """Projects the user may open, each annotated with ``my_role`` (membership role, or None for a
    global curator without membership), ``n_items`` and ``n_settled`` (complete or adjudicated).

    Annotators and viewers see only projects they belong to; global curators see all.
    """
    if not getattr(user, "is_authenticated", False):
        return AnnotationProject.objects.none()
    items = AnnotationItem.objects.filter(project=OuterRef("pk")).order_by().values("project")
    projects = AnnotationProject.objects.annotate(
        my_role=Subquery(ProjectMembership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]),
        n_items=Coalesce(Subquery(items.annotate(n=Count("pk")).values("n")), 0),
        n_settled=Coalesce(
            Subquery(items.exclude(status=AnnotationItem.Status.OPEN).annotate(n=Count("pk")).values("n")), 0
        ),
    )
    if is_global_curator(user):
        return projects
    return projects.filter(Exists(ProjectMembership.objects.filter(project=OuterRef("pk"), user=user)))
