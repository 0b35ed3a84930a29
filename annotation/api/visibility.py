"""Blind mode for lists: the rule of ``annotation.selectors.item_context_for``, as querysets.

``item_context_for`` decides for one item whether a user sees other annotators' labels, the
judge's verdict and the gold label ("revealed"): the project is not blind, or the user has
labelled the item, or the user is the project's curator and the item has all its labels.
The list endpoints cannot call it per row, so ``revealed_items`` states the same rule as a
filter; ``tests/api/test_blind_mode.py`` checks both agree item by item.
"""

from django.db.models import Exists, OuterRef, Q, QuerySet

from scoring.models import Verdict

from ..models import AnnotationItem, GoldLabel, Label, PairwisePreference, ProjectMembership, Role, TargetKind
from ..selectors import is_global_curator, projects_for


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
    """Every verdict, except those a blind agreement project asks someone to label who has not
    yet had them revealed (labelled it, or curating a complete item). Global curators see all
    verdicts except on items of projects where they label as annotators."""
    if not getattr(user, "is_authenticated", False):
        return Verdict.objects.none()
    _, curated = _project_ids(user)
    hidden = AnnotationItem.objects.filter(
        target_kind=TargetKind.VERDICT, target_id=OuterRef("pk"), project__blind=True
    ).exclude(_revealed_q(user, curated))
    if is_global_curator(user):
        # Curators read every run's verdicts, except on open items of projects they label in.
        hidden = hidden.filter(Exists(ProjectMembership.objects.filter(
            project=OuterRef("project"), user=user, role=Role.ANNOTATOR
        )))
    return Verdict.objects.exclude(Exists(hidden))


def visible_preferences(user) -> QuerySet[PairwisePreference]:
    """Global curators see every preference; others their own (imported ones carry no project)."""
    if not getattr(user, "is_authenticated", False):
        return PairwisePreference.objects.none()
    if is_global_curator(user):
        return PairwisePreference.objects.all()
    return PairwisePreference.objects.filter(annotator=user)
