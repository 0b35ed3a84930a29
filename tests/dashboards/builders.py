"""Populated databases for the dashboard tests and benchmarks: stored rows only, made with factories."""

from __future__ import annotations

import random

from annotation.models import AnnotationItem, PairwisePreference
from annotation.services.review import item_adjudicate
from scoring.models import EvaluationRun, ScoreCard
from tests.annotation_factories import (
    JUDGE_LABELS,
    JudgeConfigFactory,
    PreferenceFactory,
    VerdictFactory,
    agreement_project,
    annotator,
    curator,
    label_all,
)
from tests.factories import ReportFactory, SystemFactory, TaskFactory

SYSTEM_NAMES = ("Autosurvey", "Gemini", "SciSage", "SurveyForge", "SurveyX")


def deepsynth_run(*, n_tasks: int = 6, systems=None, seed: int = 1, verdicts_per_report: int = 4, name: str = "run A"):
    """A finished DeepSynth run: report-level score cards (checklist_scores-shaped metrics) and verdicts.

    System k's scores grow with k, so the last system is clearly best."""
    rng = random.Random(seed)
    systems = systems or [SystemFactory(name=n) for n in SYSTEM_NAMES[:3]]
    judge = JudgeConfigFactory(name=f"judge for {name}")
    run = EvaluationRun.objects.create(name=name, protocol="deepsynth", judge_config=judge,
                                       status=EvaluationRun.Status.FINISHED)
    run.systems.set(systems)
    for t in range(n_tasks):
        task = TaskFactory(protocol="deepsynth", key=f"{name}-task-{t}")
        for k, system in enumerate(systems):
            report = ReportFactory(task=task, system=system)
            base = 20 + 15 * k
            general = base + rng.uniform(-5, 5)
            constraint = base - 5 + rng.uniform(-5, 5)
            correct, incorrect = 5 + k + rng.randint(0, 3), rng.randint(0, 3)
            omitted = 12 - correct if correct < 12 else 0
            metrics = {"general": general, "constraint": constraint, "overall": (general + constraint) / 2,
                       "precision": 100 * correct / (correct + incorrect), "correct": correct, "omitted": omitted,
                       "incorrect": incorrect, "groups": 3, "groups_scored": 3, "items": 12, "repeats": 1}
            if t == 0 and k == 0:
                metrics["constraint"] = None  # a report without constraint groups
            ScoreCard.objects.create(run=run, system=system, report=report, metrics=metrics, items_judged=12,
                                     items_failed=k % 2)
            for v in range(verdicts_per_report):
                roll = rng.random()  # better systems get more "correct" verdicts
                label = "correct" if roll < 0.3 + 0.2 * k else ("omitted" if roll < 0.75 + 0.08 * k else "incorrect")
                VerdictFactory(report=report, judge_config=judge, step="deepsynth.checklist_group", label=label)
        # system-level cards exist too and must be ignored by the leaderboard
    for system in systems:
        ScoreCard.objects.create(run=run, system=system, report=None, metrics={"overall": 999.0}, items_judged=0)
    return run, systems


def preferences(*, systems, n_tasks: int = 4, annotators=("ann-a", "ann-b"), seed: int = 2, source: str = "surveylens"):
    """Pairwise preferences over the systems' reports on surveylens tasks; the later system usually wins."""
    rng = random.Random(seed)
    users = [annotator(u) for u in annotators]
    rows = []
    for t in range(n_tasks):
        task = TaskFactory(protocol="surveylens", key=f"{source}-topic-{t}")
        reports = [ReportFactory(task=task, system=s) for s in systems]
        for i in range(len(reports)):
            for j in range(i + 1, len(reports)):
                for user in users:
                    roll = rng.random()
                    choice = "right" if roll < 0.7 else ("left" if roll < 0.93 else "tie")
                    rows.append(PreferenceFactory(task=task, report_left=reports[i], report_right=reports[j],
                                                  annotator=user, choice=choice, source=source))
    return rows


def agreement_setup(*, n_verdicts: int = 6):
    """An agreement project with two annotators on every judge verdict, one disagreement adjudicated."""
    owner = curator("cur")
    users = [annotator("lab-1"), annotator("lab-2")]
    judge_labels = [JUDGE_LABELS[i % 3] for i in range(n_verdicts)]
    project = agreement_project(owner, users, labels=judge_labels, overlap=2, name="judge check")
    items = list(AnnotationItem.objects.filter(project=project).order_by("position", "id"))
    # both overrule the judge on item 1; lab-2 departs from lab-1 on items 2 (then adjudicated) and 3 (unresolved)
    for n, item in enumerate(items):
        judge = judge_labels[n] if n < len(judge_labels) else "correct"
        from annotation.selectors import item_target

        judge = item_target(item).label
        first = "incorrect" if n == 1 and judge != "incorrect" else ("omitted" if n == 1 else judge)
        second = first if n not in (2, 3) else ("omitted" if judge != "omitted" else "correct")
        item = label_all(item, users, {"label": first}, {"label": second})
    adjudicated = items[2]
    adjudicated.refresh_from_db()
    item_adjudicate(item=adjudicated, curator=owner, value={"label": "incorrect"})
    return project, owner, users
