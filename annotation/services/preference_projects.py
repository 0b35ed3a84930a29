"""A pairwise project made from imported human preferences (SurveyLens' released labels): its
items are the preferences' report pairs, already labelled by the people who gave them."""

import uuid

from django.db import transaction
from django.utils import timezone

from core.accounts import is_global_curator
from core.audit_actions import AuditAction

from ..models import (AnnotationItem, AnnotationProject, Label, PairwisePreference, ProjectMembership, ReportPair, Role,
                      TargetKind)
from .audit import audit_record
from .projects import BATCH, Kind, project_row_new
from ..rules import labels_disagree
from .values import value_clean


def _preference_value(pref: PairwisePreference) -> dict:
    return {
        "choice": pref.choice, "dimensions": pref.dimensions or {}, "reason": pref.reason,
        "seconds_taken": pref.seconds_taken, "left_report_id": pref.report_left_id,
        "right_report_id": pref.report_right_id,
    }


def _preference_clean(*, project: AnnotationProject, pair: ReportPair, pref: PairwisePreference) -> dict:
    try:
        return value_clean(project=project, target=pair, value=_preference_value(pref))
    except ValueError as exc:
        raise ValueError(f"preference {pref.pk} ({pref.source} {pref.external_id}): {exc}") from exc


@transaction.atomic
def project_from_preferences(
    *, name: str, source: str = "surveylens", curator, component: str | None = None
) -> AnnotationProject:
    """A closed pairwise project mirroring imported ``PairwisePreference`` rows of ``source``.

    One item per task and unordered pair of reports (the pair is stored in the orientation
    first seen); one label per preference, recording the positions that annotator was shown.
    k is the largest number of annotators on one pair, so pairs with fewer stay open. If an
    annotator judged the same pair twice, the first judgment is kept and the rest counted in the
    audit row. The imported rows are not modified. Reopen the project to collect more labels.
    """
    if not is_global_curator(curator):
        raise PermissionError("only curators create annotation projects")
    prefs = PairwisePreference.objects.filter(source=source, project__isnull=True)
    if component:
        prefs = prefs.filter(component=component)
    prefs = list(prefs.order_by("labeled_at", "pk"))
    if not prefs:
        scope = f" for component {component!r}" if component else ""
        raise ValueError(f"source: no imported preferences from {source!r}{scope}")
    components = sorted({pref.component for pref in prefs})
    if len(components) > 1:
        raise ValueError(f"component: preferences of {source!r} cover {', '.join(components)}; pick one")
    groups: dict[tuple[int, frozenset], list[PairwisePreference]] = {}
    duplicates = 0
    for pref in prefs:
        group = groups.setdefault((pref.task_id, frozenset((pref.report_left_id, pref.report_right_id))), [])
        if any(other.annotator_id == pref.annotator_id for other in group):
            duplicates += 1
            continue
        group.append(pref)
    overlap = max(len(group) for group in groups.values())
    dimensions = sorted({dimension for pref in prefs for dimension in (pref.dimensions or {})})
    project = project_row_new(
        name=name, kind=Kind.PAIRWISE, created_by=curator, task_ids={pref.task_id for pref in prefs}, label_set=None,
        status=AnnotationProject.Status.CLOSED, component=components[0], overlap=overlap, dimensions=dimensions,
        description=f"{len(prefs)} imported {source} pairwise preferences.",
    )
    pairs = ReportPair.objects.bulk_create(
        [
            ReportPair(
                project=project, task_id=task_id, report_left_id=group[0].report_left_id,
                report_right_id=group[0].report_right_id,
            )
            for (task_id, _), group in groups.items()
        ],
        batch_size=BATCH,
    )
    items, labels = [], []
    for position, (pair, group) in enumerate(zip(pairs, groups.values(), strict=True), start=1):
        values = [_preference_clean(project=project, pair=pair, pref=pref) for pref in group]
        complete = len(group) == overlap
        item = AnnotationItem(
            project=project, target_kind=TargetKind.REPORT_PAIR, target_id=pair.pk, task_id=pair.task_id,
            position=position, labels_needed=overlap, labels_done=len(group),
            status=AnnotationItem.Status.COMPLETE if complete else AnnotationItem.Status.OPEN,
            disagreement=complete and labels_disagree(kind=Kind.PAIRWISE, values=values),
            completed_at=timezone.now() if complete else None,
        )
        items.append(item)
        labels.extend(
            Label(
                project=project, item=item, annotator_id=pref.annotator_id, value=value, source_preference=pref,
                client_token=uuid.uuid5(uuid.NAMESPACE_URL, f"preference:{pref.pk}:project:{project.pk}"),
                created_at=pref.labeled_at, seconds_taken=pref.seconds_taken,
            )
            for pref, value in zip(group, values, strict=True)
        )
    AnnotationItem.objects.bulk_create(items, batch_size=BATCH)
    Label.objects.bulk_create(labels, batch_size=BATCH)
    ProjectMembership.objects.bulk_create(
        [
            ProjectMembership(project=project, user_id=user_id, role=Role.ANNOTATOR)
            for user_id in {pref.annotator_id for pref in prefs}
        ],
        ignore_conflicts=True,
    )
    audit_record(
        actor=curator, action=AuditAction.PROJECT_IMPORT_PREFERENCES, target_kind="annotation_project", target_id=project.pk,
        project=project,
        after={
            "source": source, "preferences": len(prefs), "items": len(items), "labels": len(labels),
            "duplicates_skipped": duplicates,
        },
    )
    return project
