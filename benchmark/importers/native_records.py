"""Reading a native JSONL line into what it describes (a task with its survey, items and bibliography).

Every line is validated completely before anything is written; :class:`FileChecks` holds what must
hold across the lines of one file.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from hashlib import sha256
from typing import Any

from django.utils import timezone

from core.audit_actions import AuditAction
from core.models import AuditLog

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
)
from ..models import (
    BibEntry, ChecklistGroup, ChecklistItem, ConstraintQuestion, Discipline, GoldReference, Nugget, Proposable,
    RubricCriterion, Survey, SurveyCitation, Task, TaskPrompt,
)
from .base import ImportFailed, Record
from .native_fields import check_scalars, clean, objects, only, require

TASK_LISTS = ("prompts", "constraint_questions", "checklist_groups", "gold_references", "nuggets", "rubric_criteria")


@dataclass
class ReadItem:
    """One row as read: model field values by attname, and for proposable items their history."""

    values: dict[str, Any]
    line: int
    path: str
    history: list[dict] | None = None


@dataclass
class ReadBib:
    values: dict[str, Any]
    line: int
    path: str
    entry: BibEntry | None = None  # resolved by bib_entries_upsert


@dataclass
class ReadDiscipline:
    key: tuple[str, str]
    name: str
    criteria: list[ReadItem] | None  # None: the line leaves the discipline's criteria alone
    criteria_digest: str
    path: str


@dataclass
class ReadSurvey:
    identity: tuple | None
    values: dict[str, Any]
    discipline: ReadDiscipline | None
    bibliography: list[tuple[ReadItem, ReadBib]] | None  # None: the line leaves the bibliography alone
    digest: str


@dataclass
class ReadGroup:
    item: ReadItem
    question: int | None
    items: list[ReadItem]


@dataclass
class TaskLine:
    line: int
    values: dict[str, Any]
    survey: ReadSurvey
    prompts: list[ReadItem] = field(default_factory=list)
    questions: list[ReadItem] = field(default_factory=list)
    groups: list[ReadGroup] = field(default_factory=list)
    gold: list[tuple[ReadItem, ReadBib]] = field(default_factory=list)
    nuggets: list[ReadItem] = field(default_factory=list)
    criteria: list[tuple[ReadItem, ReadDiscipline | None]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return self.values["protocol"], self.values["key"]

    @property
    def size(self) -> int:
        bibliography = self.survey.bibliography or []
        return len(bibliography) + len(self.gold) + len(self.nuggets) + sum(1 + len(g.items) for g in self.groups)

    @property
    def group_items(self) -> list[ReadItem]:
        return [group.item for group in self.groups]

    @property
    def criteria_items(self) -> list[ReadItem]:
        return [item for item, _ in self.criteria]

    def disciplines(self) -> Iterator[ReadDiscipline]:
        if self.survey.discipline:
            yield self.survey.discipline
        yield from (d for _, d in self.criteria if d)

    def bibs(self) -> Iterator[ReadBib]:
        yield from (bib for _, bib in self.survey.bibliography or [])
        yield from (bib for _, bib in self.gold)


def _history(rec: Record) -> list[dict] | None:
    if rec.data.get("history") is None:
        return None
    entries = []
    for entry in objects(rec, "history"):
        only(entry, HISTORY_FIELDS)
        values = clean(entry, AuditLog, ("action", "note"))
        try:  # the spellings before the enumeration too: files exported earlier
            values["action"] = AuditAction.parse(values["action"])
        except ValueError as exc:
            raise entry.fail(str(exc), "action") from None
        values["actor"] = entry.get("actor", str, default="")
        require(entry, len(values["actor"]) <= 200, "actor", "longer than 200 characters")
        at = entry.text("at", required=True)
        try:
            values["at"] = datetime.fromisoformat(at)
        except ValueError:
            raise entry.fail(f"expected an ISO 8601 date and time, got {at!r}", "at") from None
        require(entry, timezone.is_aware(values["at"]), "at", "needs a UTC offset, e.g. +00:00")
        values["before"], values["after"] = entry.data.get("before"), entry.data.get("after")
        entries.append(values)
    return entries


def _item(rec: Record, model: type[Proposable], names: tuple[str, ...], *, more: tuple[str, ...] = ()) -> ReadItem:
    only(rec, (*names, "history", *more))
    return ReadItem(clean(rec, model, names), rec.line, getattr(rec, "prefix", ""), _history(rec))


def _bib(rec: Record) -> ReadBib:
    only(rec, BIB_FIELDS)
    return ReadBib(clean(rec, BibEntry, BIB_FIELDS), rec.line, getattr(rec, "prefix", ""))


def _discipline(rec: Record, *, with_criteria: bool) -> ReadDiscipline:
    only(rec, (*DISCIPLINE_FIELDS, "criteria") if with_criteria else DISCIPLINE_FIELDS)
    values = clean(rec, Discipline, DISCIPLINE_FIELDS)
    criteria = None
    if with_criteria and rec.data.get("criteria") is not None:
        criteria = [_criterion(c) for c in objects(rec, "criteria")]
    digest = sha256(canonical_json(rec.data.get("criteria")).encode()).hexdigest()
    key = (values["taxonomy"], values["code"])
    return ReadDiscipline(key, values["name"], criteria, digest, getattr(rec, "prefix", ""))


def _criterion(rec: Record, *, more: tuple[str, ...] = ()) -> ReadItem:
    item = _item(rec, RubricCriterion, CRITERION_FIELDS, more=more)
    require(rec, item.values["weight"] >= 0, "weight", "must not be negative")
    return item


def _survey(rec: Record) -> ReadSurvey:
    only(rec, (*SURVEY_FIELDS, "discipline", "bibliography"))
    values = clean(rec, Survey, SURVEY_FIELDS)
    discipline = None
    if rec.data.get("discipline") is not None:
        discipline = _discipline(rec.child(rec.data["discipline"], "discipline"), with_criteria=True)
    bibliography = None
    if rec.data.get("bibliography") is not None:
        bibliography = []
        for citation in objects(rec, "bibliography"):
            only(citation, (*CITATION_FIELDS, "bib"))
            item = ReadItem(clean(citation, SurveyCitation, CITATION_FIELDS), rec.line, citation.prefix)
            bibliography.append((item, _bib(citation.child(citation.get("bib", dict, required=True), "bib"))))
    if values["external_id"]:
        identity = ("external", values["source"], values["external_id"])
    elif values["arxiv_id"]:
        identity = ("arxiv", values["arxiv_id"])
    else:
        identity = None
    digest = sha256(canonical_json(rec.data).encode()).hexdigest()
    return ReadSurvey(identity, values, discipline, bibliography, digest)


def _group(rec: Record, questions: int) -> ReadGroup:
    item = _item(rec, ChecklistGroup, GROUP_FIELDS, more=("constraint_question", "items"))
    values = item.values
    require(rec, values["threshold"] is None or values["threshold"] > 0, "threshold", "must be positive")
    require(rec, values["clip_factor"] is None or values["clip_factor"] > 0, "clip_factor", "must be positive")
    require(rec, values["weight"] >= 0, "weight", "must not be negative")
    question = rec.get("constraint_question", int)
    if question is not None:
        require(rec, 0 <= question < questions, "constraint_question",
                 f"refers to constraint_questions[{question}], but the task has {questions}")
        require(rec, values["kind"] == ChecklistGroup.Kind.CONSTRAINT, "constraint_question",
                 "only a group of kind 'constraint' answers a constraint question")
    return ReadGroup(item, question, [_item(i, ChecklistItem, ITEM_FIELDS) for i in objects(rec, "items")])


def _gold(rec: Record) -> tuple[ReadItem, ReadBib]:
    item = _item(rec, GoldReference, GOLD_FIELDS, more=("bib",))
    quartile = item.values["citation_quartile"]
    require(rec, quartile is None or 1 <= quartile <= 4, "citation_quartile", "must be 1, 2, 3 or 4")
    return item, _bib(rec.child(rec.get("bib", dict, required=True), "bib"))


def parse_line(data: dict, *, file: str, line: int) -> TaskLine:
    """Validate one line completely; nothing is read from or written to the database."""
    rec = Record(data, file=file, line=line)
    check_scalars(rec)
    only(rec, ("format_version", *TASK_FIELDS, "survey", *TASK_LISTS))
    version = rec.get("format_version", int, required=True)
    require(rec, version == FORMAT_VERSION, "format_version",
             f"unsupported format version {version}; this importer reads version {FORMAT_VERSION}")
    values = clean(rec, Task, TASK_FIELDS)
    for i, title in enumerate(values["excluded_titles"]):
        require(rec, isinstance(title, str), f"excluded_titles[{i}]", f"expected a string, got {type(title).__name__}")
    task = TaskLine(line, values, _survey(rec.child(rec.get("survey", dict, required=True), "survey")))

    levels: dict[str, int] = {}
    for i, prompt in enumerate(objects(rec, "prompts")):
        item = _item(prompt, TaskPrompt, PROMPT_FIELDS)
        level = item.values["level"]
        require(prompt, level not in levels, "level", f"prompts[{levels.get(level)}] already has level {level!r}")
        levels[level] = i
        task.prompts.append(item)
    task.questions = [_item(q, ConstraintQuestion, QUESTION_FIELDS) for q in objects(rec, "constraint_questions")]
    task.groups = [_group(g, len(task.questions)) for g in objects(rec, "checklist_groups")]
    task.gold = [_gold(g) for g in objects(rec, "gold_references")]
    task.nuggets = [_item(n, Nugget, NUGGET_FIELDS) for n in objects(rec, "nuggets")]
    for criterion in objects(rec, "rubric_criteria"):
        item = _criterion(criterion, more=("discipline",))
        scope = criterion.data.get("discipline")
        scope = _discipline(criterion.child(scope, "discipline"), with_criteria=False) if scope is not None else None
        task.criteria.append((item, scope))
    return task


class FileChecks:
    """What must hold across the lines of one file: unique task keys, one version of each shared survey."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.tasks: dict[tuple[str, str], int] = {}
        self.surveys: dict[tuple, tuple[int, str]] = {}
        self.names: dict[tuple[str, str], tuple[int, str]] = {}
        self.criteria: dict[tuple[str, str], tuple[int, str]] = {}

    def fail(self, message: str, task: TaskLine, path: str) -> ImportFailed:
        return ImportFailed(message, file=self.file, line=task.line, field=path)

    def check(self, task: TaskLine) -> None:
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
