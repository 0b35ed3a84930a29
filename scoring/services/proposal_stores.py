"""Storing what a proposal stage's judge answered (``scoring.services.proposals``): one writer per
unit saves the proposed rows with their audit rows, and one store function per stage decides
which rows to add or revise. Nothing an expert reviewed, nor any imported or human row, is
overwritten."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Max

from benchmark.models import (
    ChecklistGroup,
    ChecklistItem,
    ConstraintQuestion,
    Nugget,
    Origin,
    ReviewStatus,
    RubricCriterion,
    Task,
    TaskPrompt,
)
from benchmark.services.history import proposable_update, snapshot
from core.audit import audit_log_record
from core.audit_actions import AuditAction
from core.text import normalize_title
from scoring.judges.lexical import content_words
from scoring.models import JudgeConfig, LLMCall

NEAR_IDENTICAL = 0.6  # Jaccard overlap of content words above which two rubric criteria are one
REPORTBENCH_LEVELS = (TaskPrompt.Level.SENTENCE, TaskPrompt.Level.PARAGRAPH, TaskPrompt.Level.DETAIL)
# Kinds as the summary counts them (the review flow's names).
KIND_NAMES = {TaskPrompt: "prompt", ConstraintQuestion: "constraint_question", ChecklistGroup: "checklist_group",
              ChecklistItem: "checklist_item", Nugget: "nugget", RubricCriterion: "rubric_criterion"}


class UnitFailed(Exception):
    """This stage cannot run, or its answer cannot be stored, for this task: the reason says why."""


def is_revisable(row: models.Model, config: JudgeConfig) -> bool:
    """A row the judge may still revise: its own unreviewed proposal."""
    return (row.origin == Origin.LLM and row.review_status == ReviewStatus.PROPOSED
            and row.proposed_by == proposer_name(config))


def proposer_name(config: JudgeConfig) -> str:
    return f"judge:{config.name}"


def _norm(text: str) -> str:
    return normalize_title(text or "")


def _text(value, where: str) -> str:
    text = str(value or "").strip()
    if not text:
        raise UnitFailed(f"{where} is empty")
    return text


@dataclass
class ProposalWriter:
    """Saves proposed rows of one unit with their revisions, and counts them."""

    judge_config: JudgeConfig
    actor: object
    call: LLMCall
    stage: str
    model: str
    created: Counter = field(default_factory=Counter)
    revised: int = 0

    @property
    def note(self) -> str:
        return (f"proposed by judge configuration {self.judge_config.name!r} ({self.model}), stage {self.stage}, "
                f"LLM call #{self.call.pk}")

    def add(self, row, where: str):
        row.origin, row.review_status = Origin.LLM, ReviewStatus.PROPOSED
        row.proposed_by, row.prompt_version = proposer_name(self.judge_config), self.judge_config.prompt_version
        try:
            row.full_clean(exclude=["task", "group", "discipline", "constraint_question"], validate_unique=False)
        except ValidationError as exc:
            problems = "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in exc.message_dict.items())
            raise UnitFailed(f"{where}: {problems}") from None
        row.save()
        audit_log_record(target=row, action=AuditAction.PROPOSABLE_PROPOSE, actor=self._user, actor_label=self.model, after=snapshot(row),
                         note=self.note)
        self.created[KIND_NAMES[type(row)]] += 1
        return row

    def revise(self, row, changes: dict) -> None:
        if all(getattr(row, k) == v for k, v in changes.items()):
            return
        proposable_update(obj=row, changes=changes, expected_version=row.version, actor=self._user,
                          actor_label=self.model, action=AuditAction.PROPOSABLE_REVISE, note=self.note)
        self.revised += 1

    @property
    def _user(self):
        return self.actor if getattr(self.actor, "is_authenticated", False) else None


def _next_position(rows) -> int:
    last = rows.aggregate(last=Max("position"))["last"]
    return 0 if last is None else last + 1


def _store_prompts(task: Task, texts: dict[str, str], writer: ProposalWriter) -> None:
    taken = {p.level: p for p in TaskPrompt.objects.select_for_update().filter(task=task, level__in=list(texts))}
    for level, text in texts.items():
        current = taken.get(level)
        if current is None:
            writer.add(TaskPrompt(task=task, level=level, text=text), f"{level} prompt")
        elif is_revisable(current, writer.judge_config):
            writer.revise(current, {"text": text})


def store_question(task: Task, data: dict, writer: ProposalWriter) -> None:
    _store_prompts(task, {TaskPrompt.Level.GENERAL: _text(data["question"], "the question")}, writer)


def store_reportbench_prompts(task: Task, data: dict, writer: ProposalWriter) -> None:
    cutoff = task.cutoff_date or task.survey.publication_date
    texts = {}
    for level in REPORTBENCH_LEVELS:
        text = _text(data[level], f"the {level} prompt")
        if str(cutoff.year) not in text:  # §2.1.2: every prompt states the cut-off date
            raise UnitFailed(f"the {level} prompt does not state the cut-off date ({cutoff.isoformat()})")
        texts[level] = text
    _store_prompts(task, texts, writer)


def _add_items(group: ChecklistGroup, texts: Iterable[str], writer: ProposalWriter, where: str) -> None:
    """Add the items the group does not have yet (by normalized text), after its last one."""
    known = {_norm(t) for t in group.items.values_list("text", flat=True)} if group.pk else set()
    position = _next_position(group.items.all()) if group.pk else 0
    for i, value in enumerate(texts):
        text = _text(value, f"{where} item {i + 1}")
        if _norm(text) in known:
            continue
        known.add(_norm(text))
        writer.add(ChecklistItem(group=group, text=text, position=position), f"{where} item {i + 1}")
        position += 1


def _group_for(task: Task, kind: str, name: str, writer: ProposalWriter, where: str, **fields) -> ChecklistGroup:
    """The task's group of this kind with the same normalized name, or a new proposed one."""
    for group in ChecklistGroup.objects.filter(task=task, kind=kind):
        if _norm(group.name) == _norm(name):
            return group
    anchor = ChecklistGroup.Anchor.TOPIC if kind == ChecklistGroup.Kind.GENERAL else ChecklistGroup.Anchor.STRUCTURE
    position = _next_position(ChecklistGroup.objects.filter(task=task))
    return writer.add(ChecklistGroup(task=task, kind=kind, anchor=anchor, name=name, position=position, **fields),
                      where)


def store_topic_groups(task: Task, data: dict, writer: ProposalWriter) -> None:
    for g, entry in enumerate(data["groups"]):
        where = f"group {g + 1}"
        name = _text(entry["name"], f"{where} name")
        group = _group_for(task, ChecklistGroup.Kind.GENERAL, name, writer, where)
        _add_items(group, entry["items"], writer, where)


def store_constraint_pairs(task: Task, data: dict, writer: ProposalWriter) -> None:
    for p, entry in enumerate(data["pairs"]):
        where = f"pair {p + 1}"
        anchor = _text(entry["anchor"], f"{where} anchor")
        question = _text(entry["question"], f"{where} question")
        existing = next((g for g in ChecklistGroup.objects.filter(task=task, kind=ChecklistGroup.Kind.CONSTRAINT)
                         if _norm(g.name) == _norm(anchor)), None)
        if existing is None:
            position = _next_position(ConstraintQuestion.objects.filter(task=task))
            cq = writer.add(ConstraintQuestion(task=task, title=anchor, text=question, position=position),
                            f"{where} question")
            existing = _group_for(task, ChecklistGroup.Kind.CONSTRAINT, anchor, writer, where, constraint_question=cq)
        _add_items(existing, entry["items"], writer, where)


def store_nuggets(task: Task, data: dict, writer: ProposalWriter) -> None:
    known = {_norm(t) for t in Nugget.objects.filter(task=task).values_list("text", flat=True)}
    position = _next_position(Nugget.objects.filter(task=task))
    for i, entry in enumerate(data["nuggets"]):
        text = _text(entry["text"], f"nugget {i + 1}")
        if _norm(text) in known:
            continue
        known.add(_norm(text))
        writer.add(Nugget(task=task, text=text, importance=entry["importance"], position=position), f"nugget {i + 1}")
        position += 1


def _criterion_words(name: str, description: str) -> set[str]:
    return content_words(f"{name} {description}")


def near_identical(a: dict, b: dict) -> bool:
    """Two criteria (dicts with component, name, description) that say the same thing."""
    if a["component"] != b["component"]:
        return False
    if _norm(a["name"]) == _norm(b["name"]):
        return True
    wa, wb = _criterion_words(a["name"], a["description"]), _criterion_words(b["name"], b["description"])
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= NEAR_IDENTICAL


def store_rubric_criteria(task: Task, data: dict, writer: ProposalWriter) -> None:
    """Merge one survey's expansion into its discipline's criteria (task-less rows)."""
    discipline = task.survey.discipline
    scope = RubricCriterion.objects.filter(discipline=discipline, task__isnull=True)
    merged = [{"component": c, "name": n, "description": d}
              for c, n, d in scope.values_list("component", "name", "description")]
    position = _next_position(scope)
    for i, entry in enumerate(data["criteria"]):
        where = f"criterion {i + 1}"
        candidate = {"component": entry["component"], "name": _text(entry["name"], f"{where} name"),
                     "description": str(entry["description"]).strip()}
        if any(near_identical(candidate, known) for known in merged):
            continue
        merged.append(candidate)
        writer.add(RubricCriterion(
            discipline=discipline, component=candidate["component"], aspect=_text(entry["aspect"], f"{where} aspect"),
            name=candidate["name"], description=candidate["description"], example=str(entry["example"]).strip(),
            position=position,
        ), where)
        position += 1


STORE: dict[str, Callable[[Task, dict, ProposalWriter], None]] = {
    "question": store_question,
    "topic_groups": store_topic_groups,
    "constraint_pairs": store_constraint_pairs,
    "reportbench_prompts": store_reportbench_prompts,
    "rubric_criteria": store_rubric_criteria,
    "nuggets": store_nuggets,
}
