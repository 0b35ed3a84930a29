"""Submitting reports: stored with their content hash and parsed form."""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ..models import Report, System, Task
from ..parsing import ParsedReport, parse_report


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ReportInput:
    task: Task
    system: System
    text: str
    format: str = Report.Format.MARKDOWN
    submitted_at: datetime | None = None
    sources: list | None = None  # None: keep what is stored (a markdown folder carries no documents)
    source_path: str = ""


def report_parsed(report: Report) -> ParsedReport:
    """The stored parse as objects (the report's text is kept once, on the report)."""
    return ParsedReport.from_dict({**report.parsed, "text": report.text})


def _fill(report: Report, item: ReportInput) -> None:
    parsed = parse_report(item.text, format=item.format).to_dict()
    del parsed["text"]  # already stored as Report.text
    report.text = item.text
    report.format = item.format
    report.content_hash = content_hash(item.text)
    report.parsed = parsed
    report.stats = parsed.get("stats", {})
    if item.sources is not None or report.pk is None:
        report.sources = item.sources or []
    report.source_path = item.source_path
    report.submitted_at = item.submitted_at or timezone.now()
    report.updated_at = timezone.now()  # bulk_update bypasses auto_now


@transaction.atomic
def reports_submit(*, items: Sequence[ReportInput]) -> dict[str, int]:
    """Store reports, one per (task, system): unchanged text is left alone, changed text replaces it.

    An item without ``sources`` keeps the stored report's retrieved documents, so re-importing
    the same text from a format that carries none does not drop them. The report is updated in
    place, so labels, judgments and preferences pointing at it stay linked.

    Returns counts ``{"created", "updated", "unchanged"}``. Bounded queries for any batch size.
    """
    existing = {
        (r.task_id, r.system_id): r
        for r in Report.objects.filter(
            task_id__in={i.task.pk for i in items}, system_id__in={i.system.pk for i in items}
        ).defer("parsed")
    }
    to_create, to_update = [], []
    seen: set[tuple[int, int]] = set()
    for item in items:
        key = (item.task.pk, item.system.pk)
        if key in seen:
            raise ValueError(f"two reports for task {item.task.key} by system {item.system} in one submission")
        seen.add(key)
        report = existing.get(key)
        if report is None:
            report = Report(task=item.task, system=item.system)
            _fill(report, item)
            to_create.append(report)
        elif report.content_hash != content_hash(item.text) or (
            item.sources is not None and report.sources != item.sources
        ):
            _fill(report, item)
            to_update.append(report)
    Report.objects.bulk_create(to_create, batch_size=200)
    Report.objects.bulk_update(
        to_update,
        ["text", "format", "content_hash", "parsed", "stats", "sources", "source_path", "submitted_at", "updated_at"],
        batch_size=200,
    )
    return {"created": len(to_create), "updated": len(to_update), "unchanged": len(items) - len(to_create) - len(to_update)}
