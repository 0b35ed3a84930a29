"""What the API accepts as an uploaded file: report texts (size, encoding, no NUL bytes, named
after a task key) and single-file imports (size; the import runs on a temporary copy, and an
error names the user's file). Refusals are ``UploadRefused`` with the HTTP status they mean."""

import tempfile
from pathlib import Path

from django.conf import settings

from ..importers.base import ImportFailed, ImportResult
from ..importers.catalogue import run_import
from ..models import Report

REPORT_MAX_BYTES = getattr(settings, "API_REPORT_MAX_BYTES", 2 * 1024 * 1024)
REPORT_SUFFIXES = {".md": Report.Format.MARKDOWN, ".markdown": Report.Format.MARKDOWN, ".txt": Report.Format.TEXT}
IMPORT_MAX_BYTES = getattr(settings, "API_IMPORT_MAX_BYTES", 20 * 1024 * 1024)


class UploadRefused(Exception):
    """A report or file the API will not accept; ``status`` is 400 or 413."""

    def __init__(self, message: str, *, name: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.name = name
        self.status_code = status_code


def upload_text_check(text: str, *, name: str) -> str:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > REPORT_MAX_BYTES:
        raise UploadRefused(f"{name} is {size} bytes; the limit is {REPORT_MAX_BYTES} bytes", name=name,
                            status_code=413)
    if "\x00" in text:
        raise UploadRefused(f"{name} contains NUL bytes: it is not a text report", name=name)
    if not text.strip():
        raise UploadRefused(f"{name} is empty", name=name)
    return text


def upload_report_file(upload) -> tuple[str, str]:
    """An uploaded report file's (task key, text); refuses wrong types, binary and oversized files."""
    name = upload.name or "(unnamed)"
    suffix = Path(name).suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise UploadRefused(f"{name}: expected a .md, .markdown or .txt file named after the task key", name=name)
    if upload.size > REPORT_MAX_BYTES:
        raise UploadRefused(f"{name} is {upload.size} bytes; the limit is {REPORT_MAX_BYTES} bytes", name=name,
                            status_code=413)
    try:
        text = upload.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadRefused(f"{name} is not UTF-8 text (byte {exc.start})", name=name) from None
    return Path(name).stem, upload_text_check(text, name=name)


def upload_import(*, format_name: str, upload) -> ImportResult:
    """Run one single-file importer on an upload, all or nothing (``run_import``). Too large:
    ``UploadRefused`` (413); bad content: ``ImportFailed`` naming the uploaded file, line, field."""
    if upload.size > IMPORT_MAX_BYTES:
        raise UploadRefused(f"{upload.name} is {upload.size} bytes; the limit is {IMPORT_MAX_BYTES}",
                            name=upload.name, status_code=413)
    suffix = Path(upload.name or "upload").suffix[:10]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"upload{suffix}"
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        try:
            return run_import(format_name, path)
        except ImportFailed as exc:  # name the user's file, not our temporary copy
            raise ImportFailed(exc.message, file=upload.name, line=exc.line, column=exc.column,
                               field=exc.field) from None
