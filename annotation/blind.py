"""Blind mode: what a user may learn of an annotation item, on every channel.

The rule. An item's other labels, its judge's verdict, its gold label and the names of the
systems it compares are *revealed* to a user of its project when

1. the project is not blind, or the user curates it and the item is no longer open (it has
   all its labels): ``revealed_unlabelled``, which reads only the project, the user's role
   in it and the item's status; or
2. the user has labelled the item themselves (``_own_label``).

That is all of it. ``item_revealed`` applies it to one item (the workspace and the item API,
through ``selectors.workspace.item_context_for``): part 1 in Python, part 2 only when part 1
says no, as one query. ``revealed_items`` applies it to lists (labels, gold labels, verdicts,
exports): part 1 as a filter derived from ``revealed_unlabelled`` itself, part 2 as a
subquery.

Beyond one item, a user who labels in a blind project (its annotators; curators do not label
there, ``require_labeller``) must not learn what it hides on any other channel either.
``blind_items`` are the items still unrevealed to them as annotators; from those come
``hidden_reports`` (report lists, report and task pages leave them out, through
``core.blind``) and ``blind_labelling_projects`` (score cards, leaderboards and runs stay
closed, ``annotation.middleware``).
"""

from collections import defaultdict

from django.db.models import Exists, OuterRef, Q, QuerySet

from benchmark.models import Report
from core import rawsql
from core.accounts import is_global_curator
from scoring.models import Verdict

from .models import (AnnotationItem, AnnotationProject, GoldLabel, Label, PairwisePreference, ProjectMembership,
                     ReportPair, Role, TargetKind)
from .selectors.projects import projects_for

# --- The rule ---------------------------------------------------------------------------------


def revealed_unlabelled(*, blind: bool, role: str | None, status: str) -> bool:
    """Part 1 of the rule: whether an item with ``status`` in a project (``blind`` or not) is
    revealed to a user of ``role`` there whether or not they labelled it."""
    return not blind or (role == Role.CURATOR and status != AnnotationItem.Status.OPEN)


def item_revealed(*, item: AnnotationItem, role: str | None, user, holds_claim: bool = False) -> bool:
    """The rule for one item (its project read along, the user's ``role`` there known): no
    query when part 1 decides, else one. ``holds_claim``: the user holds an active claim on
    the item, which their label would have ended, so they have not labelled it: no query."""
    if revealed_unlabelled(blind=item.project.blind, role=role, status=item.status):
        return True
    if holds_claim:
        return False
    # Part 2 as plain SQL: this is the annotator loop's hot path, where building the same
    # query through the ORM costs more than the database takes to answer it (``rawsql``).
    (labelled,) = rawsql.scalar_row(
        f"SELECT EXISTS (SELECT 1 FROM {rawsql.table(Label)} WHERE item_id = %s AND annotator_id = %s)",
        [item.pk, user.pk],
    )
    return bool(labelled)


def _own_label(user) -> Exists:
    """Part 2 of the rule as a condition on items: the user labelled the item."""
    return Exists(Label.objects.filter(item=OuterRef("pk"), annotator=user))


def _revealed_unlabelled_q(role: str | None) -> Q:
    """Part 1 for a user of ``role`` as a condition on items, read off ``revealed_unlabelled``
    for every (blind, status) it can see, so the rule is stated once."""
    statuses = AnnotationItem.Status.values
    condition = Q(pk__in=[])  # reveals nothing
    for blind in (False, True):
        revealed = [status for status in statuses if revealed_unlabelled(blind=blind, role=role, status=status)]
        if len(revealed) == len(statuses):
            condition |= Q(project__blind=blind)
        elif revealed:
            condition |= Q(project__blind=blind, status__in=revealed)
    return condition


def _project_roles(user) -> dict[int, str | None]:
    """Project id → the user's role there (``project_role``), for every project they may open."""
    global_curator = is_global_curator(user)
    rows = projects_for(user).values_list("pk", "my_role")
    return {pk: role or (Role.CURATOR if global_curator else None) for pk, role in rows}


def _revealed(roles: dict[int, str | None], user) -> QuerySet[AnnotationItem]:
    """The items of the projects in ``roles`` (``_project_roles``) revealed to the user."""
    by_role: dict[str | None, list[int]] = defaultdict(list)
    for project_id, role in roles.items():
        by_role[role].append(project_id)
    unlabelled = Q(pk__in=[])
    for role, project_ids in by_role.items():
        unlabelled |= Q(project_id__in=project_ids) & _revealed_unlabelled_q(role)
    return AnnotationItem.objects.filter(project_id__in=list(roles)).filter(unlabelled | _own_label(user))


def revealed_items(user) -> QuerySet[AnnotationItem]:
    """Items of the user's projects whose other labels, verdict and gold the user may see."""
    return _revealed(_project_roles(user), user)


def blind_items(user) -> QuerySet[AnnotationItem]:
    """The items of projects the user labels in as an annotator that are not revealed to them
    (in blind projects, those they have not labelled yet): what these hide (verdict, others'
    labels, systems) the user may learn nowhere, however else they may read it."""
    labelling = ProjectMembership.objects.filter(project=OuterRef("project"), user=user, role=Role.ANNOTATOR)
    return AnnotationItem.objects.filter(Exists(labelling)).exclude(
        _revealed_unlabelled_q(Role.ANNOTATOR) | _own_label(user)
    )


# --- Channels ---------------------------------------------------------------------------------


def visible_labels(user) -> QuerySet[Label]:
    """The user's own labels, plus others' labels on items revealed to them."""
    if not getattr(user, "is_authenticated", False):
        return Label.objects.none()
    roles = _project_roles(user)
    revealed = _revealed(roles, user).values("pk")
    return Label.objects.filter(project_id__in=list(roles)).filter(Q(annotator=user) | Q(item_id__in=revealed))


def visible_gold_labels(user) -> QuerySet[GoldLabel]:
    if not getattr(user, "is_authenticated", False):
        return GoldLabel.objects.none()
    return GoldLabel.objects.filter(item_id__in=revealed_items(user).values("pk"))


def visible_verdicts(*, user) -> QuerySet[Verdict]:
    """Global curators read every run's verdicts, except those of items they have yet to label
    as annotators of a blind agreement project. Everyone else lists only the verdicts their own
    items need: those of agreement items revealed to them (``revealed_items``)."""
    if not getattr(user, "is_authenticated", False):
        return Verdict.objects.none()
    if is_global_curator(user):
        blind = blind_items(user).filter(target_kind=TargetKind.VERDICT)
        return Verdict.objects.exclude(pk__in=blind.values("target_id"))
    revealed = revealed_items(user).filter(target_kind=TargetKind.VERDICT).values("target_id")
    return Verdict.objects.filter(pk__in=revealed)


def hidden_reports(user) -> QuerySet[Report]:
    """Reports whose system a blind pairwise item still hides from the user (``blind_items``)."""
    if not getattr(user, "is_authenticated", False):
        return Report.objects.none()
    pairs = ReportPair.objects.filter(
        pk__in=blind_items(user).filter(target_kind=TargetKind.REPORT_PAIR).values("target_id")
    )
    return Report.objects.filter(Q(pk__in=pairs.values("report_left")) | Q(pk__in=pairs.values("report_right")))


def blind_labelling_projects(user) -> list[str]:
    """Names of the blind projects in which the user still has open items to label as an
    annotator: until they are done there, score cards and rankings of the systems (and the
    judges) those items compare stay closed to them."""
    if not getattr(user, "is_authenticated", False):
        return []
    open_items = blind_items(user).filter(status=AnnotationItem.Status.OPEN)
    projects = AnnotationProject.objects.filter(pk__in=open_items.values("project")).order_by("name")
    return list(projects.values_list("name", flat=True))


def visible_preferences(user) -> QuerySet[PairwisePreference]:
    """Global curators see every preference, except others' on items they have yet to label as
    annotators of a blind project (``blind_items``); others see their own (imported ones carry
    no project)."""
    if not getattr(user, "is_authenticated", False):
        return PairwisePreference.objects.none()
    if is_global_curator(user):
        return PairwisePreference.objects.exclude(Q(label__item__in=blind_items(user)) & ~Q(annotator=user))
    return PairwisePreference.objects.filter(annotator=user)
