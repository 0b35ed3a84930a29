"""Annotations as files: every label, gold label and audit row of a project (or of every
project, for global curators), as JSONL or CSV (``docs/formats.md`` § Annotation exports).

Who gets what (``annotation_export_scope``): global curators and a project's curators get all
of its labels, gold labels and audit rows; other members (annotators, viewers) get the labels
and gold labels the blind-mode rule lets them see (``annotation.blind``) and no audit
rows (those carry other people's before/after values). Everyone else is told the project does
not exist, as the project pages do.

CSV: one row per label (per gold label, per audit row in their own files) with the flat
columns below; values that are JSON (a label's value, before/after) stay JSON text in one
column. A one-project export's labels also have a column per field of the value its kind lists
(``value_choice``, ``value_label``…). Cells are written by ``benchmark.spreadsheet.csv_writer``: formula-like text is
prefixed with ``'`` so a spreadsheet shows it as text instead of running it as a formula.
"""

import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet, Value

from benchmark.exporters.huggingface import DatasetConfig
from benchmark.models import TaskSet
from benchmark.spreadsheet import csv_writer

from core.accounts import is_global_curator
from core.models import AuditLog

from .blind import (blind_items, label_value_shown, status_shown, target_id_shown, visible_gold_labels,
                    visible_labels)
from .comments.models import ItemComment
from .kinds import kind_of
from .models import AnnotationProject, GoldLabel, Label, Role
from .selectors.projects import project_role
from .services.audit import audit_kind

FORMATS = ("jsonl", "csv")
CHUNK = 1000

LABEL_COLUMNS = ("label_id", "project_id", "project", "project_kind", "item_id", "item_status", "target_kind",
                 "target_id", "task", "annotator", "value", "created_at", "guidelines_version", "seconds_taken",
                 "design", "inclusion_probability")
GOLD_COLUMNS = ("item_id", "project_id", "project", "target_kind", "target_id", "task", "value", "note",
                "decided_by", "decided_at")
COMMENT_COLUMNS = ("comment_id", "item_id", "project_id", "project", "author", "text", "mentions", "created_at")
AUDIT_COLUMNS = ("event_id", "at", "actor", "action", "project_id", "project", "target_kind", "target_id",
                 "before", "after")
JSON_COLUMNS = {"value", "before", "after", "mentions"}


@dataclass(frozen=True)
class AnnotationScope:
    """What one user may export: querysets of labels, gold labels and (curators only) audit rows."""

    projects: list[AnnotationProject]
    labels: QuerySet[Label]
    gold_labels: QuerySet[GoldLabel]
    audit_events: QuerySet[AuditLog] | None  # None: not theirs to see
    comments: QuerySet[ItemComment] | None = None  # the discussion of the items they may read
    every_project: bool = False  # asked for every project (however many there are), not for one

    @property
    def name(self) -> str:
        return "all projects" if self.every_project else self.projects[0].name


def annotation_export_scope(*, user, project_id: int | None) -> AnnotationScope:
    """The annotations ``user`` may export: of one project, or (global curators) of all."""
    if project_id is None:
        if not is_global_curator(user):
            raise PermissionError("only curators may export every project's annotations; name one project")
        projects = list(AnnotationProject.objects.order_by("pk"))
        # A curator who also labels blind somewhere gets nothing of what those items still hide.
        blind = blind_items(user)
        return AnnotationScope(
            projects, Label.objects.exclude(Q(item__in=blind) & ~Q(annotator=user)).annotate(
                revealed=ExpressionWrapper(~Q(item__in=blind), output_field=BooleanField()),
                design_shown=ExpressionWrapper(~Q(item__in=blind), output_field=BooleanField())),
            GoldLabel.objects.exclude(item__in=blind),
            AuditLog.objects.filter(project_id__isnull=False).exclude(project_id__in=blind.values("project")),
            ItemComment.objects.exclude(item__in=blind), every_project=True,
        )
    project = AnnotationProject.objects.filter(pk=project_id).first()
    role = project_role(project=project, user=user) if project else None
    if role is None:
        raise AnnotationProject.DoesNotExist(f"no annotation project {project_id}")
    if role == Role.CURATOR:
        return AnnotationScope([project], Label.objects.filter(project=project),
                               GoldLabel.objects.filter(item__project=project), AuditLog.objects.filter(project_id=project.pk),
                               ItemComment.objects.filter(project=project))
    # The design and each item's inclusion probability (from the judge's uncertainty, for adaptive
    # sampling) are the curators' until a blind study closes.
    hidden = project.blind and project.status != AnnotationProject.Status.CLOSED
    labels = visible_labels(user).filter(project=project).annotate(
        design_shown=Value(not hidden, output_field=BooleanField()))
    return AnnotationScope([project], labels, visible_gold_labels(user).filter(item__project=project), None,
                           _member_comments(project, user, role))


def _member_comments(project: AnnotationProject, user, role: str) -> QuerySet[ItemComment]:
    """The comments a member who does not curate may read (``annotation.comments``: as
    ``item_revealed``): all in a project that is not blind or has closed; after a label, on the
    items they labelled, where the project reveals after each label; else none."""
    comments = ItemComment.objects.filter(project=project)
    if not project.blind or project.status == AnnotationProject.Status.CLOSED:
        return comments
    if role == Role.ANNOTATOR and project.reveal == AnnotationProject.Reveal.AFTER_LABEL:
        return comments.filter(item__labels__annotator=user)
    return comments.none()


def _time(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).isoformat() if value else None


def _task(item) -> str | None:
    return f"{item.task.protocol}/{item.task.key}" if item.task_id else None


def design_of(project: AnnotationProject) -> str:
    """How the project chose its items: the field its kind names (``design_field``: the sampling
    design of agreement projects on verdicts, the pair choice of pairwise ones), else empty; a
    sample of units of several verdicts names its unit ("uniform by group")."""
    field = kind_of(project).design_field
    design = getattr(project, field) or ""
    unit = project.sampling_unit if field == "sampling" else AnnotationProject.SamplingUnit.VERDICT
    return f"{design} by {unit}" if design and unit != AnnotationProject.SamplingUnit.VERDICT else design


def label_rows(labels: QuerySet[Label]) -> Iterator[dict]:
    rows = labels.select_related("project", "item", "item__task", "annotator").order_by("project_id", "created_at", "pk")
    for label in rows.iterator(chunk_size=CHUNK):
        item = label.item
        revealed = getattr(label, "revealed", True)  # blind mode: an own label on an item still blind
        shown = getattr(label, "design_shown", True)
        yield {
            "label_id": label.pk, "project_id": label.project_id, "project": label.project.name,
            "project_kind": label.project.kind, "item_id": item.pk,
            "item_status": status_shown(item.status, revealed=revealed), "target_kind": item.target_kind,
            "target_id": target_id_shown(kind=item.target_kind, target_id=item.target_id, revealed=revealed),
            "task": _task(item), "annotator": label.annotator.get_username(),
            "value": label_value_shown(label.value, revealed=revealed), "created_at": _time(label.created_at),
            "guidelines_version": label.guidelines_version, "seconds_taken": label.seconds_taken,
            "design": design_of(label.project) if shown else None,
            "inclusion_probability": item.inclusion_probability if shown else None,
        }


def gold_rows(gold_labels: QuerySet[GoldLabel]) -> Iterator[dict]:
    rows = gold_labels.select_related("item", "item__project", "item__task", "decided_by").order_by(
        "item__project_id", "decided_at", "pk")
    for gold in rows.iterator(chunk_size=CHUNK):
        item = gold.item
        yield {
            "item_id": item.pk, "project_id": item.project_id, "project": item.project.name,
            "target_kind": item.target_kind, "target_id": item.target_id, "task": _task(item), "value": gold.value,
            "note": gold.note, "decided_by": gold.decided_by.get_username(), "decided_at": _time(gold.decided_at),
        }


def audit_rows(events: QuerySet[AuditLog]) -> Iterator[dict]:
    names = dict(AnnotationProject.objects.values_list("pk", "name"))
    for event in events.select_related("actor").order_by("created_at", "pk").iterator(chunk_size=CHUNK):
        yield {
            "event_id": event.pk, "at": _time(event.created_at),
            "actor": event.actor.get_username() if event.actor_id else (event.actor_label or None),
            "action": event.action, "project_id": event.project_id, "project": names.get(event.project_id),
            "target_kind": audit_kind(event), "target_id": event.object_id,
            "before": event.before, "after": event.after,
        }


def comment_rows(comments: QuerySet[ItemComment]) -> Iterator[dict]:
    rows = comments.select_related("project", "author").prefetch_related("mentions").order_by(
        "project_id", "item_id", "created_at", "pk")
    for comment in rows.iterator(chunk_size=CHUNK):
        yield {
            "comment_id": comment.pk, "item_id": comment.item_id, "project_id": comment.project_id,
            "project": comment.project.name, "author": comment.author.get_username(), "text": comment.text,
            "mentions": sorted(user.get_username() for user in comment.mentions.all()),
            "created_at": _time(comment.created_at),
        }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, cls=DjangoJSONEncoder)


def csv_value(column: str, value: Any) -> Any:
    """One CSV cell's value: JSON columns as JSON text (``csv_writer`` defuses formula-like text)."""
    return _json(value) if column in JSON_COLUMNS or isinstance(value, (dict, list)) else value


class _Lines:
    """Rows → encoded lines, in chunks, for one output file."""

    def __init__(self, out: IO[bytes], columns: tuple[str, ...], fmt: str) -> None:
        self.out, self.columns, self.fmt = out, columns, fmt
        self.buffer = io.StringIO(newline="")
        self.writer = csv_writer(self.buffer, lineterminator="\r\n")  # RFC 4180, what spreadsheets expect
        if fmt == "csv":
            self.writer.writerow(self.columns)

    def add(self, row: dict) -> None:
        if self.fmt == "csv":
            self.writer.writerow([csv_value(c, row[c]) for c in self.columns])
        else:
            self.buffer.write(_json(row) + "\n")
        if self.buffer.tell() > 1 << 20:
            self.flush()

    def flush(self) -> None:
        self.out.write(self.buffer.getvalue().encode("utf-8"))
        self.buffer.seek(0)
        self.buffer.truncate()


def _with_value_columns(project: AnnotationProject, columns: tuple[str, ...], rows: Callable):
    """One project's labels also spread the value's fields its kind lists (``export_columns``) into
    columns of their own, ``value_<field>``, read from the value as shown (blind mode's hidden
    fields stay empty): a spreadsheet can sort and filter on them. Several projects mix kinds, so
    their export keeps the value as JSON alone."""
    fields = kind_of(project).export_columns

    def spread(queryset: QuerySet) -> Iterator[dict]:
        for row in rows(queryset):
            value = row["value"] if isinstance(row["value"], dict) else {}
            yield row | {f"value_{field}": value.get(field) for field in fields}

    return columns + tuple(f"value_{field}" for field in fields), spread


FILES = (("labels", LABEL_COLUMNS, label_rows, "labels"), ("gold_labels", GOLD_COLUMNS, gold_rows, "gold_labels"),
         ("audit_events", AUDIT_COLUMNS, audit_rows, "audit_events"),
         ("comments", COMMENT_COLUMNS, comment_rows, "comments"))


def write_annotations(
    scope: AnnotationScope, *, fmt: str, open_file: Callable[[str], Any], progress: Callable[[int, int], None],
) -> dict[str, int]:
    """Write the scope's labels, gold labels and audit rows as three files (``<name>.<fmt>``);
    ``open_file(name)`` is a context manager giving a binary file. Returns the row counts."""
    if fmt not in FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    sources: list[tuple[str, tuple[str, ...], Iterable[dict], QuerySet]] = []
    for name, columns, rows, attribute in FILES:
        queryset = getattr(scope, attribute)
        if queryset is not None:
            if name == "labels" and not scope.every_project:
                columns, rows = _with_value_columns(scope.projects[0], columns, rows)
            sources.append((name, columns, rows, queryset))
    total = sum(queryset.count() for *_, queryset in sources)
    done, counts = 0, {}
    progress(0, total)
    for name, columns, rows, queryset in sources:
        counts[name] = 0
        with open_file(f"{name}.{fmt}") as out:
            lines = _Lines(out, columns, fmt)
            for row in rows(queryset):
                lines.add(row)
                counts[name] += 1
                done += 1
                if done % CHUNK == 0:
                    progress(min(done, total), total)
            lines.flush()
    progress(done, max(total, done))
    return counts


# --- Hugging Face dataset configs ------------------------------------------------------------

LABEL_TYPES = {"label_id": "int64", "project_id": "int64", "item_id": "int64", "target_id": "int64",
               "guidelines_version": "int64", "seconds_taken": "float64", "value": "json",
               "inclusion_probability": "float64"}


def _dataset_columns(columns: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    # ``task`` is ``task_id`` there, as in every other config of the dataset.
    return tuple(("task_id" if c == "task" else c, LABEL_TYPES.get(c, "string")) for c in columns)


def _with_task_id(rows: Iterable[dict]) -> Iterator[dict]:
    for row in rows:
        yield {**row, "task_id": row["task"]}


def label_dataset_configs(scope: AnnotationScope, *, task_set: TaskSet) -> list[DatasetConfig]:
    """The ``labels`` and ``gold_labels`` configs of a task set's Hugging Face export: the
    scope's labels and gold labels of items of the set's tasks, with the same columns (and full
    identities) as the annotation export; ``annotation_export_scope`` decided what the scope holds."""
    tasks = task_set.tasks.values("pk")
    return [
        DatasetConfig("labels", "a label an annotator gave an item of an annotation project on a task of the set "
                      "(value is JSON text)", _dataset_columns(LABEL_COLUMNS),
                      _with_task_id(label_rows(scope.labels.filter(item__task__in=tasks)))),
        DatasetConfig("gold_labels", "a gold label a curator decided for an item on a task of the set",
                      _dataset_columns(GOLD_COLUMNS),
                      _with_task_id(gold_rows(scope.gold_labels.filter(item__task__in=tasks)))),
    ]
