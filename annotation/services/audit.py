"""The workspace's audit rows: ``core.AuditLog`` rows named in the workspace's words.

Workspace services name a row's target by a kind (``annotation_item``, ``task``, a
``TargetKind`` such as ``checklist_item`` ...) and an id; ``KIND_MODELS`` is the one map
from those kinds to models, used to write (``audit_record``) and to read back (``audit_kind``)."""

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType

from benchmark.models import Task
from core.audit import audit_log_rows
from core.audit_actions import AuditAction
from core.models import AuditLog
from scoring.models import Verdict

from ..models import VERIFY_TARGETS, AnnotationItem, AnnotationProject, Invitation, ReportPair, TargetKind

KIND_MODELS = {
    "annotation_item": AnnotationItem,
    "annotation_project": AnnotationProject,
    "invitation": Invitation,
    "user": get_user_model(),
    "task": Task,
    **{kind: model for kind, (model, _) in VERIFY_TARGETS.items()},
    TargetKind.REPORT_PAIR: ReportPair,
    TargetKind.VERDICT: Verdict,
}


def _log_row(*, target_kind: str, project=None, **event) -> dict:
    if target_kind not in KIND_MODELS:
        raise ValueError(f"unknown audit target kind {target_kind!r}; known: {', '.join(sorted(KIND_MODELS))}")
    return dict(event, target_model=KIND_MODELS[target_kind], project_id=project.pk if project is not None else None)


def audit_rows_for(events: list[dict]) -> list[dict]:
    """Audit rows (each a dict of ``audit_record``'s arguments) as ``core.audit.audit_log_rows``
    takes them, for a service that writes them along with rows of another app."""
    return [_log_row(**event) for event in events]


def audit_records(events: list[dict]) -> list[AuditLog]:
    """Write audit rows (each a dict of ``audit_record``'s arguments) in one INSERT, inside the
    transaction of the change they record (``audit_log_rows`` refuses to run outside one)."""
    return audit_log_rows(audit_rows_for(events))


def audit_record(
    *,
    actor,
    action: AuditAction,
    target_kind: str,
    target_id: int | None = None,
    project=None,
    before=None,
    after=None,
) -> AuditLog:
    """Write one audit row (see ``audit_records``)."""
    (row,) = audit_records([dict(
        actor=actor, action=action, target_kind=target_kind, target_id=target_id, project=project, before=before,
        after=after,
    )])
    return row


def audit_kind(row: AuditLog) -> str:
    """The workspace's kind for a row's target (exports keep their ``target_kind`` column);
    ``app.model`` for a target the workspace has no word for."""
    if row.content_type_id is None:
        return ""
    content_type = ContentType.objects.get_for_id(row.content_type_id)
    for kind, model in KIND_MODELS.items():
        if model._meta.label_lower == f"{content_type.app_label}.{content_type.model}":
            return str(kind)
    return f"{content_type.app_label}.{content_type.model}"
