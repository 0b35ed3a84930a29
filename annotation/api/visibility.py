"""Blind mode for lists: the rule of ``annotation.selectors.workspace.item_context_for``, as querysets.

``item_context_for`` decides for one item whether a user sees other annotators' labels, the
judge's verdict and the gold label ("revealed"): the project is not blind, or the user has
labelled the item, or the user is the project's curator and the item has all its labels.
The list endpoints cannot call it per row, so ``revealed_items`` states the same rule as a
filter; ``tests/api/test_blind_mode.py`` checks both agree item by item.

Beyond one item, a user who labels in a blind project (its annotators; curators do not label
there, ``require_labeller``) must not learn what it hides on any other channel either:
``hidden_reports`` are the reports whose systems their open pairwise items hide (report lists,
report and task pages leave them out), and ``blind_labelling_projects`` name the projects
that keep them from score cards, leaderboards and runs (``annotation.middleware``).
"""

from django.db.models import Exists, OuterRef, Q, QuerySet

from benchmark.models import Report
from scoring.models import Verdict

from ..models import (
    AnnotationItem,
    AnnotationProject,
    GoldLabel,
    Label,
    PairwisePreference,
    ProjectMembership,
    ReportPair,
    Role,
    TargetKind,
)
from core.accounts import is_global_curator
from ..selectors.projects import projects_for


def _project_ids(user) -> tuple[list[int], list[int]]:
    """(projects the user may open, those where their role is curator)."""
    rows = list(projects_for(user).values_list("pk", "my_role"))
    global_curator = is_global_curator(user)
    curated = [pk for pk, role in rows if role == Role.CURATOR or (role is None and global_curator)]
    return [pk for pk, _ in rows], curated


def _revealed_q(user, curated: list[int], item_path: str = "") -> Q:
    prefix = f"{item_path}__" if item_path else ""
    own_label = Label.objects.filter(item=OuterRef(f"{prefix}pk" if prefix else "pk"), annotator=user)
    return (
        Q(**{f"{prefix}project__blind": False})
        | Exists(own_label)
        | (Q(**{f"{prefix}project_id__in": curated}) & ~Q(**{f"{prefix}status": AnnotationItem.Status.OPEN}))
    )


def revealed_items(user) -> QuerySet[AnnotationItem]:
    """Items of the user's projects whose other labels, verdict and gold the user may see."""
    visible, curated = _project_ids(user)
    return AnnotationItem.objects.filter(project_id__in=visible).filter(_revealed_q(user, curated))


def visible_labels(user) -> QuerySet[Label]:
    """The user's own labels, plus others' labels on items revealed to them."""
    if not getattr(user, "is_authenticated", False):
        return Label.objects.none()
    visible, _ = _project_ids(user)
    revealed = revealed_items(user).values("pk")
    return Label.objects.filter(project_id__in=visible).filter(Q(annotator=user) | Q(item_id__in=revealed))


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


def blind_items(user) -> QuerySet[AnnotationItem]:
    """The items of blind projects the user labels in as an annotator and has not labelled yet:
    what they hide (verdict, others' labels, systems) the user may learn nowhere."""
    own_label = Label.objects.filter(item=OuterRef("pk"), annotator=user)
    labelling = ProjectMembership.objects.filter(project=OuterRef("project"), user=user, role=Role.ANNOTATOR)
    return AnnotationItem.objects.filter(project__blind=True).filter(Exists(labelling)).exclude(Exists(own_label))


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
