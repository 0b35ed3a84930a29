"""Writes of crowd studies: open or change a study, rotate its token, admit a worker, mark a
worker done, set an attention check. Each in one transaction with its audit row."""

import hashlib
import hmac

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.audit_actions import AuditAction

from ..models import AnnotationItem, AnnotationProject, AnnotatorProfile, ProjectMembership, Role
from ..services.audit import audit_record
from .models import CHECK_OVERLAP, AttentionCheck, CrowdStudy, CrowdWorker, crowd_token_new

# The study's settings a curator may change (``crowd_study_set``), as the API and form name them.
STUDY_FIELDS = ("open", "worker_param", "study_param", "session_param", "quota", "check_rate", "max_failures",
                "completion_code", "completion_url")
PARAM_MAX = 200  # characters of a platform id the entry link accepts


def _require_curator(project: AnnotationProject, actor) -> None:
    from ..selectors.projects import project_role

    if project_role(project=project, user=actor) != Role.CURATOR:
        raise PermissionError(f"only curators of project {project.name!r} change its crowd study")


def _study_view(study: CrowdStudy) -> dict:
    # the token stays out of the trail: whoever reads a project's history would hold the link
    return {field: getattr(study, field) for field in STUDY_FIELDS}


@transaction.atomic
def crowd_study_set(*, project: AnnotationProject, actor, **fields) -> CrowdStudy:
    """Open the project to a crowd platform, or change its study (``STUDY_FIELDS``). ``ValueError``
    naming the field for a value out of range; nothing is stored then."""
    _require_curator(project, actor)
    unknown = set(fields) - set(STUDY_FIELDS)
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not a crowd study setting; known: {', '.join(STUDY_FIELDS)}")
    study = CrowdStudy.objects.select_for_update().filter(project=project).first()
    before = _study_view(study) if study else None
    study = study or CrowdStudy(project=project)
    for field, value in fields.items():
        setattr(study, field, value)
    if project.overlap >= CHECK_OVERLAP:
        raise ValueError(f"overlap: a crowd study's project asks fewer than {CHECK_OVERLAP} labels per item")
    if not 0 <= study.check_rate < 1:
        raise ValueError(f"check_rate: a share of the items, at least 0 and below 1, not {study.check_rate}")
    if not 1 <= study.quota <= 10000:
        raise ValueError(f"quota: between 1 and 10000 items per worker, not {study.quota}")
    for name in ("worker_param", "study_param", "session_param"):
        if not str(getattr(study, name)).strip():
            raise ValueError(f"{name}: the name of a query parameter of the entry link; it must not be empty")
    if not str(study.completion_code).strip():
        raise ValueError("completion_code: must not be empty (the platform checks it)")
    study.full_clean(exclude=["project", "token"])
    study.save()
    if not project.has_crowd_study:
        AnnotationProject.objects.filter(pk=project.pk).update(has_crowd_study=True)
        project.has_crowd_study = True
    audit_record(actor=actor, action=AuditAction.CROWD_STUDY_SET, target_kind="annotation_project",
                 target_id=project.pk, project=project, before=before, after=_study_view(study))
    return study


@transaction.atomic
def crowd_token_rotate(*, project: AnnotationProject, actor) -> CrowdStudy:
    """A new entry token: the old link answers 404 from now on; workers already in keep their accounts."""
    _require_curator(project, actor)
    study = CrowdStudy.objects.select_for_update().get(project=project)
    study.token = crowd_token_new()
    study.save(update_fields=["token"])
    audit_record(actor=actor, action=AuditAction.CROWD_TOKEN_ROTATE, target_kind="annotation_project",
                 target_id=project.pk, project=project)
    return study


def pseudonym(study: CrowdStudy, worker_id: str) -> str:
    """The worker's username: keyed on the server's secret, so it names neither the platform id
    nor anything another worker could compute."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"crowd\0{study.pk}\0{worker_id}".encode(), hashlib.sha256)
    return f"crowd-{study.pk}-{digest.hexdigest()[:12]}"


def study_for_token(token: str) -> CrowdStudy:
    """The open study of ``token`` with its project; ``CrowdStudy.DoesNotExist`` for a token that
    is unknown, rotated or closed (the entry link answers 404 alike)."""
    return CrowdStudy.objects.select_related("project").get(token=token, open=True)


@transaction.atomic
def crowd_join(*, study: CrowdStudy, worker_id: str, platform_study: str = "", platform_session: str = "",
               ) -> tuple[CrowdWorker, bool]:
    """The worker's account in the study, created on their first visit (a pseudonymous annotator,
    member of this project only, without a usable password); returns it and whether it is new.
    ``ValueError`` naming the parameter when the worker id is missing or too long."""
    worker_id = (worker_id or "").strip()
    if not worker_id:
        raise ValueError(f"{study.worker_param}: the platform's worker id is missing from the entry link")
    for name, value in ((study.worker_param, worker_id), (study.study_param, platform_study),
                        (study.session_param, platform_session)):
        if len(value) > PARAM_MAX:
            raise ValueError(f"{name}: at most {PARAM_MAX} characters")
    worker = CrowdWorker.objects.select_related("user").filter(study=study, worker_id=worker_id).first()
    if worker is not None:
        if platform_session and platform_session != worker.platform_session:
            worker.platform_session = platform_session
            worker.save(update_fields=["platform_session"])
        return worker, False
    User = get_user_model()
    user = User(username=pseudonym(study, worker_id), is_staff=False)
    user.set_unusable_password()
    user.save()
    AnnotatorProfile.objects.create(user=user, role=Role.ANNOTATOR)
    ProjectMembership.objects.create(project=study.project, user=user, role=Role.ANNOTATOR)
    worker = CrowdWorker.objects.create(study=study, user=user, worker_id=worker_id,
                                        platform_study=platform_study[:PARAM_MAX],
                                        platform_session=platform_session[:PARAM_MAX])
    audit_record(actor=user, action=AuditAction.CROWD_WORKER_JOIN, target_kind="user", target_id=user.pk,
                 project=study.project, after={"username": user.username, "study_id": study.pk})
    return worker, True


@transaction.atomic
def crowd_worker_complete(*, worker: CrowdWorker) -> CrowdWorker:
    """Mark the worker done (once): the completion page shows the code from then on."""
    worker = CrowdWorker.objects.select_for_update().select_related("study__project").get(pk=worker.pk)
    if worker.completed_at is None:
        worker.completed_at = timezone.now()
        worker.save(update_fields=["completed_at"])
        audit_record(actor=worker.user, action=AuditAction.CROWD_WORKER_COMPLETE, target_kind="user",
                     target_id=worker.user_id, project=worker.study.project,
                     after={"completed_at": worker.completed_at.isoformat()})
    return worker


def _expected_check(project: AnnotationProject, expected) -> dict:
    if not isinstance(expected, dict) or not expected:
        raise ValueError("expected: an object of label fields and the value each must have, e.g."
                         ' {"choice": "left"}')
    for field, value in expected.items():
        allowed = (project.label_set or {}).get(field)
        if allowed is None:
            raise ValueError(f"expected.{field}: not a label field of this project; its fields: "
                             f"{', '.join(project.label_set or {}) or 'none'}")
        if value not in allowed:
            raise ValueError(f"expected.{field}: {value!r} is not one of {', '.join(map(str, allowed))}")
    return expected


@transaction.atomic
def attention_check_set(*, project: AnnotationProject, item_id: int, expected, actor) -> AttentionCheck:
    """Make an item of the project an attention check with a known answer: every crowd worker may
    label it (its overlap becomes ``CHECK_OVERLAP``), at the study's rate. ``ValueError`` naming
    the field for an unknown item or an answer outside the label set."""
    _require_curator(project, actor)
    expected = _expected_check(project, expected)
    item = AnnotationItem.objects.select_for_update().filter(pk=item_id, project=project).first()
    if item is None:
        raise ValueError(f"item: no item {item_id} in project {project.name!r}")
    if item.status != AnnotationItem.Status.OPEN:
        raise ValueError(f"item: item {item_id} is {item.status}; only an open item becomes an attention check")
    check, created = AttentionCheck.objects.update_or_create(item=item, defaults={"expected": expected,
                                                                                  "created_by": actor})
    before = {"labels_needed": item.labels_needed}
    if item.labels_needed != CHECK_OVERLAP:
        item.labels_needed = CHECK_OVERLAP
        item.save(update_fields=["labels_needed"])
    audit_record(actor=actor, action=AuditAction.ATTENTION_CHECK_SET, target_kind="annotation_item",
                 target_id=item.pk, project=project, before=before,
                 after={"expected": expected, "labels_needed": CHECK_OVERLAP})
    return check


def check_seed(study: CrowdStudy, user_id: int) -> int:
    """The secret seed of one worker's check positions (from the server's secret: never shown)."""
    key = hmac.new(settings.SECRET_KEY.encode(), f"crowd-checks\0{study.pk}\0{user_id}".encode(), hashlib.sha256)
    return int.from_bytes(key.digest()[:8], "big")


