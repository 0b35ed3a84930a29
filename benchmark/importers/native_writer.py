"""Writing validated native lines in batches: bulk creates and updates, deletions, revisions.

The number of queries grows with the number of batches, not with the number of tasks or items.
"""

from collections import Counter
from collections.abc import Hashable, Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.audit import audit_log_rows
from core.audit_actions import AuditAction
from core.models import AuditLog
from core.text import normalize_title

from ..exporters.native import canonical_json, json_value
from ..models import (
    ChecklistGroup, ChecklistItem, ConstraintQuestion, Discipline, GoldReference, Nugget, Proposable,
    RubricCriterion, Survey, SurveyCitation, Task, TaskPrompt, TimeStamped,
)
from ..services.bibliography import bib_entries_upsert
from ..services.history import snapshot
from .base import ImportFailed, ImportResult
from .native_records import ReadBib, ReadItem, TaskLine

ACTOR_LABEL = "import:native"
WRITE_BATCH = 1000  # rows per INSERT / UPDATE statement
UNRECORDED = {"id", "created_at", "updated_at", "version"}  # not worth a place in a deletion's revision


def _ranked(rows: Iterable[models.Model], owner: str) -> dict[tuple[int, int], models.Model]:
    """Stored rows keyed by (owner id, place in the owner's list ordered by position, then id)."""
    by_owner: dict[int, list] = {}
    for row in rows:
        by_owner.setdefault(getattr(row, owner), []).append(row)
    return {
        (owner_id, rank): row
        for owner_id, owned in by_owner.items()
        for rank, row in enumerate(sorted(owned, key=lambda r: (r.position, r.pk)))
    }


def _placed(owner: str, owner_id: int, items: list[ReadItem]) -> list[tuple[tuple, dict, ReadItem]]:
    """Wanted rows keyed on their place in their owner's list; the place is their position."""
    return [((owner_id, i), {**item.values, owner: owner_id, "position": i}, item) for i, item in enumerate(items)]


class Writer:
    """Writes validated batches: bulk creates and updates, deletions last, revisions at the end."""

    def __init__(self, *, file: str, result: ImportResult) -> None:
        self.file = file
        self.result = result
        self.now = timezone.now()
        self.revisions: list[dict] = []  # audit rows (``core.audit.audit_log_rows``)
        self.history: list[tuple[models.Model, bool, list[dict]]] = []  # (row, existed before, entries)
        self.deletions: list[tuple[type[models.Model], str, list[models.Model]]] = []

    def revision(self, row: models.Model, action: AuditAction, before: dict | None, after: dict | None,
                 note: str) -> None:
        self.revisions.append(dict(target_model=type(row), target_id=row.pk, actor_label=ACTOR_LABEL, action=action,
                                   before=before, after=after, note=note))

    def sync(
        self,
        model: type[models.Model],
        kind: str,
        existing: dict[Hashable, models.Model],
        wanted: list[tuple[Hashable, dict[str, Any], ReadItem | None]],
        *,
        delete_rest: bool,
    ) -> dict[Hashable, models.Model]:
        """Make the stored rows match ``wanted`` (key, values, item as read); returns the row of each key.

        Rows in ``existing`` not wanted are deleted at the end of the batch when ``delete_rest``.
        A change of ``position`` alone only reorders: no new version, no revision.
        """
        proposable = issubclass(model, Proposable)
        stamped = issubclass(model, TimeStamped)
        rows: dict[Hashable, models.Model] = {}
        to_create, to_update, fields = [], {}, {"updated_at"} if stamped else set()
        counts: Counter[str] = Counter()
        for key, values, item in wanted:
            row = existing.pop(key, None)
            existed = row is not None
            if row is None:
                row = model(**values)
                to_create.append(row)
                counts["created"] += 1
            else:
                changed = [name for name, value in values.items() if getattr(row, name) != value]
                content = [name for name in changed if name != "position"]
                before = self._state(row, content) if content else None
                for name in changed:
                    setattr(row, name, values[name])
                if changed:
                    if stamped:
                        row.updated_at = self.now
                    to_update[row.pk] = row
                    fields.update(changed)
                if content:
                    if proposable:
                        row.version += 1
                        fields.add("version")
                    self.revision(row, AuditAction.IMPORT_UPDATE, before, self._state(row, content), self._note(item))
                counts["updated" if content else "reordered" if changed else "unchanged"] += 1
            if item is not None and item.history is not None:
                self.history.append((row, existed, item.history))
            rows[key] = row
        model.objects.bulk_create(to_create, batch_size=WRITE_BATCH)
        if to_update:
            model.objects.bulk_update(list(to_update.values()), sorted(fields), batch_size=WRITE_BATCH)
        stale = list({row.pk: row for row in existing.values()}.values()) if delete_rest else []
        if stale:
            self.deletions.append((model, kind, stale))
            counts["deleted"] += len(stale)
        for outcome, n in counts.items():
            self.result.add(kind, outcome, n)
        return rows

    def _note(self, item: ReadItem | None) -> str:
        return f"{self.file}, line {item.line}" if item else self.file

    @staticmethod
    def _state(row: models.Model, names: Iterable[str]) -> dict[str, Any]:
        """What a revision records: a proposable item's tracked fields, plus the fields named."""
        tracked = snapshot(row) if isinstance(row, Proposable) else {}
        return {**tracked, **{name: json_value(getattr(row, name)) for name in names if name not in tracked}}

    def write(self, tasks: list[TaskLine]) -> None:
        disciplines = self.disciplines(tasks)
        self.bib_entries([bib for task in tasks for bib in task.bibs()])
        existing_tasks = self.existing_tasks(tasks)
        surveys = self.surveys(tasks, disciplines, existing_tasks)
        self.citations(tasks, surveys)
        wanted = []
        for task in tasks:
            values = {**task.values, "survey_id": surveys[task.line].pk}
            wanted.append((task.key, values, ReadItem(values, task.line, "")))
        rows = self.sync(Task, "task", existing_tasks, wanted, delete_rest=False)
        self.discipline_criteria(tasks, disciplines)
        self.children(tasks, {t.line: rows[t.key] for t in tasks}, disciplines)
        self.delete()
        self.save_revisions()

    def bib_entries(self, bibs: list[ReadBib]) -> None:
        try:
            entries = bib_entries_upsert([bib.values for bib in bibs])
        except ValueError:
            # It checks every title before writing anything; only now pay for finding the culprit.
            for bib in bibs:
                if not normalize_title(bib.values["title"]):
                    raise ImportFailed("has no letters or digits to match on", file=self.file, line=bib.line,
                                       field=f"{bib.path}.title") from None
            raise
        for bib, entry in zip(bibs, entries):
            bib.entry = entry

    def disciplines(self, tasks: list[TaskLine]) -> dict[tuple[str, str], Discipline]:
        wanted = {d.key: d.name for task in tasks for d in task.disciplines()}
        if not wanted:
            return {}
        stored = Discipline.objects.filter(taxonomy__in={t for t, _ in wanted}, code__in={c for _, c in wanted})
        existing = {(d.taxonomy, d.code): d for d in stored}
        values = [((t, c), {"taxonomy": t, "code": c, "name": name}, None) for (t, c), name in wanted.items()]
        return self.sync(Discipline, "discipline", existing, values, delete_rest=False)

    def existing_tasks(self, tasks: list[TaskLine]) -> dict[tuple[str, str], Task]:
        keys = {t.key for t in tasks}
        stored = Task.objects.filter(protocol__in={p for p, _ in keys}, key__in={k for _, k in keys})
        return {(t.protocol, t.key): t for t in stored.select_related("survey") if (t.protocol, t.key) in keys}

    def surveys(self, tasks, disciplines, existing_tasks) -> dict[int, Survey]:
        """The survey row of each line (by line number), created or updated."""
        identities = [t.survey.identity for t in tasks if t.survey.identity]
        existing: dict[Hashable, Survey] = {}
        condition = Q(external_id__in={i[2] for i in identities if i[0] == "external"})
        condition |= Q(external_id="", arxiv_id__in={i[1] for i in identities if i[0] == "arxiv"})
        if identities:
            for survey in Survey.objects.filter(condition).order_by("id"):
                if survey.external_id:
                    existing.setdefault(("external", survey.source, survey.external_id), survey)
                else:
                    existing.setdefault(("arxiv", survey.arxiv_id), survey)
        wanted, keys = {}, {}
        for task in tasks:
            key = task.survey.identity or ("task", *task.key)
            stored = existing_tasks.get(task.key)
            if key[0] == "task" and stored and not (stored.survey.external_id or stored.survey.arxiv_id):
                existing[key] = stored.survey
            discipline = disciplines[task.survey.discipline.key].pk if task.survey.discipline else None
            values = {**task.survey.values, "discipline_id": discipline}
            wanted.setdefault(key, (key, values, ReadItem(values, task.line, "survey")))
            keys[task.line] = key
        rows = self.sync(Survey, "survey", existing, list(wanted.values()), delete_rest=False)
        return {line: rows[key] for line, key in keys.items()}

    def citations(self, tasks: list[TaskLine], surveys: dict[int, Survey]) -> None:
        by_survey = {surveys[t.line].pk: (t, t.survey.bibliography) for t in tasks if t.survey.bibliography is not None}
        if not by_survey:
            return
        existing = {(c.survey_id, c.bib_entry_id): c for c in SurveyCitation.objects.filter(survey_id__in=by_survey)}
        wanted = [
            row
            for survey_id, (task, bibliography) in by_survey.items()
            for row in self.by_entry(task, "survey_id", survey_id, bibliography)
        ]
        self.sync(SurveyCitation, "survey_citation", existing, wanted, delete_rest=True)

    def by_entry(self, task: TaskLine, owner: str, owner_id: int,
                 listed: list[tuple[ReadItem, ReadBib]]) -> list[tuple]:
        """Wanted rows keyed on their bibliography entry, which an owner may list only once."""
        seen: dict[int, str] = {}
        wanted = []
        for position, (item, bib) in enumerate(listed):
            entry = bib.entry.pk
            if (first := seen.setdefault(entry, item.path)) != item.path:
                raise ImportFailed(f"the same publication as {first} (same DOI, arXiv id or normalized title)",
                                   file=self.file, line=task.line, field=item.path)
            values = {**item.values, owner: owner_id, "bib_entry_id": entry, "position": position}
            wanted.append(((owner_id, entry), values, item))
        return wanted

    def discipline_criteria(self, tasks: list[TaskLine], disciplines: dict) -> None:
        given = {d.key: d for task in tasks for d in task.disciplines() if d.criteria is not None}
        if not given:
            return
        ids = {disciplines[key].pk: discipline for key, discipline in given.items()}
        existing = _ranked(RubricCriterion.objects.filter(task__isnull=True, discipline_id__in=ids), "discipline_id")
        wanted = [row for pk, discipline in ids.items() for row in _placed("discipline_id", pk, discipline.criteria)]
        self.sync(RubricCriterion, "rubric_criterion", existing, wanted, delete_rest=True)

    def children(self, tasks: list[TaskLine], rows: dict[int, Task], disciplines: dict) -> None:
        ids = [row.pk for row in rows.values()]

        def by_place(model, kind: str, attr: str) -> dict:
            existing = _ranked(model.objects.filter(task_id__in=ids), "task_id")
            wanted = [row for t in tasks for row in _placed("task_id", rows[t.line].pk, getattr(t, attr))]
            return self.sync(model, kind, existing, wanted, delete_rest=True)

        prompts = {(p.task_id, p.level): p for p in TaskPrompt.objects.filter(task_id__in=ids)}
        wanted = [
            ((rows[t.line].pk, item.values["level"]), {**item.values, "task_id": rows[t.line].pk}, item)
            for t in tasks
            for item in t.prompts
        ]
        self.sync(TaskPrompt, "task_prompt", prompts, wanted, delete_rest=True)

        questions = by_place(ConstraintQuestion, "constraint_question", "questions")
        for task in tasks:
            pk = rows[task.line].pk
            for group in task.groups:
                question = questions[(pk, group.question)].pk if group.question is not None else None
                group.item.values["constraint_question_id"] = question
        groups = by_place(ChecklistGroup, "checklist_group", "group_items")
        wanted = [
            row
            for t in tasks
            for i, group in enumerate(t.groups)
            for row in _placed("group_id", groups[(rows[t.line].pk, i)].pk, group.items)
        ]
        existing = _ranked(ChecklistItem.objects.filter(group__task_id__in=ids), "group_id")
        self.sync(ChecklistItem, "checklist_item", existing, wanted, delete_rest=True)

        existing = {(g.task_id, g.bib_entry_id): g for g in GoldReference.objects.filter(task_id__in=ids)}
        wanted = [row for t in tasks for row in self.by_entry(t, "task_id", rows[t.line].pk, t.gold)]
        self.sync(GoldReference, "gold_reference", existing, wanted, delete_rest=True)

        by_place(Nugget, "nugget", "nuggets")
        for task in tasks:  # a task-scoped criterion may name a discipline too
            for item, scope in task.criteria:
                item.values["discipline_id"] = disciplines[scope.key].pk if scope else None
        by_place(RubricCriterion, "rubric_criterion", "criteria_items")

    def delete(self) -> None:
        """Deletes what the file no longer lists, items before the groups and questions that own them."""
        for model, kind, rows in reversed(self.deletions):
            names = [f.attname for f in model._meta.concrete_fields if f.attname not in UNRECORDED]
            for row in rows:
                self.revision(row, AuditAction.IMPORT_REMOVE, self._state(row, names), None, self.file)
            try:
                model.objects.filter(pk__in=[row.pk for row in rows]).delete()
            except (models.ProtectedError, models.RestrictedError) as exc:
                raise ImportFailed(
                    f"cannot delete {len(rows)} {kind} row(s) the file no longer lists: {exc.args[0]}", file=self.file
                ) from None
        self.deletions = []

    def save_revisions(self) -> None:
        """Adds the file's history entries that are not stored yet (at the times the file gives),
        then every revision of the batch, ``WRITE_BATCH`` rows per INSERT."""
        if self.history:
            self.restore_history()
        for start in range(0, len(self.revisions), WRITE_BATCH):
            audit_log_rows(self.revisions[start:start + WRITE_BATCH])
        self.revisions, self.history = [], []

    def restore_history(self) -> None:
        stored: Counter[tuple] = Counter()
        targets: dict[int, list[int]] = {}
        for row, existed, _ in self.history:
            if existed:
                content_type = ContentType.objects.get_for_model(row, for_concrete_model=False)
                targets.setdefault(content_type.pk, []).append(row.pk)
        condition = Q(pk__in=[])
        for content_type_id, ids in targets.items():
            condition |= Q(content_type_id=content_type_id, object_id__in=ids)
        for revision in AuditLog.objects.filter(condition).select_related("actor"):
            actor = revision.actor.get_username() if revision.actor_id else revision.actor_label
            stored[self._signature(revision.content_type_id, revision.object_id, revision.action, actor,
                                   revision.created_at, revision.before, revision.after, revision.note)] += 1
        names = {entry["actor"] for _, _, entries in self.history for entry in entries if entry["actor"]}
        User = get_user_model()
        users = {}
        if names:
            users = {u.get_username(): u for u in User.objects.filter(**{f"{User.USERNAME_FIELD}__in": names})}
        for row, _, entries in self.history:
            content_type = ContentType.objects.get_for_model(row, for_concrete_model=False)
            for entry in entries:
                signature = self._signature(content_type.pk, row.pk, entry["action"], entry["actor"], entry["at"],
                                            entry["before"], entry["after"], entry["note"])
                if stored[signature]:
                    stored[signature] -= 1
                    continue
                user = users.get(entry["actor"])
                self.revisions.append(dict(
                    target_model=type(row), target_id=row.pk, actor=user, actor_label="" if user else entry["actor"],
                    action=entry["action"], before=entry["before"], after=entry["after"], note=entry["note"],
                    at=entry["at"],
                ))
                self.result.add("revision", "restored")

    @staticmethod
    def _signature(content_type: int, pk: int, action: str, actor: str, at: datetime, before, after, note) -> tuple:
        return (content_type, pk, action, actor, at, canonical_json(before), canonical_json(after), note)
