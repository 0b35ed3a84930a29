"""Import our native JSONL task format (``docs/formats.md``), written by ``benchmark.exporters.native``.

Every line is validated field by field (errors name the file, line and dotted field
path) and written in batches with bulk operations: the number of queries grows with
the number of batches, not with the number of tasks or items. Re-importing a file
updates what it describes instead of duplicating it:

* tasks match on (protocol, key); surveys on (source, external_id), else on arXiv id
  among surveys without an external id, else on the task's current survey when that
  has no identity either; disciplines on (taxonomy, code); bibliography entries are
  deduplicated by ``bib_entries_upsert`` (DOI, arXiv id, normalized title);
* a task's items match on their place in the list (the i-th checklist group of the
  task, the j-th item of that group, ...), prompts on their level and gold references
  on their bibliography entry. Matching rows are updated in place when they differ,
  rows the file no longer lists are deleted, new ones are created;
* every update and deletion of a stored row writes an ``import:update`` /
  ``import:delete`` revision (proposable items also get version + 1); creations do not
  (the item's provenance says where it came from);
* ``history`` entries in the file are added to the item's revisions unless an identical
  revision is already stored, so importing the same file twice adds nothing.

Everything runs in one transaction: an error anywhere leaves the database unchanged.
"""

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from hashlib import sha256
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from core.text import normalize_title

from ..exporters.native import (
    BIB_FIELDS,
    CITATION_FIELDS,
    CRITERION_FIELDS,
    DISCIPLINE_FIELDS,
    FORMAT_VERSION,
    GOLD_FIELDS,
    GROUP_FIELDS,
    HISTORY_FIELDS,
    ITEM_FIELDS,
    NUGGET_FIELDS,
    PROMPT_FIELDS,
    QUESTION_FIELDS,
    SURVEY_FIELDS,
    TASK_FIELDS,
    canonical_json,
    json_value,
)
from ..models import (
    BibEntry,
    ChecklistGroup,
    ChecklistItem,
    ConstraintQuestion,
    Discipline,
    GoldReference,
    Nugget,
    Proposable,
    Revision,
    RubricCriterion,
    Survey,
    SurveyCitation,
    Task,
    TaskPrompt,
    TimeStamped,
)
from ..services.bibliography import bib_entries_upsert
from ..services.history import snapshot
from .base import ImportFailed, ImportResult, Record, read_jsonl

ACTOR_LABEL = "import:native"
BATCH_TASKS = 100  # tasks written together ...
BATCH_ROWS = 20_000  # ... or fewer, when their items add up to this many rows
WRITE_BATCH = 1000  # rows per INSERT / UPDATE statement
UNRECORDED = {"id", "created_at", "updated_at", "version"}  # not worth a place in a deletion's revision

TASK_LISTS = ("prompts", "constraint_questions", "checklist_groups", "gold_references", "nuggets", "rubric_criteria")


# --------------------------------------------------------------------------- reading


@dataclass
class _Item:
    """One row as read: model field values by attname, and for proposable items their history."""

    values: dict[str, Any]
    line: int
    path: str
    history: list[dict] | None = None


@dataclass
class _Bib:
    values: dict[str, Any]
    line: int
    path: str
    entry: BibEntry | None = None  # resolved by bib_entries_upsert


@dataclass
class _Discipline:
    key: tuple[str, str]
    name: str
    criteria: list[_Item] | None  # None: the line leaves the discipline's criteria alone
    criteria_digest: str
    path: str


@dataclass
class _Survey:
    identity: tuple | None
    values: dict[str, Any]
    discipline: _Discipline | None
    bibliography: list[tuple[_Item, _Bib]] | None  # None: the line leaves the bibliography alone
    digest: str


@dataclass
class _Group:
    item: _Item
    question: int | None
    items: list[_Item]


@dataclass
class _TaskLine:
    line: int
    values: dict[str, Any]
    survey: _Survey
    prompts: list[_Item] = field(default_factory=list)
    questions: list[_Item] = field(default_factory=list)
    groups: list[_Group] = field(default_factory=list)
    gold: list[tuple[_Item, _Bib]] = field(default_factory=list)
    nuggets: list[_Item] = field(default_factory=list)
    criteria: list[tuple[_Item, _Discipline | None]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return self.values["protocol"], self.values["key"]

    @property
    def size(self) -> int:
        bibliography = self.survey.bibliography or []
        return len(bibliography) + len(self.gold) + len(self.nuggets) + sum(1 + len(g.items) for g in self.groups)

    @property
    def group_items(self) -> list[_Item]:
        return [group.item for group in self.groups]

    @property
    def criteria_items(self) -> list[_Item]:
        return [item for item, _ in self.criteria]

    def disciplines(self) -> Iterator[_Discipline]:
        if self.survey.discipline:
            yield self.survey.discipline
        yield from (d for _, d in self.criteria if d)

    def bibs(self) -> Iterator[_Bib]:
        yield from (bib for _, bib in self.survey.bibliography or [])
        yield from (bib for _, bib in self.gold)


def _objects(rec: Record, name: str) -> list[Record]:
    return [rec.child(value, f"{name}[{i}]") for i, value in enumerate(rec.get(name, list, default=[]))]


def _only(rec: Record, allowed: Iterable[str]) -> None:
    allowed = set(allowed)
    for name in rec.data:
        if name not in allowed:
            raise rec.fail("unknown field (docs/formats.md lists the fields of format version 1)", name)


def _bad_text(text: str) -> str:
    if "\x00" in text:
        return "contains a NUL character, which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate escape, which is not text"
    return ""


def _check_scalars(rec: Record) -> None:
    """Reject what PostgreSQL cannot store wherever it sits: NUL, lone surrogates, NaN and Infinity."""
    stack: list[tuple[Any, str]] = [(rec.data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for name, child in value.items():
                child_path = f"{path}.{name}" if path else name
                if problem := _bad_text(name):
                    raise rec.fail(f"field name {problem}", child_path)
                stack.append((child, child_path))
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(value))
        elif isinstance(value, str):
            if problem := _bad_text(value):
                raise rec.fail(problem, path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise rec.fail("NaN and Infinity are not numbers this format accepts", path)


@dataclass(frozen=True)
class _Rule:
    """How one model field is read: its JSON type, default and limits (length, range, choices)."""

    name: str
    attname: str
    kind: type  # str, int, float, bool, list, dict, or date (an ISO string in the file)
    default: Callable[[], Any]
    required: bool
    max_length: int | None = None
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    label: str = ""


@cache
def _rules(model: type[models.Model], names: tuple[str, ...]) -> tuple[_Rule, ...]:
    rules = []
    for name in names:
        f = model._meta.get_field(name)
        common = {"name": name, "attname": f.attname, "default": f.get_default,
                  "required": not (f.blank or f.null or f.has_default())}
        if isinstance(f, models.JSONField):
            rules.append(_Rule(kind=type(f.get_default()), **common))
        elif isinstance(f, (models.BooleanField, models.FloatField)):
            rules.append(_Rule(kind=bool if isinstance(f, models.BooleanField) else float, **common))
        elif isinstance(f, models.IntegerField):
            low, high = connection.ops.integer_field_range(f.get_internal_type())
            rules.append(_Rule(kind=int, low=low, high=high, **common))
        elif isinstance(f, models.DateField):
            rules.append(_Rule(kind=date, **common))
        else:
            choices = tuple(str(choice) for choice, _ in f.flatchoices) if f.choices else ()
            rules.append(_Rule(kind=str, max_length=f.max_length, choices=choices, label=str(f.verbose_name), **common))
    return tuple(rules)


def _clean_value(rec: Record, rule: _Rule) -> Any:
    """One field, checked against the model field it is stored in (type, length, range, choices)."""
    name = rule.name
    if rule.kind is date:
        value = rec.get(name, str, required=rule.required)
        try:
            return None if value in (None, "") else date.fromisoformat(value)
        except ValueError:
            raise rec.fail(f"expected a date as YYYY-MM-DD, got {value!r}", name) from None
    if rule.kind is not str:
        value = rec.get(name, rule.kind, required=rule.required, default=None)
        if value is None:
            return rule.default()
        if rule.kind is float:
            return float(value)
        too_low = rule.low is not None and value < rule.low
        if rule.kind is int and (too_low or rule.high is not None and value > rule.high):
            raise rec.fail(f"must be between {rule.low} and {rule.high}", name)
        return value
    value = rec.text(name, required=rule.required, default=None)
    if value is None:
        return rule.default()
    if rule.max_length and len(value) > rule.max_length:
        raise rec.fail(f"longer than {rule.max_length} characters ({len(value)})", name)
    if rule.choices and value not in rule.choices:
        raise rec.fail(f"unknown {rule.label} {value!r}; expected one of: {', '.join(rule.choices)}", name)
    return value


def _clean(rec: Record, model: type[models.Model], names: tuple[str, ...]) -> dict[str, Any]:
    return {rule.attname: _clean_value(rec, rule) for rule in _rules(model, names)}


def _require(rec: Record, ok: bool, name: str, message: str) -> None:
    """Checks the database would make (CheckConstraints), made first so the error names the line."""
    if not ok:
        raise rec.fail(message, name)


def _history(rec: Record) -> list[dict] | None:
    if rec.data.get("history") is None:
        return None
    entries = []
    for entry in _objects(rec, "history"):
        _only(entry, HISTORY_FIELDS)
        values = _clean(entry, Revision, ("action", "note"))
        values["actor"] = entry.get("actor", str, default="")
        _require(entry, len(values["actor"]) <= 200, "actor", "longer than 200 characters")
        at = entry.text("at", required=True)
        try:
            values["at"] = datetime.fromisoformat(at)
        except ValueError:
            raise entry.fail(f"expected an ISO 8601 date and time, got {at!r}", "at") from None
        _require(entry, timezone.is_aware(values["at"]), "at", "needs a UTC offset, e.g. +00:00")
        values["before"], values["after"] = entry.data.get("before"), entry.data.get("after")
        entries.append(values)
    return entries


def _item(rec: Record, model: type[Proposable], names: tuple[str, ...], *, more: tuple[str, ...] = ()) -> _Item:
    _only(rec, (*names, "history", *more))
    return _Item(_clean(rec, model, names), rec.line, getattr(rec, "prefix", ""), _history(rec))


def _bib(rec: Record) -> _Bib:
    _only(rec, BIB_FIELDS)
    return _Bib(_clean(rec, BibEntry, BIB_FIELDS), rec.line, getattr(rec, "prefix", ""))


def _discipline(rec: Record, *, with_criteria: bool) -> _Discipline:
    _only(rec, (*DISCIPLINE_FIELDS, "criteria") if with_criteria else DISCIPLINE_FIELDS)
    values = _clean(rec, Discipline, DISCIPLINE_FIELDS)
    criteria = None
    if with_criteria and rec.data.get("criteria") is not None:
        criteria = [_criterion(c) for c in _objects(rec, "criteria")]
    digest = sha256(canonical_json(rec.data.get("criteria")).encode()).hexdigest()
    key = (values["taxonomy"], values["code"])
    return _Discipline(key, values["name"], criteria, digest, getattr(rec, "prefix", ""))


def _criterion(rec: Record, *, more: tuple[str, ...] = ()) -> _Item:
    item = _item(rec, RubricCriterion, CRITERION_FIELDS, more=more)
    _require(rec, item.values["weight"] >= 0, "weight", "must not be negative")
    return item


def _survey(rec: Record) -> _Survey:
    _only(rec, (*SURVEY_FIELDS, "discipline", "bibliography"))
    values = _clean(rec, Survey, SURVEY_FIELDS)
    discipline = None
    if rec.data.get("discipline") is not None:
        discipline = _discipline(rec.child(rec.data["discipline"], "discipline"), with_criteria=True)
    bibliography = None
    if rec.data.get("bibliography") is not None:
        bibliography = []
        for citation in _objects(rec, "bibliography"):
            _only(citation, (*CITATION_FIELDS, "bib"))
            item = _Item(_clean(citation, SurveyCitation, CITATION_FIELDS), rec.line, citation.prefix)
            bibliography.append((item, _bib(citation.child(citation.get("bib", dict, required=True), "bib"))))
    if values["external_id"]:
        identity = ("external", values["source"], values["external_id"])
    elif values["arxiv_id"]:
        identity = ("arxiv", values["arxiv_id"])
    else:
        identity = None
    digest = sha256(canonical_json(rec.data).encode()).hexdigest()
    return _Survey(identity, values, discipline, bibliography, digest)


def _group(rec: Record, questions: int) -> _Group:
    item = _item(rec, ChecklistGroup, GROUP_FIELDS, more=("constraint_question", "items"))
    values = item.values
    _require(rec, values["threshold"] is None or values["threshold"] > 0, "threshold", "must be positive")
    _require(rec, values["clip_factor"] is None or values["clip_factor"] > 0, "clip_factor", "must be positive")
    _require(rec, values["weight"] >= 0, "weight", "must not be negative")
    question = rec.get("constraint_question", int)
    if question is not None:
        _require(rec, 0 <= question < questions, "constraint_question",
                 f"refers to constraint_questions[{question}], but the task has {questions}")
        _require(rec, values["kind"] == ChecklistGroup.Kind.CONSTRAINT, "constraint_question",
                 "only a group of kind 'constraint' answers a constraint question")
    return _Group(item, question, [_item(i, ChecklistItem, ITEM_FIELDS) for i in _objects(rec, "items")])


def _gold(rec: Record) -> tuple[_Item, _Bib]:
    item = _item(rec, GoldReference, GOLD_FIELDS, more=("bib",))
    quartile = item.values["citation_quartile"]
    _require(rec, quartile is None or 1 <= quartile <= 4, "citation_quartile", "must be 1, 2, 3 or 4")
    return item, _bib(rec.child(rec.get("bib", dict, required=True), "bib"))


def parse_line(data: dict, *, file: str, line: int) -> _TaskLine:
    """Validate one line completely; nothing is read from or written to the database."""
    rec = Record(data, file=file, line=line)
    _check_scalars(rec)
    _only(rec, ("format_version", *TASK_FIELDS, "survey", *TASK_LISTS))
    version = rec.get("format_version", int, required=True)
    _require(rec, version == FORMAT_VERSION, "format_version",
             f"unsupported format version {version}; this importer reads version {FORMAT_VERSION}")
    values = _clean(rec, Task, TASK_FIELDS)
    for i, title in enumerate(values["excluded_titles"]):
        _require(rec, isinstance(title, str), f"excluded_titles[{i}]", f"expected a string, got {type(title).__name__}")
    task = _TaskLine(line, values, _survey(rec.child(rec.get("survey", dict, required=True), "survey")))

    levels: dict[str, int] = {}
    for i, prompt in enumerate(_objects(rec, "prompts")):
        item = _item(prompt, TaskPrompt, PROMPT_FIELDS)
        level = item.values["level"]
        _require(prompt, level not in levels, "level", f"prompts[{levels.get(level)}] already has level {level!r}")
        levels[level] = i
        task.prompts.append(item)
    task.questions = [_item(q, ConstraintQuestion, QUESTION_FIELDS) for q in _objects(rec, "constraint_questions")]
    task.groups = [_group(g, len(task.questions)) for g in _objects(rec, "checklist_groups")]
    task.gold = [_gold(g) for g in _objects(rec, "gold_references")]
    task.nuggets = [_item(n, Nugget, NUGGET_FIELDS) for n in _objects(rec, "nuggets")]
    for criterion in _objects(rec, "rubric_criteria"):
        item = _criterion(criterion, more=("discipline",))
        scope = criterion.data.get("discipline")
        scope = _discipline(criterion.child(scope, "discipline"), with_criteria=False) if scope is not None else None
        task.criteria.append((item, scope))
    return task


class _FileChecks:
    """What must hold across the lines of one file: unique task keys, one version of each shared survey."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.tasks: dict[tuple[str, str], int] = {}
        self.surveys: dict[tuple, tuple[int, str]] = {}
        self.names: dict[tuple[str, str], tuple[int, str]] = {}
        self.criteria: dict[tuple[str, str], tuple[int, str]] = {}

    def fail(self, message: str, task: _TaskLine, path: str) -> ImportFailed:
        return ImportFailed(message, file=self.file, line=task.line, field=path)

    def check(self, task: _TaskLine) -> None:
        protocol, key = task.key
        if (first := self.tasks.setdefault(task.key, task.line)) != task.line:
            raise self.fail(f"task {protocol}/{key} is in the file twice: on line {first} and on line {task.line}",
                            task, "key")
        survey = task.survey
        if survey.identity:
            first, digest = self.surveys.setdefault(survey.identity, (task.line, survey.digest))
            if digest != survey.digest:
                raise self.fail(f"the same survey ({', '.join(survey.identity[1:])}) is on line {first} with other "
                                "content; a survey shared by several tasks must be identical on every line",
                                task, "survey")
        for discipline in task.disciplines():
            first, name = self.names.setdefault(discipline.key, (task.line, discipline.name))
            if name != discipline.name:
                raise self.fail(f"discipline {'/'.join(discipline.key)} is named {name!r} on line {first}",
                                task, f"{discipline.path}.name")
            if discipline.criteria is not None:
                first, digest = self.criteria.setdefault(discipline.key, (task.line, discipline.criteria_digest))
                if digest != discipline.criteria_digest:
                    raise self.fail(f"discipline {'/'.join(discipline.key)} has other criteria on line {first}",
                                    task, f"{discipline.path}.criteria")


# --------------------------------------------------------------------------- writing


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


def _placed(owner: str, owner_id: int, items: list[_Item]) -> list[tuple[tuple, dict, _Item]]:
    """Wanted rows keyed on their place in their owner's list; the place is their position."""
    return [((owner_id, i), {**item.values, owner: owner_id, "position": i}, item) for i, item in enumerate(items)]


class _Writer:
    """Writes validated batches: bulk creates and updates, deletions last, revisions at the end."""

    def __init__(self, *, file: str, result: ImportResult) -> None:
        self.file = file
        self.result = result
        self.now = timezone.now()
        self.revisions: list[Revision] = []
        self.restored: list[tuple[Revision, datetime]] = []
        self.history: list[tuple[models.Model, bool, list[dict]]] = []  # (row, existed before, entries)
        self.deletions: list[tuple[type[models.Model], str, list[models.Model]]] = []

    def revision(self, row: models.Model, action: str, before: dict | None, after: dict | None, note: str) -> None:
        content_type = ContentType.objects.get_for_model(row, for_concrete_model=False)
        self.revisions.append(Revision(content_type=content_type, object_id=row.pk, actor_label=ACTOR_LABEL,
                                       action=action, before=before, after=after, note=note))

    def sync(
        self,
        model: type[models.Model],
        kind: str,
        existing: dict[Hashable, models.Model],
        wanted: list[tuple[Hashable, dict[str, Any], _Item | None]],
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
                    self.revision(row, "import:update", before, self._state(row, content), self._note(item))
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

    def _note(self, item: _Item | None) -> str:
        return f"{self.file}, line {item.line}" if item else self.file

    @staticmethod
    def _state(row: models.Model, names: Iterable[str]) -> dict[str, Any]:
        """What a revision records: a proposable item's tracked fields, plus the fields named."""
        tracked = snapshot(row) if isinstance(row, Proposable) else {}
        return {**tracked, **{name: json_value(getattr(row, name)) for name in names if name not in tracked}}

    def write(self, tasks: list[_TaskLine]) -> None:
        disciplines = self.disciplines(tasks)
        self.bib_entries([bib for task in tasks for bib in task.bibs()])
        existing_tasks = self.existing_tasks(tasks)
        surveys = self.surveys(tasks, disciplines, existing_tasks)
        self.citations(tasks, surveys)
        wanted = []
        for task in tasks:
            values = {**task.values, "survey_id": surveys[task.line].pk}
            wanted.append((task.key, values, _Item(values, task.line, "")))
        rows = self.sync(Task, "task", existing_tasks, wanted, delete_rest=False)
        self.discipline_criteria(tasks, disciplines)
        self.children(tasks, {t.line: rows[t.key] for t in tasks}, disciplines)
        self.delete()
        self.save_revisions()

    def bib_entries(self, bibs: list[_Bib]) -> None:
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

    def disciplines(self, tasks: list[_TaskLine]) -> dict[tuple[str, str], Discipline]:
        wanted = {d.key: d.name for task in tasks for d in task.disciplines()}
        if not wanted:
            return {}
        stored = Discipline.objects.filter(taxonomy__in={t for t, _ in wanted}, code__in={c for _, c in wanted})
        existing = {(d.taxonomy, d.code): d for d in stored}
        values = [((t, c), {"taxonomy": t, "code": c, "name": name}, None) for (t, c), name in wanted.items()]
        return self.sync(Discipline, "discipline", existing, values, delete_rest=False)

    def existing_tasks(self, tasks: list[_TaskLine]) -> dict[tuple[str, str], Task]:
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
            wanted.setdefault(key, (key, values, _Item(values, task.line, "survey")))
            keys[task.line] = key
        rows = self.sync(Survey, "survey", existing, list(wanted.values()), delete_rest=False)
        return {line: rows[key] for line, key in keys.items()}

    def citations(self, tasks: list[_TaskLine], surveys: dict[int, Survey]) -> None:
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

    def by_entry(self, task: _TaskLine, owner: str, owner_id: int, listed: list[tuple[_Item, _Bib]]) -> list[tuple]:
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

    def discipline_criteria(self, tasks: list[_TaskLine], disciplines: dict) -> None:
        given = {d.key: d for task in tasks for d in task.disciplines() if d.criteria is not None}
        if not given:
            return
        ids = {disciplines[key].pk: discipline for key, discipline in given.items()}
        existing = _ranked(RubricCriterion.objects.filter(task__isnull=True, discipline_id__in=ids), "discipline_id")
        wanted = [row for pk, discipline in ids.items() for row in _placed("discipline_id", pk, discipline.criteria)]
        self.sync(RubricCriterion, "rubric_criterion", existing, wanted, delete_rest=True)

    def children(self, tasks: list[_TaskLine], rows: dict[int, Task], disciplines: dict) -> None:
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
                self.revision(row, "import:delete", self._state(row, names), None, self.file)
            try:
                model.objects.filter(pk__in=[row.pk for row in rows]).delete()
            except (models.ProtectedError, models.RestrictedError) as exc:
                raise ImportFailed(
                    f"cannot delete {len(rows)} {kind} row(s) the file no longer lists: {exc.args[0]}", file=self.file
                ) from None
        self.deletions = []

    def save_revisions(self) -> None:
        """Adds the file's history entries that are not stored yet, then every revision of the batch."""
        if self.history:
            self.restore_history()
        Revision.objects.bulk_create(self.revisions, batch_size=WRITE_BATCH)
        if self.restored:
            # auto_now_add overwrote created_at on insert; the file's times are the truth.
            for revision, at in self.restored:
                revision.created_at = at
            Revision.objects.bulk_update([r for r, _ in self.restored], ["created_at"], batch_size=WRITE_BATCH)
        self.revisions, self.restored, self.history = [], [], []

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
        for revision in Revision.objects.filter(condition).select_related("actor"):
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
                revision = Revision(
                    content_type=content_type, object_id=row.pk, actor=user, actor_label="" if user else entry["actor"],
                    action=entry["action"], before=entry["before"], after=entry["after"], note=entry["note"],
                )
                self.revisions.append(revision)
                self.restored.append((revision, entry["at"]))
                self.result.add("revision", "restored")

    @staticmethod
    def _signature(content_type: int, pk: int, action: str, actor: str, at: datetime, before, after, note) -> tuple:
        return (content_type, pk, action, actor, at, canonical_json(before), canonical_json(after), note)


def import_native(path: str | Path, *, result: ImportResult) -> None:
    """Import a native JSONL file (``docs/formats.md``) in one transaction, in batches of tasks."""
    path = Path(path)
    checks = _FileChecks(path.name)
    writer = _Writer(file=path.name, result=result)
    batch: list[_TaskLine] = []
    rows = 0
    with transaction.atomic():
        for line, data in read_jsonl(path):
            task = parse_line(data, file=path.name, line=line)
            checks.check(task)
            batch.append(task)
            rows += task.size
            if len(batch) >= BATCH_TASKS or rows >= BATCH_ROWS:
                writer.write(batch)
                batch, rows = [], 0
        if batch:
            writer.write(batch)
