"""Our native JSONL task format, version 1 (``docs/formats.md``): one self-contained task per line.

The field lists below are the format: the exporter writes exactly these fields and the
importer (``benchmark.importers.native``) reads exactly these. Output is canonical
(sorted keys, no spaces, lists in a stable order), so equal content gives equal bytes and
export → import → export is byte-identical.
"""

import json
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timezone
from typing import IO, Any

from django.contrib.contenttypes.models import ContentType
from django.db.models import Prefetch, Q

from core.models import AuditLog

from ..models import (
    GoldReference,
    RubricCriterion,
    SurveyCitation,
    Task,
    TaskPrompt,
)

FORMAT_VERSION = 1

PROVENANCE = ("origin", "proposed_by", "prompt_version", "review_status")
TASK_FIELDS = ("protocol", "key", "title", "status", "cutoff_date", "excluded_titles", "source", "extra")
SURVEY_FIELDS = (
    "kind", "title", "abstract", "authors", "venue", "year", "publication_date", "arxiv_id", "doi", "url",
    "categories", "outline", "content", "references", "stats", "full_text", "source", "external_id", "extra",
)
DISCIPLINE_FIELDS = ("taxonomy", "code", "name")
BIB_FIELDS = ("title", "authors", "year", "venue", "arxiv_id", "doi", "url", "abstract", "citation_count", "extra")
CITATION_FIELDS = ("key",)
PROMPT_FIELDS = ("level", "text", *PROVENANCE)
QUESTION_FIELDS = ("title", "text", *PROVENANCE)
GROUP_FIELDS = ("kind", "anchor", "name", "threshold", "clip_factor", "weight", *PROVENANCE)
ITEM_FIELDS = ("subgroup", "text", "reward", *PROVENANCE)
GOLD_FIELDS = ("important", "citation_quartile", *PROVENANCE)
NUGGET_FIELDS = ("text", "importance", *PROVENANCE)
CRITERION_FIELDS = ("component", "aspect", "name", "description", "example", "weight", "scale_max", *PROVENANCE)
HISTORY_FIELDS = ("action", "actor", "at", "before", "after", "note")

# Prompts have no position: they are listed in the order of their levels.
PROMPT_LEVEL_ORDER = {level: rank for rank, level in enumerate(TaskPrompt.Level.values)}

CHUNK_SIZE = 200


def canonical_json(value: Any) -> str:
    """The one serialization of the format: equal content, equal bytes."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def json_value(value: Any) -> Any:
    """A field value as the format writes it: dates and times in ISO 8601 (times in UTC)."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _values(obj, fields: Iterable[str]) -> dict[str, Any]:
    return {name: json_value(getattr(obj, name)) for name in fields}


def _ordered(rows: Iterable) -> list:
    return sorted(rows, key=lambda row: (row.position, row.pk))


class _History:
    """Revisions of every proposable item of one chunk, loaded in one query."""

    def __init__(self, rows: Iterable) -> None:
        wanted: dict[int, list[int]] = {}
        for row in rows:
            content_type = ContentType.objects.get_for_model(row, for_concrete_model=False)
            wanted.setdefault(content_type.pk, []).append(row.pk)
        self.by_target: dict[tuple[int, int], list[dict]] = {}
        if not wanted:
            return
        condition = Q()
        for content_type_id, ids in wanted.items():
            condition |= Q(content_type_id=content_type_id, object_id__in=ids)
        for revision in AuditLog.objects.filter(condition).select_related("actor").order_by("created_at", "id"):
            self.by_target.setdefault((revision.content_type_id, revision.object_id), []).append(
                {
                    "action": revision.action,
                    "actor": revision.actor.get_username() if revision.actor_id else revision.actor_label,
                    "at": json_value(revision.created_at),
                    "before": revision.before,
                    "after": revision.after,
                    "note": revision.note,
                }
            )

    def of(self, row) -> list[dict]:
        content_type = ContentType.objects.get_for_model(row, for_concrete_model=False)
        return self.by_target.get((content_type.pk, row.pk), [])


class _LineWriter:
    """Turns one prefetched chunk of tasks into lines."""

    def __init__(self, tasks: list[Task], *, include_history: bool) -> None:
        self.tasks = tasks
        discipline_ids = {t.survey.discipline_id for t in tasks if t.survey.discipline_id}
        self.discipline_criteria: dict[int, list[RubricCriterion]] = {}
        for criterion in RubricCriterion.objects.filter(task__isnull=True, discipline_id__in=discipline_ids):
            self.discipline_criteria.setdefault(criterion.discipline_id, []).append(criterion)
        self.history = _History(self._proposables()) if include_history else None

    def _proposables(self) -> Iterator:
        for criteria in self.discipline_criteria.values():
            yield from criteria
        for task in self.tasks:
            yield from task.prompts.all()
            yield from task.constraint_questions.all()
            for group in task.checklist_groups.all():
                yield group
                yield from group.items.all()
            yield from task.gold_references.all()
            yield from task.nuggets.all()
            yield from task.rubric_criteria.all()

    def proposable(self, row, fields: Iterable[str], **more) -> dict[str, Any]:
        data = _values(row, fields)
        data.update(more)
        if self.history is not None:
            data["history"] = self.history.of(row)
        return data

    def discipline(self, discipline, *, with_criteria: bool) -> dict[str, Any] | None:
        if discipline is None:
            return None
        data = _values(discipline, DISCIPLINE_FIELDS)
        if with_criteria:
            criteria = _ordered(self.discipline_criteria.get(discipline.pk, []))
            data["criteria"] = [self.proposable(c, CRITERION_FIELDS) for c in criteria]
        return data

    def line(self, task: Task) -> str:
        survey = task.survey
        questions = _ordered(task.constraint_questions.all())
        question_index = {q.pk: index for index, q in enumerate(questions)}
        data = _values(task, TASK_FIELDS)
        data["format_version"] = FORMAT_VERSION
        data["survey"] = {
            **_values(survey, SURVEY_FIELDS),
            "discipline": self.discipline(survey.discipline, with_criteria=True),
            "bibliography": [
                {**_values(c, CITATION_FIELDS), "bib": _values(c.bib_entry, BIB_FIELDS)}
                for c in _ordered(survey.citations.all())
            ],
        }
        data["prompts"] = [
            self.proposable(p, PROMPT_FIELDS)
            for p in sorted(task.prompts.all(), key=lambda p: (PROMPT_LEVEL_ORDER.get(p.level, 99), p.pk))
        ]
        data["constraint_questions"] = [self.proposable(q, QUESTION_FIELDS) for q in questions]
        data["checklist_groups"] = [
            self.proposable(
                group,
                GROUP_FIELDS,
                constraint_question=question_index.get(group.constraint_question_id),
                items=[self.proposable(item, ITEM_FIELDS) for item in _ordered(group.items.all())],
            )
            for group in _ordered(task.checklist_groups.all())
        ]
        data["gold_references"] = [
            self.proposable(g, GOLD_FIELDS, bib=_values(g.bib_entry, BIB_FIELDS))
            for g in _ordered(task.gold_references.all())
        ]
        data["nuggets"] = [self.proposable(n, NUGGET_FIELDS) for n in _ordered(task.nuggets.all())]
        data["rubric_criteria"] = [
            self.proposable(c, CRITERION_FIELDS, discipline=self.discipline(c.discipline, with_criteria=False))
            for c in _ordered(task.rubric_criteria.all())
        ]
        return canonical_json(data)


def _task_chunk(ids: list[int]) -> list[Task]:
    return list(
        Task.objects.filter(pk__in=ids)
        .select_related("survey", "survey__discipline")
        .prefetch_related(
            Prefetch("survey__citations", queryset=SurveyCitation.objects.select_related("bib_entry")),
            "prompts",
            "constraint_questions",
            "checklist_groups__items",
            Prefetch("gold_references", queryset=GoldReference.objects.select_related("bib_entry")),
            "nuggets",
            Prefetch("rubric_criteria", queryset=RubricCriterion.objects.select_related("discipline")),
        )
        .order_by("protocol", "key")
    )


def task_lines(tasks: Iterable[Task], *, include_history: bool = False, chunk_size: int = CHUNK_SIZE) -> Iterator[str]:
    """One canonical line (without its newline) per task, ordered by protocol and key.

    ``tasks`` is a queryset or any iterable of tasks. Queries are bounded per chunk of
    ``chunk_size`` tasks (about a dozen), whatever the number of items per task.
    """
    ids = tasks.values("pk") if hasattr(tasks, "values") else [t.pk for t in tasks]
    ordered = list(Task.objects.filter(pk__in=ids).order_by("protocol", "key").values_list("pk", flat=True))
    for start in range(0, len(ordered), chunk_size):
        chunk = _task_chunk(ordered[start : start + chunk_size])
        writer = _LineWriter(chunk, include_history=include_history)
        for task in chunk:
            yield writer.line(task)


def write_tasks_jsonl(tasks: Iterable[Task], out: IO[str], *, include_history: bool = False) -> int:
    """Stream the tasks to a text file; returns the number of lines written."""
    count = 0
    for line in task_lines(tasks, include_history=include_history):
        out.write(line + "\n")
        count += 1
    return count


def export_tasks_jsonl(tasks: Iterable[Task], *, include_history: bool = False) -> str:
    """The tasks as native JSONL text: one line per task, each ending in a newline."""
    return "".join(line + "\n" for line in task_lines(tasks, include_history=include_history))
