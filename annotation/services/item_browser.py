"""The item browser's bulk actions, by a project's curators, each change with its audit row in the
same transaction: release the live claims on items (a stalled hold goes back to the pool, the
annotator may be offered the item again), and reopen complete items for one more label."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.audit_actions import AuditAction

from ..models import AnnotationItem, AnnotationProject, Assignment
from ..rules import claims_live
from ..selectors.projects import project_role
from ..models import Role
from .audit import audit_records
from .errors import AnnotationError

BULK_LIMIT = 500


def _require_curator(project: AnnotationProject, actor) -> None:
    if project_role(project=project, user=actor) != Role.CURATOR:
        raise PermissionError(f"only curators of project {project.name!r} release claims or reopen items")


def _checked(item_ids: list[int]) -> list[int]:
    if not item_ids:
        raise AnnotationError("select at least one item")
    if len(item_ids) > BULK_LIMIT:
        raise AnnotationError(f"at most {BULK_LIMIT} items at once ({len(item_ids)} selected)")
    return sorted(set(item_ids))


@transaction.atomic
def items_claims_release(*, project: AnnotationProject, actor, item_ids: list[int]) -> int:
    """End every live claim on these items of the project (released, not skipped); how many."""
    _require_curator(project, actor)
    now = timezone.now()
    held = list(Assignment.objects.select_for_update().filter(claims_live(now), project=project,
                                                              item_id__in=_checked(item_ids)))
    if not held:
        return 0
    Assignment.objects.filter(pk__in=[claim.pk for claim in held]).update(status=Assignment.Status.RELEASED,
                                                                          ended_at=now)
    audit_records([dict(actor=actor, action=AuditAction.ASSIGNMENT_RELEASE, target_kind="annotation_item",
                        target_id=claim.item_id, project=project,
                        before={"assignment_id": claim.pk, "status": Assignment.Status.ACTIVE,
                                "user": claim.user_id},
                        after={"status": Assignment.Status.RELEASED, "by": "curator (item browser)"})
                   for claim in held])
    return len(held)


@transaction.atomic
def items_reopen(*, project: AnnotationProject, actor, item_ids: list[int]) -> tuple[int, list[str]]:
    """Reopen complete items for one more label each (their overlap k grows by one); returns how
    many and why the others were not (open already, adjudicated — its gold label stands —, or a
    verify item whose decision was applied to the task: change it in the review queue)."""
    _require_curator(project, actor)
    if project.status == AnnotationProject.Status.CLOSED:
        raise AnnotationError(f"project {project.name!r} is closed: its items stay as they are")
    items = list(AnnotationItem.objects.select_for_update().filter(project=project, pk__in=_checked(item_ids))
                 .order_by("position", "id"))
    reopen, refused = [], []
    for item in items:
        if item.status == AnnotationItem.Status.OPEN:
            refused.append(f"item {item.position} is open already")
        elif item.status == AnnotationItem.Status.ADJUDICATED:
            refused.append(f"item {item.position} is adjudicated: its gold label stands")
        elif item.applied_revision_id:
            refused.append(f"item {item.position}: its decision was applied to the task; change it in the review queue")
        else:
            reopen.append(item)
    if reopen:
        AnnotationItem.objects.filter(pk__in=[item.pk for item in reopen]).update(
            status=AnnotationItem.Status.OPEN, labels_needed=F("labels_needed") + 1, completed_at=None)
        audit_records([dict(actor=actor, action=AuditAction.ITEM_REOPEN, target_kind="annotation_item",
                            target_id=item.pk, project=project,
                            before={"status": item.status, "labels_needed": item.labels_needed},
                            after={"status": AnnotationItem.Status.OPEN, "labels_needed": item.labels_needed + 1})
                       for item in reopen])
    return len(reopen), refused
