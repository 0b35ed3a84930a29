"""Imports from the browser: an upload becomes a queued ``ImportJob`` that a worker runs through
``run_import`` (all or nothing, in one transaction) — the same queued → running → done/failed
life, claim rule and dead-worker recovery as export jobs.

A ``.zip`` upload is unpacked first (into the job's own folder, refusing absolute paths, ``..``,
more than ``IMPORT_MAX_ZIP_ENTRIES`` entries (also when it is uploaded) and more than
``IMPORT_MAX_UNPACKED_BYTES``) and its single top-level folder, or the folder
itself, is what the importer reads: the folder importers (ReportBench with its _GT folder,
DeepScholar, SurveyLens, markdown reports) take a zip of their folder.
"""

import json
import logging
import shutil
import uuid
import zipfile
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from core.accounts import is_global_curator
from core.jobs import job_claim, job_release, jobs_enqueue_on_commit, unsent_reason

from ..importers.base import ImportFailed
from ..importers.catalogue import IMPORTERS, Importer, run_import
from ..models import ImportJob

logger = logging.getLogger(__name__)

IMPORT_MAX_BYTES = getattr(settings, "API_IMPORT_MAX_BYTES", 20 * 1024 * 1024)
IMPORT_MAX_UNPACKED_BYTES = 10 * IMPORT_MAX_BYTES


def imports_dir() -> Path:
    folder = Path(settings.VAR_DIR) / "imports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def import_request(*, user, format_name: str, upload) -> ImportJob:
    """Store the upload and queue its import (enqueued once this transaction commits). A bad
    format or file raises ``ValueError`` naming the field; non-curators ``PermissionError``."""
    if not is_global_curator(user):
        raise PermissionError("only curators import data")
    if format_name not in IMPORTERS:
        raise ValueError(f"format: {format_name!r} is not one of {', '.join(IMPORTERS)}")
    name = PurePosixPath((upload.name or "upload").replace("\\", "/")).name or "upload"
    if upload.size > IMPORT_MAX_BYTES:
        raise ValueError(f"file: {name} is {upload.size} bytes; the limit is {IMPORT_MAX_BYTES} bytes")
    if zipfile.is_zipfile(upload):  # too many entries: a 400 now, not a failed job later
        try:
            with zipfile.ZipFile(upload) as bundle:
                zip_entries_check(bundle, shown_as=name)
        except ImportFailed as exc:
            raise ValueError(f"file: {name} {exc.message}") from None
        except (zipfile.BadZipFile, OSError, EOFError):
            pass  # unpacking says what is wrong with it, in the job
        upload.seek(0)
    folder = uuid.uuid4().hex
    target = imports_dir() / folder / name
    target.parent.mkdir()
    with target.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    job = ImportJob.objects.create(format=format_name, original_name=name, upload_dir=folder, requested_by=user)
    from ..tasks import run_import_job  # the task module imports this one

    def unsent(exc: Exception) -> None:
        _end(job.pk, status=ImportJob.Status.FAILED,
             errors=[{"file": "", "line": None, "field": "", "message": unsent_reason(exc)}])

    jobs_enqueue_on_commit(run_import_job, [job.pk], unsent=unsent)
    return job


def zip_entries_check(bundle: zipfile.ZipFile, *, shown_as: str) -> None:
    """Refuse a zip with more entries than ``IMPORT_MAX_ZIP_ENTRIES`` before anything is unpacked:
    tens of thousands of small files pass every size limit yet fill the disk's inodes and the
    importer's time. Read from the zip's directory alone."""
    limit = int(getattr(settings, "IMPORT_MAX_ZIP_ENTRIES", 10_000))
    count = len(bundle.infolist())
    if count > limit:
        raise ImportFailed(f"holds {count} entries; the limit is {limit} (IMPORT_MAX_ZIP_ENTRIES)", file=shown_as)


def _unpack(archive: Path, *, shown_as: str, importer: Importer) -> Path:
    """The file or folder in the unpacked zip that ``importer`` reads (``Importer.root_in``)."""
    destination = archive.parent / "unpacked"
    with zipfile.ZipFile(archive) as bundle:
        zip_entries_check(bundle, shown_as=shown_as)
        members = [info for info in bundle.infolist() if not info.is_dir()]
        total = sum(info.file_size for info in members)
        if total > IMPORT_MAX_UNPACKED_BYTES:
            raise ImportFailed(f"unpacks to {total} bytes; the limit is {IMPORT_MAX_UNPACKED_BYTES}", file=shown_as)
        for info in members:
            path = PurePosixPath(info.filename)
            if path.is_absolute() or ".." in path.parts:
                raise ImportFailed(f"holds an unsafe path {info.filename!r}", file=shown_as)
            out = destination.joinpath(*path.parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(info) as source, out.open("wb") as sink:
                shutil.copyfileobj(source, sink)
    source = importer.root_in(destination)
    if source.is_dir() and not any(path.is_file() for path in source.rglob("*")):
        raise ImportFailed("the zip holds no file", file=shown_as)
    return source


def _error_rows(exc: ImportFailed, *, upload: Path, shown_as: str, zipped: bool) -> list[dict]:
    """Every error of the failure (``errors`` when the importer collected several), located in the
    user's upload: our temporary folder is cut off, and a file inside a zip is named after it."""
    failures = getattr(exc, "errors", None) or [exc]
    rows = []
    for failure in failures:
        file = str(getattr(failure, "file", "") or "")
        inner = file.removeprefix(str(upload.parent)).lstrip("/").removeprefix("unpacked/")
        if not inner or inner in (upload.name, str(upload)):
            file = shown_as
        else:
            file = f"{shown_as}: {inner}" if zipped else inner
        rows.append({"file": file, "line": getattr(failure, "line", None),
                     "field": getattr(failure, "field", ""), "message": getattr(failure, "message", str(failure))})
    return rows


def _end(job_id: int, *, status: str, **fields) -> None:
    job = ImportJob.objects.filter(pk=job_id).values("upload_dir").first()
    if job and job["upload_dir"]:
        shutil.rmtree(imports_dir() / job["upload_dir"], ignore_errors=True)
    now = timezone.now()
    ImportJob.objects.filter(pk=job_id).update(status=status, upload_dir="", finished_at=now, updated_at=now, **fields)


PROGRESS_FILE = "progress.json"


class ProgressFile:
    """The worker's ``(done, total)`` for the job page, written beside the upload (the import's
    transaction is not visible to the page until it commits, so progress cannot be a row). Written
    when the percentage moves, atomically (a rename), and deleted with the upload when the job ends."""

    def __init__(self, folder: Path) -> None:
        self.path, self.shown = folder / PROGRESS_FILE, None

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if percent == self.shown:
            return
        self.shown = percent
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps({"done": done, "total": total}), encoding="utf-8")
        partial.replace(self.path)


def import_progress(job: ImportJob) -> dict | None:
    """``{"done", "total", "percent"}`` of a running job whose importer reports progress, else None."""
    if not job.is_active or not job.upload_dir:
        return None
    try:
        data = json.loads((imports_dir() / job.upload_dir / PROGRESS_FILE).read_text(encoding="utf-8"))
        done, total = int(data["done"]), int(data["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"done": done, "total": total, "percent": 100 * done // total if total else 100}


def import_execute(*, job_id: int, worker: str = "") -> ImportJob:
    """Run one queued import to done (its counts) or failed (every error; nothing stored). Only a
    queued job is claimed, so a second message runs nothing; ``worker`` lets recovery re-queue it."""
    if not ImportJob.objects.filter(pk=job_id).exists():
        raise ImportJob.DoesNotExist(f"no import job {job_id}")
    claimed = job_claim(ImportJob, job_id, worker=worker)
    job = ImportJob.objects.get(pk=job_id)
    if not claimed:
        return job
    upload = imports_dir() / job.upload_dir / job.original_name
    zipped = zipfile.is_zipfile(upload)
    try:
        source = _unpack(upload, shown_as=job.original_name, importer=IMPORTERS[job.format]) if zipped else upload
        result = run_import(job.format, source, progress=ProgressFile(upload.parent))
    except ImportFailed as exc:
        errors = _error_rows(exc, upload=upload, shown_as=job.original_name, zipped=zipped)
        _end(job.pk, status=ImportJob.Status.FAILED, errors=errors)
    except (OperationalError, InterfaceError):
        job_release(ImportJob, job.pk)
        raise  # transient database trouble: the task retries (the import rolled back)
    except Exception as exc:
        logger.exception("import job %s failed", job.pk)
        _end(job.pk, status=ImportJob.Status.FAILED, errors=[
            {"file": job.original_name, "line": None, "field": "", "message": f"{type(exc).__name__}: {exc}"}])
    else:
        skipped = [f"skipped {file}: {reason}" for row in result.system_rows() for file, reason in
                   ((s["file"], s["reason"]) for s in row["skipped"])]
        _end(job.pk, status=ImportJob.Status.DONE, counts=result.counts, messages=result.messages + skipped)
    job.refresh_from_db()
    return job
