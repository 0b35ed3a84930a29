"""Helpers shared by the dataset importers: bounded CSV and text reading, bulk upserts of
surveys, tasks and systems, and the re-import rule for curated items.

Re-importing a file updates what it imported before instead of duplicating it:

* surveys, tasks, disciplines: matched on their natural key and updated in bulk; only
  rows whose values changed are written (their ``updated_at`` is set then);
* systems: created when missing; an existing system is left as curators set it;
* curated items (prompts, checklists, gold references, nuggets): ``proposables_sync``
  updates items that nobody has reviewed yet (each change with its revision row),
  keeps reviewed items untouched and removes imported, unreviewed items the file no
  longer contains.
"""

import csv
import io
import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.audit import audit_log_rows
from core.audit_actions import AuditAction
from core.text import normalize_title

from ..models import (
    BibEntry,
    Discipline,
    GoldReference,
    Origin,
    Report,
    ReviewStatus,
    Survey,
    SurveyCitation,
    Task,
    TaskPrompt,
)
from ..services.bibliography import bib_entries_upsert
from ..services.history import snapshot
from ..services.reports import ReportInput, reports_submit
from .base import ImportFailed, ImportResult, Record, read_jsonl

BATCH = 1000


# --- reading ------------------------------------------------------------------------------


def decode_text(raw: bytes, *, file: str | Path) -> str:
    """UTF-8 text of a file's bytes; binary data and bad encodings fail with their line."""
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise ImportFailed("contains NUL bytes: this is binary data, not text", file=file, line=line)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ImportFailed(f"not UTF-8 text (byte {exc.start})", file=file, line=line) from None


def read_text(path: Path, *, name: str | None = None, max_bytes: int | None = None) -> str:
    limit = max_bytes or settings.IMPORT_MAX_LINE_BYTES
    name = name or path.name
    size = path.stat().st_size
    if size > limit:
        raise ImportFailed(f"file of {size:,} bytes exceeds the {limit:,}-byte limit", file=name)
    return decode_text(path.read_bytes(), file=name)


def read_jsonl_as(path: Path, name: str) -> Iterator[tuple[int, dict]]:
    """``read_jsonl`` with errors located at ``name`` (e.g. ``folder/file.jsonl``) instead of the bare file name."""
    try:
        yield from read_jsonl(path)
    except ImportFailed as exc:
        if exc.file != path.name:
            raise
        raise ImportFailed(exc.message, file=name, line=exc.line, field=exc.field) from None


def read_csv(path: Path, *, required: Sequence[str] = (), name: str | None = None) -> Iterator[Record]:
    """Yield one ``Record`` per CSV row, located at the line where the row starts.

    The header must name every ``required`` column; a row with more or fewer fields
    than the header fails with its line.
    """
    name = name or path.name
    text = read_text(path, name=name)
    limit = settings.IMPORT_MAX_LINE_BYTES
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)  # process-wide, but bounded by the same import limit
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ImportFailed(f"malformed CSV: {exc}", file=name, line=reader.line_num) from None
    if not header:
        raise ImportFailed("empty CSV file: expected a header row", file=name, line=1)
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise ImportFailed(f"the header lacks column(s) {', '.join(missing)}", file=name, line=1, field=missing[0])
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportFailed(f"malformed CSV: {exc}", file=name, line=start) from None
        if not row:
            start = reader.line_num + 1
            continue
        if len(row) != len(header):
            raise ImportFailed(
                f"row has {len(row)} fields but the header has {len(header)}",
                file=name, line=start, field=header[min(len(row), len(header)) - 1],
            )
        yield Record(dict(zip(header, row)), file=name, line=start)
        start = reader.line_num + 1


def csv_number(rec: Record, name: str, kind: type = float) -> Any:
    """A numeric CSV cell (``''`` → None); ``kind=int`` accepts ``2015.0``."""
    raw = (rec.data.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise rec.fail(f"expected a number, got {raw[:40]!r}", name) from None
    if kind is int:
        if not value.is_integer() or not raw.isascii():  # float() also reads "٣" and "𝟓"
            raise rec.fail(f"expected a whole number, got {raw[:40]!r}", name)
        return int(value)
    return value


_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)")


def year_from(value: Any) -> int | None:
    """The first plausible four-digit year in a free-text year field (``'2019b'``, ``'Aug. 2021'``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1500 <= value <= 2100 else None
    match = _YEAR.search(str(value or ""))
    return int(match.group(1)) if match else None


def slugify_key(text: str, *, max_length: int = 200) -> str:
    """A stable ASCII key for a free-text name: ``'Mycobiome in the Gut'`` → ``mycobiome-in-the-gut``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:max_length]


_MACRO = re.compile(r"\\[A-Za-z]+")
_WORD_CHAR = re.compile(r"[^\W_]")


def has_usable_title(title: str) -> bool:
    """Whether a title keeps some text once normalized (what ``bib_entries_upsert`` requires).

    A letter or digit outside LaTeX macro names always survives normalization, so the
    (slower) normalization runs only for titles made of macros and punctuation.
    """
    if _WORD_CHAR.search(_MACRO.sub("", title)):
        return True
    return bool(normalize_title(title))


def require_unique(seen: dict, key: Hashable, rec: Record, field: str, what: str) -> None:
    if key in seen:
        raise rec.fail(f"duplicate {what} {key!r}, first seen at line {seen[key]}", field)
    seen[key] = rec.line


# --- bulk upserts -------------------------------------------------------------------------


def rows_upsert(
    model: type[models.Model],
    rows: Sequence[dict],
    *,
    key: tuple[str, ...],
    result: ImportResult,
    kind: str,
    create_only: Sequence[str] = (),
) -> dict[tuple, models.Model]:
    """Create or update rows matched on ``key``; returns ``{key values: instance}``.

    Rows use attribute names (``survey_id``, not ``survey``). Only changed rows are
    written, so importing the same data twice leaves ``updated_at`` alone. Fields in
    ``create_only`` (placeholders a curator may replace) are set on new rows only.
    """
    keyed: dict[tuple, dict] = {}
    for row in rows:
        k = tuple(row[f] for f in key)
        if k in keyed:
            raise ValueError(f"{model.__name__} {k} appears twice in one import")
        keyed[k] = row
    existing: dict[tuple, models.Model] = {}
    groups: dict[tuple, list] = {}
    for k in keyed:
        groups.setdefault(k[:-1], []).append(k[-1])
    for prefix, values in groups.items():
        for start in range(0, len(values), BATCH):
            query = dict(zip(key[:-1], prefix)) | {f"{key[-1]}__in": values[start : start + BATCH]}
            for obj in model.objects.filter(**query):
                existing[tuple(getattr(obj, f) for f in key)] = obj
    now = timezone.now()
    to_create, to_update, changed_fields = [], [], set()
    out: dict[tuple, models.Model] = {}
    for k, row in keyed.items():
        obj = existing.get(k)
        if obj is None:
            obj = model(**row)
            to_create.append(obj)
        else:
            changed = [f for f, v in row.items() if f not in create_only and getattr(obj, f) != v]
            if changed:
                for f in changed:
                    setattr(obj, f, row[f])
                obj.updated_at = now
                changed_fields.update(changed)
                to_update.append(obj)
        out[k] = obj
    model.objects.bulk_create(to_create, batch_size=BATCH)
    if to_update:
        names = sorted({model._meta.get_field(f).name for f in changed_fields} | {"updated_at"})
        model.objects.bulk_update(to_update, names, batch_size=BATCH)
    _count(result, kind, len(to_create), len(to_update), len(keyed) - len(to_create) - len(to_update))
    return out


def _count(result: ImportResult, kind: str, created: int, updated: int, unchanged: int) -> None:
    for outcome, n in (("created", created), ("updated", updated), ("unchanged", unchanged)):
        if n:
            result.add(kind, outcome, n)


def surveys_upsert(
    rows: Sequence[dict], *, source: str, result: ImportResult, create_only: Sequence[str] = ()
) -> dict[str, Survey]:
    """Surveys keyed by ``external_id`` within ``source``; returns ``{external_id: survey}``."""
    rows = [dict(row, source=source) for row in rows]
    stored = rows_upsert(Survey, rows, key=("source", "external_id"), result=result, kind="survey",
                         create_only=create_only)
    return {k[1]: survey for k, survey in stored.items()}


def tasks_upsert(rows: Sequence[dict], *, protocol: str, result: ImportResult) -> dict[str, Task]:
    """Tasks keyed by ``key`` within ``protocol``; a task's curation ``status`` is never touched."""
    rows = [dict(row, protocol=protocol) for row in rows]
    stored = rows_upsert(Task, rows, key=("protocol", "key"), result=result, kind="task")
    return {k[1]: task for k, task in stored.items()}


def tasks_with_surveys_upsert(
    survey_rows: Sequence[dict],
    task_rows: Sequence[dict],
    *,
    source: str,
    protocol: str,
    result: ImportResult,
    survey_create_only: Sequence[str] = (),
) -> dict[str, Task]:
    """Surveys, then the tasks on them; a task row names its survey's ``external_id`` as ``survey``."""
    surveys = surveys_upsert(survey_rows, source=source, result=result, create_only=survey_create_only)
    rows = [{k: v for k, v in row.items() if k != "survey"} | {"survey_id": surveys[row["survey"]].pk} for row in task_rows]
    return tasks_upsert(rows, protocol=protocol, result=result)


def task_prompts_sync(prompts: Sequence[TaskPrompt], *, label: str, result: ImportResult) -> None:
    """The imported prompts of these tasks, one per (task, level)."""
    proposables_sync(
        existing=TaskPrompt.objects.filter(task_id__in={p.task_id for p in prompts}),
        incoming=prompts,
        key=lambda p: (p.task_id, p.level),
        fields=("text",),
        label=label,
        result=result,
        kind="task prompt",
    )


def reports_store(items: Sequence[ReportInput], *, result: ImportResult) -> None:
    """``reports_submit`` with its counts added to the result, and per system the reports
    read and the citations the parser found in them (from the stored parse statistics)."""
    if not items:
        return
    for outcome, n in reports_submit(items=items).items():
        if n:
            result.add("report", outcome, n)
    wanted = {(i.task.pk, i.system.pk) for i in items}
    names = {i.system.pk: i.system.name for i in items}
    stored = Report.objects.filter(task_id__in={t for t, _ in wanted}, system_id__in=set(names))
    for task_id, system_id, stats in stored.values_list("task_id", "system_id", "stats"):
        if (task_id, system_id) in wanted:
            tally = result.system(names[system_id])
            tally.reports += 1
            tally.citations += int(stats.get("citations") or 0)
            tally.resolved += int(stats.get("resolved_citations") or 0)


def disciplines_ensure(taxonomy: str, names: dict[str, str], *, result: ImportResult) -> dict[str, Discipline]:
    """``{code: name}`` → ``{code: Discipline}``, creating the missing ones (existing names are kept)."""
    existing = {d.code: d for d in Discipline.objects.filter(taxonomy=taxonomy, code__in=list(names))}
    missing = [Discipline(taxonomy=taxonomy, code=code, name=name) for code, name in names.items() if code not in existing]
    Discipline.objects.bulk_create(missing)
    _count(result, "discipline", len(missing), 0, 0)
    return existing | {d.code: d for d in missing}


# --- curated items ------------------------------------------------------------------------


def proposables_sync(
    *,
    existing: Iterable[models.Model],
    incoming: Sequence[models.Model],
    key: Callable[[models.Model], Hashable],
    fields: Sequence[str],
    label: str,
    result: ImportResult,
    kind: str,
    stale_out: list | None = None,
) -> list[models.Model]:
    """Make the stored items match the imported ones; returns the stored item for each incoming one.

    ``existing`` are the stored items in the import's scope, ``incoming`` unsaved
    instances; both are matched on ``key``. A matched item that is still ``proposed``
    and came from an import is updated (version + 1, with a revision row); any other
    match (reviewed, or written by a person or a model) is kept as it is. Stored items
    from an import that the file no longer has are deleted while unreviewed — or, when
    ``stale_out`` is given, collected there for ``proposables_remove`` once the items
    that point at them have been synced (a deletion cascades).
    """
    current: dict[Hashable, models.Model] = {}
    for obj in existing:
        current.setdefault(key(obj), obj)
    model = type(incoming[0]) if incoming else type(next(iter(current.values()))) if current else None
    if model is None:
        return []
    attnames = [model._meta.get_field(f).attname for f in fields]
    now = timezone.now()
    out, to_create, to_update, revisions = [], [], [], []
    kept = unchanged = 0
    for new in incoming:
        old = current.pop(key(new), None)
        if old is None:
            new.origin, new.proposed_by = Origin.IMPORT, label
            to_create.append(new)
            out.append(new)
            continue
        out.append(old)
        if old.origin != Origin.IMPORT or old.review_status != ReviewStatus.PROPOSED:
            kept += 1
            continue
        changed = [a for a in attnames if getattr(old, a) != getattr(new, a)]
        if not changed:
            unchanged += 1
            continue
        before = snapshot(old)
        for a in changed:
            setattr(old, a, getattr(new, a))
        old.version += 1
        old.updated_at = now
        to_update.append(old)
        revisions.append((old, before, snapshot(old)))
    stale = [o for o in current.values() if o.origin == Origin.IMPORT and o.review_status == ReviewStatus.PROPOSED]
    kept += len(current) - len(stale)
    _audit_rows([dict(target=o, actor_label=f"import:{label}", action=AuditAction.IMPORT_UPDATE, before=before,
                      after=after) for o, before, after in revisions])
    if stale_out is None:
        proposables_remove(stale, label=label, result=result, kind=kind)
    else:
        stale_out.extend(stale)
    model.objects.bulk_create(to_create, batch_size=BATCH)
    if to_update:
        model.objects.bulk_update(to_update, list(fields) + ["version", "updated_at"], batch_size=BATCH)
    _count(result, kind, len(to_create), len(to_update), unchanged)
    if kept:
        result.add(kind, "kept (reviewed or not imported)", kept)
    return out


def _audit_rows(rows: list[dict]) -> None:
    """The import's audit rows through ``core.audit``, ``BATCH`` rows per INSERT."""
    for start in range(0, len(rows), BATCH):
        audit_log_rows(rows[start:start + BATCH])


def proposables_remove(stale: Sequence[models.Model], *, label: str, result: ImportResult, kind: str) -> None:
    """Delete imported items the file no longer has, each with a revision row."""
    if not stale:
        return
    model = type(stale[0])
    _audit_rows([dict(target=o, actor_label=f"import:{label}", action=AuditAction.IMPORT_REMOVE, before=snapshot(o),
                      note="no longer in the imported file") for o in stale])
    model.objects.filter(pk__in=[o.pk for o in stale]).delete()
    result.add(kind, "removed", len(stale))


# --- bibliographies -----------------------------------------------------------------------


@dataclass(frozen=True)
class CitedWork:
    """One reference of a gold bibliography: a ``bib_entries_upsert`` record, the survey's key
    for it, where it was read (for messages) and, when the release says, whether it is an
    important reference (``None``: the release does not say)."""

    record: dict
    key: str
    where: str
    important: bool | None = None


def bib_entries_store(records: Sequence[dict], *, result: ImportResult) -> list[BibEntry]:
    """``bib_entries_upsert`` with counts: distinct entries created now, and existing ones reused."""
    start = timezone.now()
    entries = bib_entries_upsert(records)
    distinct = {entry.pk: entry for entry in entries}
    created = sum(1 for entry in distinct.values() if entry.created_at >= start)
    _count(result, "bib entry", created, 0, 0)
    if len(distinct) > created:
        result.add("bib entry", "reused", len(distinct) - created)
    return entries


def bibliographies_store(
    *, bibliographies: Sequence[tuple[Task, list[CitedWork]]], label: str, result: ImportResult
) -> None:
    """Store each task's gold references (and its survey's citation list) in bulk.

    References are deduplicated through ``bib_entries_upsert`` (DOI, arXiv id, normalized
    title); a reference that resolves to an entry the same bibliography already lists is
    kept once, and the repeats are reported. Importance is written only when the release
    labels it, so a re-import of an unlabelled release leaves the flags others set alone.
    """
    records = [work.record for _, works in bibliographies for work in works]
    labelled = any(work.important is not None for _, works in bibliographies for work in works)
    entries = iter(bib_entries_store(records, result=result))
    golds: list[GoldReference] = []
    citations: list[SurveyCitation] = []
    for task, works in bibliographies:
        seen: dict[int, str] = {}
        gold_of: dict[int, GoldReference] = {}
        repeats = []
        for work in works:
            entry: BibEntry = next(entries)
            if entry.pk in seen:
                repeats.append(f"{work.where} (same as {seen[entry.pk]})")
                gold_of[entry.pk].important |= bool(work.important)  # important if any of its rows is
                continue
            seen[entry.pk] = work.where
            position = len(seen) - 1
            # Plain ids: thousands of instances, and setting a relation is several times slower.
            gold_of[entry.pk] = GoldReference(task_id=task.pk, bib_entry_id=entry.pk, position=position,
                                              important=bool(work.important))
            golds.append(gold_of[entry.pk])
            citations.append(SurveyCitation(survey_id=task.survey_id, bib_entry_id=entry.pk, position=position,
                                            key=work.key[:200]))
        if repeats:
            shown = "; ".join(repeats[:5]) + (f"; and {len(repeats) - 5} more" if len(repeats) > 5 else "")
            result.messages.append(
                f"{label} task {task.key}: {len(repeats)} reference(s) repeat one listed earlier "
                f"(same DOI, arXiv id or normalized title) and were kept once: {shown}"
            )
    tasks = [task for task, _ in bibliographies]
    proposables_sync(
        existing=GoldReference.objects.filter(task__in=tasks),
        incoming=golds,
        key=lambda g: (g.task_id, g.bib_entry_id),
        fields=("position", "important") if labelled else ("position",),
        label=label,
        result=result,
        kind="gold reference",
    )
    survey_citations_sync(citations, surveys=[task.survey_id for task in tasks], result=result)


def survey_citations_sync(citations: Sequence[SurveyCitation], *, surveys: Sequence[int], result: ImportResult) -> None:
    """Replace the citation lists of ``surveys`` by ``citations``, writing only differences."""
    current = {(c.survey_id, c.bib_entry_id): c for c in SurveyCitation.objects.filter(survey_id__in=surveys)}
    to_create, to_update = [], []
    for new in citations:
        old = current.pop((new.survey_id, new.bib_entry_id), None)
        if old is None:
            to_create.append(new)
        elif (old.position, old.key) != (new.position, new.key):
            old.position, old.key = new.position, new.key
            to_update.append(old)
    if current:
        SurveyCitation.objects.filter(pk__in=[c.pk for c in current.values()]).delete()
        result.add("survey citation", "removed", len(current))
    SurveyCitation.objects.bulk_create(to_create, batch_size=BATCH)
    SurveyCitation.objects.bulk_update(to_update, ["position", "key"], batch_size=BATCH)
    _count(result, "survey citation", len(to_create), len(to_update), len(citations) - len(to_create) - len(to_update))
