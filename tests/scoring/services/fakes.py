"""A scripted judge and small DeepSynth fixtures for the run and pipeline tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmark.models import ChecklistGroup, ReviewStatus
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.models import JudgeConfig
from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, ReportFactory, SystemFactory, TaskFactory


class ScriptedJudge(Judge):
    """Answers ``deepsynth.checklist_group`` calls from a script and counts its calls.

    ``labels`` maps item id → label (default ``default``); ``respond(call, n)`` may replace
    the answer of the n-th call (0-based) — return ``None`` to keep the scripted one.
    """

    def __init__(self, config=None, *, labels=None, default="correct", respond=None, delay=0.0) -> None:
        super().__init__(config or JudgeConfig(name="scripted", backend="offline", max_concurrency=4))
        self.labels: dict[int, str] = dict(labels or {})
        self.default = default
        self.respond: Callable[[JudgeCall, int], JudgeAnswer | None] | None = respond
        self.delay = delay
        self.calls: list[JudgeCall] = []
        self._lock = threading.Lock()

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        with self._lock:
            n = len(self.calls)
            self.calls.append(call)
        if self.delay:
            time.sleep(self.delay)
        if self.respond is not None:
            custom = self.respond(call, n)
            if custom is not None:
                return custom
        return self.answer_for(call)

    def answer_for(self, call: JudgeCall) -> JudgeAnswer:
        items = call.variables["items"]
        verdicts = [
            {"id": it["id"], "label": self.labels.get(it["id"], self.default), "evidence": "quote", "rationale": "because"}
            for it in items
        ]
        return JudgeAnswer(
            data={"verdicts": verdicts}, raw="{}", model="scripted", tokens_in=100 * len(items) + 1,
            tokens_out=10 * len(items), latency_ms=50.0, cost_usd=0.01,
        )

    def items_asked(self) -> list[int]:
        return sorted(it["id"] for call in self.calls for it in call.variables["items"])


def judge_config(**overrides) -> JudgeConfig:
    values = {"name": "scripted-judge", "backend": JudgeConfig.Backend.OFFLINE, "max_concurrency": 4}
    values.update(overrides)
    return JudgeConfig.objects.create(**values)


@dataclass
class Checklist:
    """Two groups: a general one (4 items + 1 rejected) and a constraint one (5 items, clip 0.8)."""

    task: object
    general: ChecklistGroup
    constraint: ChecklistGroup
    general_items: list = field(default_factory=list)
    constraint_items: list = field(default_factory=list)
    rejected_item: object = None

    @property
    def item_ids(self) -> list[int]:
        return [i.id for i in self.general_items + self.constraint_items]


def two_group_checklist(task=None) -> Checklist:
    task = task or TaskFactory()
    general = ChecklistGroupFactory(task=task, kind="general", name="Methods", position=0)
    question = task.constraint_questions.create(text="Compare the methods in a table.", position=0)
    constraint = ChecklistGroupFactory(
        task=task, kind="constraint", name="Comparison table", constraint_question=question, clip_factor=0.8, position=1
    )
    checklist = Checklist(task=task, general=general, constraint=constraint)
    checklist.general_items = [ChecklistItemFactory(group=general, position=i) for i in range(4)]
    checklist.rejected_item = ChecklistItemFactory(group=general, position=9, review_status=ReviewStatus.REJECTED)
    checklist.constraint_items = [ChecklistItemFactory(group=constraint, position=i) for i in range(5)]
    return checklist


def reports_for(task, systems) -> list:
    return [ReportFactory(task=task, system=system, text=f"# Report by {system.name}\n\nText.") for system in systems]


def systems(n: int) -> list:
    return [SystemFactory(name=f"sys-{chr(97 + i)}") for i in range(n)]


def deepsynth_runs(run_systems: list) -> dict:
    """Two DeepSynth tasks with a ``two_group_checklist`` each, a report by each of
    ``run_systems`` for each task, and an offline judge configuration: what a run is made of."""
    checklists = [two_group_checklist(), two_group_checklist()]
    reports = [report for checklist in checklists for report in reports_for(checklist.task, run_systems)]
    return {"checklists": checklists, "systems": run_systems, "reports": reports, "config": judge_config()}
