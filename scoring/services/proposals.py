"""Proposing benchmark material with a judge: one service per construction stage, one entry point.

``propose(tasks=, stages=, judge_config=, progress=)`` is shared by ``manage.py propose``, the
Celery task ``scoring.propose_batch`` and the task page. A *unit* is one stage on one task;
each unit asks its judge step once and stores what comes back:

=====================  ===========================  =============  ===========================================
stage                  judge step                   protocols      stored as (origin llm, status proposed)
=====================  ===========================  =============  ===========================================
question               propose.general_question     deepsynth      the general ``TaskPrompt`` (DeepSynth §3.1)
topic_groups           propose.topic_groups         deepsynth      general ``ChecklistGroup`` + items (§3.2)
constraint_pairs       propose.constraint_pairs     deepsynth      ``ConstraintQuestion`` + constraint group (§3.3)
reportbench_prompts    propose.reportbench_prompts  reportbench    sentence/paragraph/detail prompts (§2.1.2)
rubric_criteria        propose.rubric_criteria      surveylens     discipline ``RubricCriterion`` (§3.3.1)
nuggets                deepscholar.nuggetize        deepscholar    ``Nugget`` with vital/okay importance
=====================  ===========================  =============  ===========================================

``rubric_criteria`` expands each survey of a discipline into criteria and merges them into the
discipline's set: a criterion near-identical to one the discipline already has (same component,
same normalized name, or ≥ ``NEAR_IDENTICAL`` Jaccard overlap of the content words of name and
description) is dropped, so the merged set holds each criterion once.

Guarantees:

* Every stored row has its audit row ("propose") and the unit's ``LLMCall`` in the same
  transaction; the task (or discipline) row is locked while storing, so concurrent batches
  cannot duplicate.
* Nothing an expert reviewed — nor any imported or human row — is overwritten: single-slot
  rows (prompts) are revised only while they are still this judge's unreviewed proposal;
  list rows are only added when nothing with the same normalized text exists.
* What was asked is fingerprinted on ``LLMCall.request_hash`` (configuration, step, scope,
  variables; ``run`` is empty for proposals): a unit whose fingerprint has a successful call
  is *reused* and makes no call, so re-running unchanged input with the same configuration
  costs nothing.
* A judge error (after the judge's own repair round) or an answer that cannot be stored
  (empty text, a name too long for its field, a prompt without its cut-off) fails the unit
  with the reason; no row of it is stored. Its ``LLMCall`` is kept with ``ok=False`` and the
  reason, because the tokens were spent, and so a re-run asks again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from benchmark.models import Discipline, Protocol, Task, TaskPrompt
from core.jobs import job_claim, job_release, jobs_enqueue_on_commit, unsent_reason
from scoring.judges import JudgeAnswer, JudgeCall, judge_for, record_call
from scoring.judges.endpoints import redact
from scoring.models import JudgeConfig, LLMCall, ProposalBatch

from .proposal_stores import (
    REPORTBENCH_LEVELS,
    STORE,
    ProposalWriter,
    UnitFailed,
    is_revisable,
)

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class Stage:
    name: str
    step: str
    protocols: tuple[str, ...]
    label: str


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("question", "propose.general_question", (Protocol.DEEPSYNTH,), "general question"),
    Stage("topic_groups", "propose.topic_groups", (Protocol.DEEPSYNTH,), "topic-anchored checklist groups"),
    Stage("constraint_pairs", "propose.constraint_pairs", (Protocol.DEEPSYNTH,), "constraint questions and checklists"),
    Stage("reportbench_prompts", "propose.reportbench_prompts", (Protocol.REPORTBENCH,), "ReportBench prompts"),
    Stage("rubric_criteria", "propose.rubric_criteria", (Protocol.SURVEYLENS,), "discipline rubric criteria"),
    Stage("nuggets", "deepscholar.nuggetize", (Protocol.DEEPSCHOLAR,), "nuggets of the exemplar"),
)}
class NothingToPropose(Exception):
    """Every slot the stage would fill is taken by a row the judge must not touch."""


@dataclass
class Outcome:
    """What one unit (a stage on a task) did."""

    stage: str
    task_key: str
    status: str  # proposed, reused, skipped, failed
    created: dict[str, int] = field(default_factory=dict)
    revised: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    reason: str = ""


@dataclass
class Summary:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def proposed(self) -> dict[str, int]:
        counts: Counter = Counter()
        for o in self.outcomes:
            counts.update(o.created)
        return dict(sorted(counts.items()))

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def as_dict(self) -> dict:
        """The JSON form kept on ``ProposalBatch.summary``."""
        return {
            "proposed": self.proposed,
            "revised": sum(o.revised for o in self.outcomes),
            "units": dict(sorted(Counter(o.status for o in self.outcomes).items())),
            "calls": sum(o.calls for o in self.outcomes),
            "tokens_in": sum(o.tokens_in for o in self.outcomes),
            "tokens_out": sum(o.tokens_out for o in self.outcomes),
            "cost_usd": sum(o.cost_usd for o in self.outcomes),
            "failures": [{"stage": o.stage, "task": o.task_key, "reason": o.reason} for o in self.failures],
            "skipped": [{"stage": o.stage, "task": o.task_key, "reason": o.reason}
                        for o in self.outcomes if o.status == "skipped"],
        }


Progress = Callable[[int, int, Outcome], None]  # (units settled, units in all, the unit just settled)


# --- choosing the units ------------------------------------------------------------------------------------------


def stages_for(protocol: str) -> list[str]:
    """The stages that build material for tasks of ``protocol``."""
    return [s.name for s in STAGES.values() if protocol in s.protocols]


def proposal_units(*, tasks: Iterable[Task], stages: Sequence[str] | None = None) -> list[tuple[str, Task]]:
    """(stage, task) pairs in stage order, then task order: each requested stage on each task of its
    protocols (all the protocol's stages when ``stages`` is empty). ``ValueError`` names an unknown
    stage, or a requested stage that fits none of the tasks."""
    task_list = sorted(tasks, key=lambda t: (t.protocol, t.key))
    if not task_list:
        raise ValueError("tasks: choose at least one task")
    if stages:
        unknown = [s for s in stages if s not in STAGES]
        if unknown:
            raise ValueError(f"stages: unknown stage(s) {', '.join(map(repr, unknown))}; known: {', '.join(STAGES)}")
        wanted = list(dict.fromkeys(stages))
        protocols = {t.protocol for t in task_list}
        unfit = [s for s in wanted if not protocols & set(STAGES[s].protocols)]
        if unfit:
            raise ValueError(
                "stages: " + "; ".join(f"{s} builds {', '.join(STAGES[s].protocols)} tasks" for s in unfit)
                + f", and these tasks are {', '.join(sorted(protocols))}"
            )
    else:
        wanted = list(STAGES)
    units = [(s, t) for s in wanted for t in task_list if t.protocol in STAGES[s].protocols]
    if not units:
        raise ValueError("stages: no construction stage applies to these tasks' protocols")
    return units


# --- the entry point ---------------------------------------------------------------------------------------------


def propose(
    *,
    tasks: Iterable[Task],
    stages: Sequence[str] | None = None,
    judge_config: JudgeConfig,
    progress: Progress | None = None,
    actor=None,
    judge=None,
) -> Summary:
    """Run the stages on the tasks with ``judge_config``'s judge (``judge`` replaces it in tests).

    Units run one after another in chunks of ``max_concurrency`` whose calls go out together;
    each unit is stored (or fails) on its own, so one bad answer never costs another unit's rows.
    ``actor`` is the user who asked, recorded on the revisions next to the judge's name."""
    units = proposal_units(tasks=tasks, stages=stages)
    judge = judge or judge_for(judge_config)
    summary = Summary()
    size = max(1, int(judge_config.max_concurrency or 1))
    for start in range(0, len(units), size):
        prepared, calls = [], []
        for stage, task in units[start:start + size]:
            unit = _prepare(stage, task, judge_config)
            prepared.append(unit)
            if unit.call is not None:
                calls.append(unit.call)
        answers = iter(judge.answer_many(calls) if calls else [])
        for unit in prepared:
            outcome = unit.outcome or _store(unit, next(answers), judge_config=judge_config, actor=actor)
            summary.outcomes.append(outcome)
            if progress is not None:
                progress(len(summary.outcomes), len(units), outcome)
    return summary


@dataclass
class _Unit:
    stage: str
    task: Task
    variables: dict = field(default_factory=dict)
    fingerprint: str = ""
    call: JudgeCall | None = None
    outcome: Outcome | None = None  # settled without a call


def _prepare(stage: str, task: Task, config: JudgeConfig) -> _Unit:
    """The unit's call, or its outcome when no call is needed (bad input, nothing to fill, reused)."""
    unit = _Unit(stage, task)
    try:
        _require_open(task)
        OPEN_SLOTS[stage](task, config)  # first: a stage with nothing to fill needs no input
        unit.variables = VARIABLES[stage](task)
    except UnitFailed as exc:
        unit.outcome = Outcome(stage, task.key, "failed", reason=str(exc))
        return unit
    except NothingToPropose as exc:
        unit.outcome = Outcome(stage, task.key, "skipped", reason=str(exc))
        return unit
    unit.fingerprint = proposal_fingerprint(config, STAGES[stage].step, _scope(stage, task), unit.variables)
    if _answered(config, STAGES[stage].step, unit.fingerprint):
        unit.outcome = Outcome(stage, task.key, "reused", reason="same input and configuration already answered")
        return unit
    unit.call = JudgeCall(step=STAGES[stage].step, variables=unit.variables)
    return unit


def _store(unit: _Unit, answer: JudgeAnswer, *, judge_config: JudgeConfig, actor) -> Outcome:
    step = STAGES[unit.stage].step
    outcome = Outcome(unit.stage, unit.task.key, "proposed", calls=1, tokens_in=answer.tokens_in,
                      tokens_out=answer.tokens_out, cost_usd=answer.cost_usd)
    answer = dataclasses.replace(answer, extra={**answer.extra, "request_hash": unit.fingerprint})
    if not answer.ok:
        return _failed(outcome, answer, judge_config, step, f"judge error: {answer.error or 'no answer'}")
    try:
        with transaction.atomic():
            _lock_scope(unit)
            if _answered(judge_config, step, unit.fingerprint):  # a concurrent batch stored it meanwhile
                record_call(answer, judge_config=judge_config, step=step)
                outcome.status, outcome.reason = "reused", "stored meanwhile by another batch"
                return outcome
            call = record_call(answer, judge_config=judge_config, step=step)
            writer = ProposalWriter(judge_config=judge_config, actor=actor, call=call, stage=unit.stage,
                             model=answer.model or judge_config.model)
            STORE[unit.stage](unit.task, answer.data, writer)
            outcome.created, outcome.revised = dict(writer.created), writer.revised
    except UnitFailed as exc:
        return _failed(outcome, answer, judge_config, step, f"unusable answer: {exc}")
    if not outcome.created and not outcome.revised:
        outcome.reason = "the answer held nothing new"
    return outcome


def _failed(outcome: Outcome, answer: JudgeAnswer, config: JudgeConfig, step: str, reason: str) -> Outcome:
    with transaction.atomic():
        record_call(dataclasses.replace(answer, data=None, error=reason), judge_config=config, step=step)
    outcome.status, outcome.reason, outcome.created = "failed", reason, {}
    return outcome


def proposal_fingerprint(config: JudgeConfig, step: str, scope: str, variables: dict) -> str:
    """What a proposal call asks, as stored on ``LLMCall.request_hash``: the configuration's answering
    settings, the step, the row it proposes for and the variables."""
    canonical = json.dumps({
        "purpose": "propose", "backend": config.backend, "model": config.model, "base_url": config.base_url,
        "prompt_version": config.prompt_version, "temperature": config.temperature, "options": config.options,
        "embedding": config.embedding_backend, "step": step, "scope": scope, "variables": variables,
    }, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _answered(config: JudgeConfig, step: str, fingerprint: str) -> bool:
    return LLMCall.objects.filter(judge_config=config, run__isnull=True, step=step, request_hash=fingerprint,
                                  ok=True).exists()


def _scope(stage: str, task: Task) -> str:
    return f"task:{task.pk}"


def _require_open(task: Task) -> None:
    if task.status in (Task.Status.CURATED, Task.Status.RETIRED):
        raise UnitFailed(f"task {task.key} is {task.status}; new proposals go to draft or in-review tasks only")


def _lock_scope(unit: _Unit) -> None:
    Task.objects.select_for_update(no_key=True).filter(pk=unit.task.pk).first()
    if unit.stage == "rubric_criteria":  # the discipline's merged set is shared by its tasks
        Discipline.objects.select_for_update(no_key=True).filter(pk=unit.task.survey.discipline_id).first()


# --- what each stage asks ------------------------------------------------------------------------------------------


def _outline_text(survey) -> str:
    return "\n".join(f"{'#' * max(1, min(int(level), 6))} {title}" for level, title in survey.outline or [])


def _content_text(survey) -> str:
    if survey.content:
        parts = []
        for section in survey.content:
            heading = str(section.get("heading") or "").strip()
            text = str(section.get("text") or section.get("content") or "").strip()
            level = max(1, min(int(section.get("level") or 1), 6))
            parts.append(f"{'#' * level} {heading}\n\n{text}" if heading else text)
        return "\n\n".join(p for p in parts if p.strip())
    return survey.full_text or ""


def _survey_parts(task: Task) -> dict:
    survey = task.survey
    outline, content = _outline_text(survey), _content_text(survey)
    if not outline.strip() and not content.strip():
        raise UnitFailed(f"survey “{survey.title}” has neither an outline nor content to propose from; "
                         "import the survey's text first")
    return {"survey_title": survey.title, "outline": outline, "content": content}


def _title_abstract(task: Task) -> dict:
    survey = task.survey
    if not survey.abstract.strip():
        raise UnitFailed(f"survey “{survey.title}” has no abstract to reconstruct the request from; "
                         "fill in its abstract first")
    return {"title": survey.title, "abstract": survey.abstract}


def _reportbench_variables(task: Task) -> dict:
    cutoff = task.cutoff_date or task.survey.publication_date
    if cutoff is None:
        raise UnitFailed(f"task {task.key} has no cut-off date and its survey no publication date; set one first")
    return {**_title_abstract(task), "cutoff_date": cutoff.isoformat()}


def _rubric_variables(task: Task) -> dict:
    survey = task.survey
    if survey.discipline is None:
        raise UnitFailed(f"survey “{survey.title}” has no discipline; rubric criteria are merged per discipline")
    outline = _outline_text(survey)
    if not outline.strip():
        raise UnitFailed(f"survey “{survey.title}” has no outline to expand criteria from")
    return {"discipline": survey.discipline.name, "survey_title": survey.title, "outline": outline}


def _nugget_variables(task: Task) -> dict:
    query = task.prompts.filter(level=TaskPrompt.Level.GENERAL).values_list("text", flat=True).first()
    if not query:
        raise UnitFailed(f"task {task.key} has no general prompt (the DeepScholar query) to nuggetize for")
    text = task.survey.full_text or _content_text(task.survey)
    if not text.strip():
        raise UnitFailed(f"survey “{task.survey.title}” has no exemplar text to break into nuggets")
    return {"query": query, "text": text}


VARIABLES: dict[str, Callable[[Task], dict]] = {
    "question": _title_abstract,
    "topic_groups": _survey_parts,
    "constraint_pairs": _survey_parts,
    "reportbench_prompts": _reportbench_variables,
    "rubric_criteria": _rubric_variables,
    "nuggets": _nugget_variables,
}


# --- which slots are still open ----------------------------------------------------------------------------------


def _open_prompt_levels(task: Task, config: JudgeConfig, levels: Sequence[str]) -> list[str]:
    taken = {p.level: p for p in task.prompts.filter(level__in=levels)}
    open_levels = [lv for lv in levels if lv not in taken or is_revisable(taken[lv], config)]
    if not open_levels:
        held = ", ".join(f"{p.level} ({p.origin}, {p.review_status})" for p in taken.values())
        raise NothingToPropose(f"the task already has its prompts, which the judge must not change: {held}")
    return open_levels


def _always_open(task: Task, config: JudgeConfig) -> None:
    """List stages only add rows next to what exists, so there is always room."""


OPEN_SLOTS: dict[str, Callable[[Task, JudgeConfig], object]] = {
    "question": lambda task, config: _open_prompt_levels(task, config, [TaskPrompt.Level.GENERAL]),
    "reportbench_prompts": lambda task, config: _open_prompt_levels(task, config, REPORTBENCH_LEVELS),
    "topic_groups": _always_open,
    "constraint_pairs": _always_open,
    "rubric_criteria": _always_open,
    "nuggets": _always_open,
}


# --- batches: what the command, the Celery task and the page queue ------------------------------------------------


@transaction.atomic
def proposal_batch_create(
    *, tasks: Iterable[Task], stages: Sequence[str] | None, judge_config: JudgeConfig, actor=None,
    enqueue: bool = True,
) -> ProposalBatch:
    """A pending batch for these tasks and stages (checked now, so a bad request stores nothing),
    enqueued on Celery once committed unless ``enqueue`` is False (``propose --inline``)."""
    task_list = list(tasks)
    units = proposal_units(tasks=task_list, stages=stages)
    batch = ProposalBatch.objects.create(
        judge_config=judge_config, stages=list(dict.fromkeys(s for s, _ in units)), total=len(units),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    batch.tasks.set(task_list)
    if enqueue:
        from scoring.tasks import propose_batch

        def unsent(exc: Exception) -> None:
            now = timezone.now()
            ProposalBatch.objects.filter(pk=batch.pk, status=ProposalBatch.Status.PENDING).update(
                status=ProposalBatch.Status.FAILED, error=unsent_reason(exc), finished_at=now, updated_at=now)

        jobs_enqueue_on_commit(propose_batch, [batch.pk], unsent=unsent)
    return batch


def proposal_batch_execute(*, batch_id: int, progress: Progress | None = None, judge=None, worker: str = "") -> str:
    """Run a pending batch once (claimed with a conditional update) and keep its counters and
    summary on the row. Returns the batch's final status, or ``skipped`` / ``missing``.
    ``worker`` (the Celery worker's hostname) lets a batch whose worker died be re-queued."""
    if not job_claim(ProposalBatch, batch_id, worker=worker):
        return "skipped" if ProposalBatch.objects.filter(pk=batch_id).exists() else "missing"
    batch = ProposalBatch.objects.select_related("judge_config", "created_by").get(pk=batch_id)
    failed = 0

    def report(settled: int, total: int, outcome: Outcome) -> None:
        nonlocal failed
        failed += outcome.status == "failed"
        ProposalBatch.objects.filter(pk=batch_id).update(done=settled - failed, failed=failed,
                                                         updated_at=timezone.now())
        if progress is not None:
            progress(settled, total, outcome)

    try:
        summary = propose(tasks=batch.tasks.select_related("survey__discipline"), stages=batch.stages,
                          judge_config=batch.judge_config, progress=report, actor=batch.created_by, judge=judge)
    except (OperationalError, InterfaceError):  # transient: back to pending, so the Celery retry runs it
        job_release(ProposalBatch, batch_id)
        raise
    except Exception as exc:
        logger.exception("proposal batch %s failed", batch_id)
        ProposalBatch.objects.filter(pk=batch_id).update(
            status=ProposalBatch.Status.FAILED, error=redact(f"{type(exc).__name__}: {exc}"),
            finished_at=timezone.now(), updated_at=timezone.now())
        return ProposalBatch.Status.FAILED
    status = ProposalBatch.Status.FAILED if summary.outcomes and len(summary.failures) == len(summary.outcomes) \
        else ProposalBatch.Status.FINISHED
    error = f"{len(summary.failures)} of {len(summary.outcomes)} units failed" if summary.failures else ""
    ProposalBatch.objects.filter(pk=batch_id).update(status=status, summary=summary.as_dict(), error=error,
                                                     finished_at=timezone.now(), updated_at=timezone.now())
    return status
