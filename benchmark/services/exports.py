"""Export jobs: a task set in our format or an upstream one, or a project's annotations, written
by a Celery worker into ``VAR_DIR/exports`` (never inside a request), with progress.

* ``export_request`` checks who may export what, stores a queued ``ExportJob`` and enqueues
  ``benchmark.run_export`` once the transaction commits.
* ``export_execute`` (the task's one call) writes the bundle to a temporary file in the same
  folder and renames it into place only when it is complete, then records size and sha256;
  any failure is recorded on the job with its reason and the temporary file is removed.
* ``export_delete`` removes a job (cancels it while queued) and its file.
* A bundle is a zip: the data files of the format and ``manifest.json``. Task-set bundles are
  deterministic (fixed entry times, sorted keys, no export time inside), so exporting an
  unchanged set twice gives the same bytes and the same sha256.

Who may do what: task sets are exported by curators (and admins); a project's annotations by
its members (``annotation.exporters.annotation_export_scope`` decides what each one gets), all
projects' by curators. A job's file is downloaded by the user who asked for it while they may
still see its data, and by curators.
"""

import errno
import hashlib
import json
import logging
import os
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from annotation.exporters import FORMATS as ANNOTATION_FORMATS
from annotation.exporters import annotation_export_scope, write_annotations
from annotation.selectors import is_global_curator
from config.converters import MAX_ID

from ..exporters.curated import curated_task
from ..exporters.deepscholar import write_deepscholar
from ..exporters.deepsynth import write_deepsynth
from ..exporters.native import canonical_json
from ..exporters.reportbench import write_reportbench
from ..importers.common import slugify_key
from ..models import ExportJob, Protocol, TaskSet
from .tasksets import TaskSetError, taskset_changelog, taskset_export

logger = logging.getLogger(__name__)

GENERATOR = "survey-eval-studio export 1"
MANIFEST = "manifest.json"
NATIVE_FILE = "tasks.jsonl"
HISTORY_FILE = "history/tasks_with_history.jsonl"
PROGRESS_INTERVAL = 0.25  # seconds between progress writes; the last one is always written
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: entries carry no export time


@dataclass(frozen=True)
class TaskSetFormat:
    name: str
    label: str
    protocol: str | None  # the protocol whose tasks the format holds; None: every task
    writer: Callable[[Iterable[dict], Callable[[str, bytes], None], Counter], None] | None


TASKSET_FORMATS: dict[str, TaskSetFormat] = {
    f.name: f
    for f in [
        TaskSetFormat("native", "Our JSONL task format (docs/formats.md)", None, None),
        TaskSetFormat("deepsynth", "DeepSynth-Eval tasks JSONL", Protocol.DEEPSYNTH, write_deepsynth),
        TaskSetFormat("reportbench", "ReportBench prompts + gold bibliography files", Protocol.REPORTBENCH,
                      write_reportbench),
        TaskSetFormat("deepscholar", "DeepScholar-bench CSVs + nuggets", Protocol.DEEPSCHOLAR, write_deepscholar),
    ]
}


def exports_dir() -> Path:
    folder = Path(settings.VAR_DIR) / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def taskset_formats_for(task_set: TaskSet) -> list[TaskSetFormat]:
    """The formats a set can be written in: ours, and the upstream format of each protocol it holds."""
    protocols = set(task_set.tasks.values_list("protocol", flat=True))
    return [f for f in TASKSET_FORMATS.values() if f.protocol is None or f.protocol in protocols]


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
        number = int(value)
    except (TypeError, ValueError):
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
    if name not in {f.name for f in allowed}:
        raise ValueError(f"format: {task_set} cannot be written as {name!r}; "
                         f"its formats: {', '.join(f.name for f in allowed)}")
    history = _flag(parameters.get("include_history", False), "include_history")
    unreviewed = _flag(parameters.get("include_unreviewed", False), "include_unreviewed")
    filename = f"taskset-{slugify_key(task_set.name, max_length=80) or task_set.pk}-v{task_set.version}-{name}"
    return ({"task_set": task_set.pk, "format": name, "include_history": history, "include_unreviewed": unreviewed},
            filename + ".zip")


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
    job_id = job.pk

    def enqueue() -> None:
        from benchmark.tasks import run_export

        try:
            run_export.delay(job_id)
        except Exception as exc:  # the job is committed: record why it will never run instead of failing silently
            logger.exception("could not enqueue export job %s", job_id)
            ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
                status=ExportJob.Status.FAILED, error=f"could not reach the task queue: {exc}",
                finished_at=timezone.now(), updated_at=timezone.now(),
            )

    transaction.on_commit(enqueue)
    return job


# --- bundles --------------------------------------------------------------------------------


class Bundle:
    """A deterministic zip: fixed entry times and permissions, each file's size and sha256 kept."""

    def __init__(self, out: IO[bytes]) -> None:
        self.zip = zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
        self.files: dict[str, dict] = {}

    def _info(self, name: str, *, manifest: bool = False) -> zipfile.ZipInfo:
        if name in self.files or (name == MANIFEST) != manifest:
            raise ValueError(f"the bundle already has a file {name}")
        info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        return info

    def add(self, name: str, data: bytes) -> None:
        self.zip.writestr(self._info(name), data, compresslevel=6)
        self.files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        """A file written in pieces (large annotation files), hashed as it goes."""
        info = self._info(name)
        digest, size = hashlib.sha256(), 0
        with self.zip.open(info, "w") as entry:
            class _Hashing:
                def write(self, data: bytes) -> int:
                    nonlocal size
                    digest.update(data)
                    size += len(data)
                    return entry.write(data)

            yield _Hashing()
        self.files[name] = {"bytes": size, "sha256": digest.hexdigest()}

    def __enter__(self) -> "Bundle":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self.zip.fp is not None:
            # Finish the zip on the failure path too, so it never writes into an already closed
            # file when collected; the caller deletes the file.
            try:
                self.zip.close()
            except (OSError, ValueError, RuntimeError):
                pass

    def close(self, manifest: dict) -> dict:
        """Write ``manifest.json`` (with every file's size and sha256) last; returns it."""
        manifest = {**manifest, "files": dict(sorted(self.files.items()))}
        data = (json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2) + "\n").encode("utf-8")
        self.zip.writestr(self._info(MANIFEST, manifest=True), data, compresslevel=6)
        self.zip.close()
        return manifest


def _item_key(kind: str, index: int, item: dict):
    """How items are matched between versions: as a re-import matches them (docs/formats.md)."""
    if kind == "prompts":
        return item["level"]
    if kind == "gold_references":
        return canonical_json(item["bib"])
    return index


ITEM_LISTS = ("prompts", "constraint_questions", "checklist_groups", "checklist_items", "gold_references", "nuggets",
              "rubric_criteria")


def _items(task: dict, kind: str) -> dict:
    if kind == "checklist_items":
        return {(g, i): item for g, group in enumerate(task["checklist_groups"]) for i, item in enumerate(group["items"])}
    rows = task[kind]
    if kind == "checklist_groups":
        rows = [{k: v for k, v in group.items() if k != "items"} for group in rows]
    return {_item_key(kind, i, item): item for i, item in enumerate(rows)}


def task_changes(before: dict, after: dict) -> dict:
    """Which task fields and how many items of each kind were added, removed or changed."""
    fields = sorted(k for k in after.keys() | before.keys()
                    if k not in ITEM_LISTS and before.get(k) != after.get(k))
    items = {}
    for kind in ITEM_LISTS:
        old, new = _items(before, kind), _items(after, kind)
        counts = {
            "added": len(new.keys() - old.keys()),
            "removed": len(old.keys() - new.keys()),
            "changed": sum(1 for k in new.keys() & old.keys() if canonical_json(new[k]) != canonical_json(old[k])),
        }
        if any(counts.values()):
            items[kind] = counts
    return {"fields": fields, "items": items}


def _lines_by_key(text: str) -> dict[str, dict]:
    lines = (json.loads(line) for line in text.splitlines() if line)
    return {f"{line['protocol']}/{line['key']}": line for line in lines}


def taskset_changes(*, task_set: TaskSet, current_text: str | None = None, against: TaskSet | None = None) -> dict:
    """``taskset_changelog`` against ``against`` (default the previous version), with item-level
    changes of each changed task."""
    log = taskset_changelog(task_set=task_set, against=against)
    changes = {
        "previous": None if log.previous is None else {
            "name": log.previous.name, "version": log.previous.version, "content_hash": log.previous.content_hash},
        "added": log.added, "removed": log.removed, "unchanged": log.unchanged, "changed": [],
    }
    if log.changed:
        current = _lines_by_key(current_text if current_text is not None else taskset_export(task_set=task_set))
        previous = _lines_by_key(taskset_export(task_set=log.previous))
        changes["changed"] = [{"task": key, **task_changes(previous[key], current[key])} for key in log.changed]
    return changes


def _content_hash(task_set: TaskSet, text: str) -> str:
    return task_set.content_hash if task_set.is_frozen else hashlib.sha256(text.encode("utf-8")).hexdigest()


def taskset_bundle_write(
    *, task_set: TaskSet, format_name: str, include_history: bool, out: IO[bytes],
    progress: Callable[[int, int], None] = lambda done, total: None, include_unreviewed: bool = False,
) -> dict:
    """Write the set as a bundle in ``format_name``; returns the manifest.

    The tasks come from ``taskset_export``: a frozen set's snapshot, an unfrozen set's live
    tasks, so every format of a frozen set states the frozen content. An upstream format holds
    curated content only (``exporters.curated``): accepted or edited items of curated tasks,
    unless ``include_unreviewed``; the manifest says which. The native format holds everything.
    """
    export_format = TASKSET_FORMATS.get(format_name)
    if export_format is None:
        raise ValueError(f"format: {format_name!r} is not one of {', '.join(TASKSET_FORMATS)}")
    text = taskset_export(task_set=task_set)
    history = taskset_export(task_set=task_set, include_history=True) if include_history else None
    lines = [json.loads(line) for line in text.splitlines() if line]
    total = len(lines)
    counts: Counter = Counter()
    progress(0, total)
    with Bundle(out) as bundle:
        if export_format.writer is None:
            bundle.add(NATIVE_FILE, text.encode("utf-8"))
            counts["tasks"] = total
            progress(total, total)
        else:
            def counted() -> Iterator[dict]:
                for done, line in enumerate(lines, start=1):
                    task = curated_task(line, counts, include_unreviewed=include_unreviewed)
                    if task is not None:
                        yield task
                    progress(done, total)

            export_format.writer(counted(), bundle.add, counts)
        if history is not None:
            bundle.add(HISTORY_FILE, history.encode("utf-8"))
        manifest = {
            "format": export_format.name,
            "format_label": export_format.label,
            "generator": GENERATOR,
            "task_set": {"name": task_set.name, "version": task_set.version, "frozen": task_set.is_frozen,
                         "frozen_at": task_set.frozen_at.isoformat() if task_set.frozen_at else None},
            "content_hash": _content_hash(task_set, text),
            "content_hash_of": "the native JSONL of the set's tasks without history (" +
                               ("its frozen snapshot" if task_set.is_frozen else "live, the set is not frozen") + ")",
            "counts": dict(sorted(counts.items())),
            "include_history": include_history,
            "history_file": HISTORY_FILE if include_history else None,
            "content": "every task and item (native format)" if export_format.writer is None else (
                "curated, draft and in-review tasks; accepted, edited and unreviewed items (proposed by an LLM, an "
                "import or an annotator)" if include_unreviewed else
                "curated tasks only; accepted and edited items only"),
            "include_unreviewed": include_unreviewed if export_format.writer is not None else None,
            "changelog": taskset_changes(task_set=task_set, current_text=text),
        }
        return bundle.close(manifest)


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
        taskset_bundle_write(task_set=task_set, format_name=params["format"],
                             include_history=params["include_history"], out=out, progress=report,
                             include_unreviewed=params.get("include_unreviewed", False))
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
    so that the job can be re-queued if that worker dies (``scoring.services.recovery`` puts it
    back to queued). Only a queued job is claimed, so a second message for a job runs nothing."""
    now = timezone.now()
    if not ExportJob.objects.filter(pk=job_id).exists():
        raise ExportJob.DoesNotExist(f"no export job {job_id}")
    claimed = ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
        status=ExportJob.Status.RUNNING, started_at=now, updated_at=now, error="", worker=worker)
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
            ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.QUEUED, updated_at=timezone.now())
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
