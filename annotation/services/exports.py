"""Export jobs: a task set in our format or an upstream one, or a project's annotations, written
by a Celery worker into ``VAR_DIR/exports`` (never inside a request), with progress.

* ``export_request`` checks who may export what, stores a queued ``ExportJob`` and enqueues
  ``annotation.run_export`` once the transaction commits.
* ``export_execute`` (the task's one call) writes the bundle to a temporary file in the same
  folder and renames it into place only when it is complete, then records size and sha256;
  any failure is recorded on the job with its reason and the temporary file is removed.
* ``export_delete`` removes a job (cancels it while queued) and its file.
* A bundle is a zip: the data files of the format and ``manifest.json``
  (``benchmark.services.bundles`` writes task sets, ``annotations_bundle_write`` annotations).

Who may do what: task sets are exported by curators (and admins), in the Hugging Face format
optionally with the labels and gold labels of the set's tasks (what a global curator's
all-projects annotation export holds, full identities included); a project's annotations by
its members (``annotation.exporters.annotation_export_scope`` decides what each one gets), all
projects' by curators. A job's file is downloaded by the user who asked for it while they may
still see its data, and by curators.
"""

import errno
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from benchmark.importers.common import slugify_key
from benchmark.models import TaskSet
from benchmark.services.bundles import (
    GENERATOR,
    HUGGINGFACE,
    Bundle,
    taskset_bundle_write,
    taskset_formats_for,
)
from benchmark.services.tasksets import TaskSetError
from core.accounts import is_global_curator
from core.jobs import job_claim, job_release, jobs_enqueue_on_commit, unsent_reason
from core.bounded import whole_number
from core.converters import MAX_ID

from ..exporters import FORMATS as ANNOTATION_FORMATS
from ..exporters import annotation_export_scope, label_dataset_configs, write_annotations
from ..models import ExportJob

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL = 0.25  # seconds between progress writes; the last one is always written


def exports_dir() -> Path:
    folder = Path(settings.VAR_DIR) / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- requesting -----------------------------------------------------------------------------


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (None, "", "0", "false", "False", "off"):
        return False
    if value in ("1", "true", "True", "on"):
        return True
    raise ValueError(f"{name}: expected true or false, got {value!r}")


def _id(value: Any, name: str) -> int:
    try:
        number = whole_number(name, value)  # ASCII digits only
    except ValueError:
        raise ValueError(f"{name}: expected an id, got {value!r}") from None
    if isinstance(value, bool) or not 1 <= number <= MAX_ID:
        raise ValueError(f"{name}: expected an id, got {value!r}")
    return number


def _taskset_parameters(*, user, parameters: dict) -> tuple[dict, str]:
    if not is_global_curator(user):
        raise PermissionError("only curators may export task sets")
    if parameters.get("task_set") in (None, ""):
        raise ValueError("task_set: required")
    task_set = TaskSet.objects.filter(pk=_id(parameters["task_set"], "task_set")).first()
    if task_set is None:
        raise ValueError(f"task_set: no task set {parameters['task_set']}")
    name = parameters.get("format") or "native"
    allowed = taskset_formats_for(task_set)
    if name == HUGGINGFACE and not task_set.is_frozen:
        raise ValueError(f"format: {task_set} is not frozen; freeze it before exporting it as a Hugging Face dataset")
    if name not in {f.name for f in allowed}:
        raise ValueError(f"format: {task_set} cannot be written as {name!r}; "
                         f"its formats: {', '.join(f.name for f in allowed)}")
    history = _flag(parameters.get("include_history", False), "include_history")
    unreviewed = _flag(parameters.get("include_unreviewed", False), "include_unreviewed")
    labels = _flag(parameters.get("include_labels", False), "include_labels")
    if name == HUGGINGFACE and history:
        raise ValueError("include_history: the Hugging Face format carries no review history; export it without, "
                         "or export the native format with history")
    if labels and name != HUGGINGFACE:
        raise ValueError(f"include_labels: only the {HUGGINGFACE} format carries labels; the {name} format has none "
                         "(export a project's annotations from the Exports page)")
    filename = (f"taskset-{slugify_key(task_set.name, max_length=80) or task_set.pk}-v{task_set.version}-{name}"
                + ("-labels" if labels else ""))
    clean = {"task_set": task_set.pk, "format": name, "include_history": history, "include_unreviewed": unreviewed}
    if labels:
        clean["include_labels"] = True
    return clean, filename + ".zip"


def _annotation_parameters(*, user, parameters: dict) -> tuple[dict, str]:
    project = parameters.get("project")
    project_id = None if project in (None, "") else _id(project, "project")
    fmt = parameters.get("format") or "jsonl"
    if fmt not in ANNOTATION_FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of {', '.join(ANNOTATION_FORMATS)}")
    scope = annotation_export_scope(user=user, project_id=project_id)  # refuses what the user may not see
    stem = "all" if project_id is None else slugify_key(scope.name, max_length=80) or str(project_id)
    return {"project": project_id, "format": fmt}, f"annotations-{stem}-{fmt}.zip"


REQUESTS = {ExportJob.Kind.TASK_SET: _taskset_parameters, ExportJob.Kind.ANNOTATIONS: _annotation_parameters}


@transaction.atomic
def export_request(*, user, kind: str, parameters: dict) -> ExportJob:
    """A queued export job, enqueued once this transaction commits; bad parameters raise
    ``ValueError`` naming the field, a refused user ``PermissionError`` (or not-found)."""
    if not getattr(user, "is_authenticated", False):
        raise PermissionError("sign in to export")
    if kind not in REQUESTS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(REQUESTS)}")
    if not isinstance(parameters, dict):
        raise ValueError("parameters: expected an object")
    clean, filename = REQUESTS[kind](user=user, parameters=parameters)
    job = ExportJob.objects.create(kind=kind, parameters=clean, requested_by=user, filename=filename)
    from ..tasks import run_export  # the task module imports this one

    def unsent(exc: Exception) -> None:
        now = timezone.now()
        ExportJob.objects.filter(pk=job.pk, status=ExportJob.Status.QUEUED).update(
            status=ExportJob.Status.FAILED, error=unsent_reason(exc), finished_at=now, updated_at=now)

    jobs_enqueue_on_commit(run_export, [job.pk], unsent=unsent)
    return job



# --- bundles --------------------------------------------------------------------------------


def annotations_bundle_write(
    *, user, project_id: int | None, fmt: str, out: IO[bytes],
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> dict:
    scope = annotation_export_scope(user=user, project_id=project_id)
    with Bundle(out) as bundle:
        counts = write_annotations(scope, fmt=fmt, open_file=bundle.open, progress=progress)
        manifest = {
            "format": f"annotations-{fmt}",
            "generator": GENERATOR,
            "projects": [{"id": p.pk, "name": p.name, "kind": p.kind} for p in scope.projects],
            "audit_trail": scope.audit_events is not None,
            "counts": counts,
            "exported_at": timezone.now().isoformat(),
            "requested_by": user.get_username(),
        }
        return bundle.close(manifest)


# --- running --------------------------------------------------------------------------------


def _progress_writer(job_id: int) -> Callable[[int, int], None]:
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < PROGRESS_INTERVAL:
            return
        last[0] = now
        ExportJob.objects.filter(pk=job_id).update(progress_done=done, progress_total=total, updated_at=timezone.now())

    return report


def _write(job: ExportJob, out: IO[bytes]) -> None:
    report = _progress_writer(job.pk)
    params = job.parameters
    if job.kind == ExportJob.Kind.TASK_SET:
        task_set = TaskSet.objects.filter(pk=params["task_set"]).first()
        if task_set is None:
            raise ValueError(f"task set {params['task_set']} no longer exists")
        extra_configs = []
        if params.get("include_labels"):
            # Decided again when the job runs: a curator who lost the role since gets a failed job.
            scope = annotation_export_scope(user=job.requested_by, project_id=None)
            extra_configs = label_dataset_configs(scope, task_set=task_set)
        taskset_bundle_write(task_set=task_set, format_name=params["format"],
                             include_history=params["include_history"], out=out, progress=report,
                             include_unreviewed=params.get("include_unreviewed", False), extra_configs=extra_configs)
    elif job.kind == ExportJob.Kind.ANNOTATIONS:
        annotations_bundle_write(user=job.requested_by, project_id=params["project"], fmt=params["format"], out=out,
                                 progress=report)
    else:
        raise ValueError(f"unknown export kind {job.kind!r}")


EXPECTED_ERRORS = (ValueError, TaskSetError, PermissionError, ObjectDoesNotExist)
# A full disk, a quota or a file size limit: the user's fix is space, not a bug report.
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_execute(*, job_id: int, worker: str = "") -> ExportJob:
    """Run one queued job to done or failed; ``worker`` is the Celery worker's hostname, recorded
    so that the job can be re-queued if that worker dies (``core.jobs.jobs_recover`` puts it
    back to queued). Only a queued job is claimed, so a second message for a job runs nothing."""
    if not ExportJob.objects.filter(pk=job_id).exists():
        raise ExportJob.DoesNotExist(f"no export job {job_id}")
    claimed = job_claim(ExportJob, job_id, worker=worker, error="")
    job = ExportJob.objects.select_related("requested_by").get(pk=job_id)
    if not claimed:
        return job
    folder = exports_dir()
    final = folder / f"{job.pk}-{job.filename}"
    temporary = None
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{job.pk}-", suffix=".part", delete=False) as out:
            temporary = Path(out.name)
            _write(job, out)
            out.flush()
            os.fsync(out.fileno())
        size, digest = temporary.stat().st_size, _file_digest(temporary)
        os.replace(temporary, final)  # atomic on one filesystem: the file is whole or absent
        temporary = None
    except Exception as exc:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        if isinstance(exc, (OperationalError, InterfaceError)):
            job_release(ExportJob, job.pk)
            raise  # transient database trouble: the task retries
        disk_full = isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS
        if disk_full:
            logger.error("export job %s: no space to write it in %s: %s", job.pk, folder, exc)
            reason = (f"no space left to write the export in {folder} ({exc.strerror}); "
                      f"free some space there and request the export again")
        elif isinstance(exc, EXPECTED_ERRORS):
            reason = str(exc)
        else:
            logger.exception("export job %s failed", job.pk)
            reason = f"{type(exc).__name__}: {exc}"
        ExportJob.objects.filter(pk=job.pk).update(
            status=ExportJob.Status.FAILED, error=reason or type(exc).__name__, finished_at=timezone.now(),
            updated_at=timezone.now(),
        )
        job.refresh_from_db()
        return job
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportJob.Status.DONE, file_path=final.name, size=size, sha256=digest,
        progress_done=F("progress_total"), finished_at=timezone.now(),
        updated_at=timezone.now(),
    )
    job.refresh_from_db()
    return job


# --- reading --------------------------------------------------------------------------------


def exports_for(user) -> QuerySet[ExportJob]:
    """The user's own jobs, newest first."""
    if not getattr(user, "is_authenticated", False):
        return ExportJob.objects.none()
    return ExportJob.objects.filter(requested_by=user).order_by("-created_at", "-pk")


def export_visible(*, job: ExportJob, user) -> bool:
    """Whether ``user`` may see the job and its file: curators always; the requester while they
    may still see its data (a project member who left it may not)."""
    if is_global_curator(user):
        return True
    if job.requested_by_id != getattr(user, "pk", None):
        return False
    if job.kind == ExportJob.Kind.ANNOTATIONS:
        try:
            annotation_export_scope(user=user, project_id=job.parameters.get("project"))
        except (PermissionError, ObjectDoesNotExist):
            return False
    return True


def export_get(*, job_id: int, user) -> ExportJob:
    """The job if ``user`` may see it; ``ExportJob.DoesNotExist`` otherwise (outsiders cannot tell)."""
    job = ExportJob.objects.filter(pk=job_id).select_related("requested_by").first()
    if job is None or not export_visible(job=job, user=user):
        raise ExportJob.DoesNotExist(f"no export {job_id}")
    return job


def export_delete(*, job_id: int, user) -> None:
    """Delete an export and its file: those who may see it (``export_visible``; others get
    ``ExportJob.DoesNotExist``). A queued job is cancelled; a running one cannot be deleted
    (``ValueError``) until it is done or failed. The file goes once the row's deletion commits."""
    with transaction.atomic():
        locked = ExportJob.objects.select_for_update().filter(pk=job_id).first()  # the worker's claim waits
        if locked is None or not export_visible(job=locked, user=user):
            raise ExportJob.DoesNotExist(f"no export {job_id}")
        if locked.status == ExportJob.Status.RUNNING:
            raise ValueError(f"export {job_id} is running; delete it once it is done or failed")
        locked.delete()
        if locked.file_path:
            path = exports_dir() / locked.file_path
            transaction.on_commit(lambda: path.unlink(missing_ok=True))


def export_file(*, job: ExportJob) -> Path:
    """The finished job's file; ``ValueError`` when it is not done or the file is gone."""
    if job.status != ExportJob.Status.DONE:
        raise ValueError(f"export {job.pk} is {job.status}; its file is there once it is done")
    path = exports_dir() / job.file_path
    if not path.is_file():
        raise ValueError(f"the file of export {job.pk} is no longer there; request the export again")
    return path
