"""Populated databases for the dashboard tests and benchmarks: stored rows only, made with factories."""

from __future__ import annotations

import random

from annotation.models import AnnotationItem
from annotation.loop.settle import item_adjudicate
from benchmark.models import Report
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


def deepsynth_run(*, n_tasks: int = 6, systems=None, seed: int = 1, verdicts_per_report: int = 4, name: str = "run A",
                  precision_variant: str | None = None):
    """A finished DeepSynth run: report-level score cards (checklist_scores-shaped metrics) and verdicts.

    System k's scores grow with k, so the last system is clearly best. ``precision_variant``
    records the run's ``variants.precision`` on the cards (none recorded by default)."""
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
            if precision_variant:
                metrics["variants"] = {"group_score": "paper", "precision": precision_variant}
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


def run_tasks(run) -> list:
    """The tasks a run scored, in id order: preferences on them share the automated side's scope."""
    from benchmark.models import Task

    return list(Task.objects.filter(reports__score_cards__run=run).distinct().order_by("pk"))


def preferences(*, systems, n_tasks: int = 4, annotators=("ann-a", "ann-b"), seed: int = 2, source: str = "surveylens",
                protocol: str = "surveylens", tasks=None):
    """Pairwise preferences over the systems' reports on new tasks of ``protocol`` (or on ``tasks``,
    with the systems' reports there); the later system usually wins. SurveyLens preferences judge
    outlines (as the released study), the others whole reports."""
    rng = random.Random(seed)
    users = [annotator(u) for u in annotators]
    rows = []
    for t in range(n_tasks) if tasks is None else range(len(tasks)):
        task = TaskFactory(protocol=protocol, key=f"{source}-topic-{t}") if tasks is None else tasks[t]
        reports = [(Report.objects.filter(task=task, system=s).first() if tasks is not None else None)
                   or ReportFactory(task=task, system=s) for s in systems]
        for i in range(len(reports)):
            for j in range(i + 1, len(reports)):
                for user in users:
                    roll = rng.random()
                    choice = "right" if roll < 0.7 else ("left" if roll < 0.93 else "tie")
                    rows.append(PreferenceFactory(task=task, report_left=reports[i], report_right=reports[j],
                                                  annotator=user, choice=choice, source=source,
                                                  component="outline" if protocol == "surveylens" else "report"))
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
        from annotation.selectors.targets import item_target

        judge = item_target(item).label
        first = "incorrect" if n == 1 and judge != "incorrect" else ("omitted" if n == 1 else judge)
        second = first if n not in (2, 3) else ("omitted" if judge != "omitted" else "correct")
        item = label_all(item, users, {"label": first}, {"label": second})
    adjudicated = items[2]
    adjudicated.refresh_from_db()
    item_adjudicate(item=adjudicated, curator=owner, value={"label": "incorrect"})
    return project, owner, users


def _run(name: str, protocol: str, judge, systems):
    run = EvaluationRun.objects.create(name=name, protocol=protocol, judge_config=judge,
                                       status=EvaluationRun.Status.FINISHED)
    run.systems.set(systems)
    return run


def reportbench_run(*, n_tasks: int = 4, systems=None, seed: int = 4, name: str = "rb run", judge=None,
                    n_gold: int = 12, tasks=None):
    """A finished ReportBench run: per task ``n_gold`` gold references with citation counts, per
    report the ``matched`` reference verdicts the pipeline stores (raw_response.gold.bib_entry),
    and a report-level card. Better systems cite more, and highly cited references more often."""
    from benchmark.models import GoldReference
    from tests.factories import BibEntryFactory

    rng = random.Random(seed)
    systems = systems or [SystemFactory(name=n) for n in SYSTEM_NAMES[:3]]
    judge = judge or JudgeConfigFactory(name=f"judge for {name}")
    run = _run(name, "reportbench", judge, systems)
    if tasks is None:
        tasks = []
        for t in range(n_tasks):
            task = TaskFactory(protocol="reportbench", key=f"{name}-task-{t}")
            for position in range(n_gold):
                GoldReference.objects.create(task=task, position=position, bib_entry=BibEntryFactory(
                    citation_count=rng.choice([0, 3, 10, 40, 150, 900, rng.randint(0, 2000)])))
            tasks.append(task)
    for task in tasks:
        golds = list(GoldReference.objects.filter(task=task).select_related("bib_entry").order_by("position"))
        top = max((g.bib_entry.citation_count or 0) for g in golds) or 1
        for k, system in enumerate(systems):
            report = Report.objects.filter(task=task, system=system).first() or ReportFactory(task=task, system=system)
            index = 0
            for gold in golds:
                chance = 0.1 + 0.15 * k + 0.4 * (gold.bib_entry.citation_count or 0) / top
                if rng.random() < chance:
                    VerdictFactory(report=report, judge_config=judge, prompt_version=judge.prompt_version,
                                   step="reportbench.references", target_kind="report_reference", target_id=0,
                                   target_key=str(index), label="matched", score=1.0,
                                   raw_response={"gold": {"bib_entry": gold.bib_entry_id, "title": gold.bib_entry.title}})
                    index += 1
            for _ in range(2):  # references outside the gold list
                VerdictFactory(report=report, judge_config=judge, prompt_version=judge.prompt_version,
                               step="reportbench.references", target_kind="report_reference", target_id=0,
                               target_key=str(index), label="unmatched", score=0.0, raw_response={"gold": None})
                index += 1
            recall = (index - 2) / len(golds)
            ScoreCard.objects.create(run=run, system=system, report=report, items_judged=index, metrics={
                "precision": (index - 2) / index, "recall": recall, "match_rate": rng.uniform(0.3, 0.9) + 0.03 * k,
                "factual_accuracy": rng.uniform(0.6, 0.95), "references": index})
    return run, systems, tasks


def deepscholar_run(*, n_tasks: int = 5, systems=None, seed: int = 5, name: str = "ds run", windows=range(6)):
    """A finished DeepScholar run whose cards store ``claim_coverage_by_window`` computed with
    ``scoring.metrics.claim_coverage`` on a random sentence-support matrix per report."""
    from scoring import metrics as m

    rng = random.Random(seed)
    systems = systems or [SystemFactory(name=n) for n in SYSTEM_NAMES[:3]]
    run = _run(name, "deepscholar", JudgeConfigFactory(name=f"judge for {name}"), systems)
    for t in range(n_tasks):
        task = TaskFactory(protocol="deepscholar", key=f"{name}-task-{t}")
        for k, system in enumerate(systems):
            report = ReportFactory(task=task, system=system)
            n = rng.randint(4, 12)
            support = [[rng.random() < (0.15 + 0.1 * k) / (1 + abs(i - j)) for j in range(n)] for i in range(n)]
            by_window = {str(w): m.claim_coverage(support, window=w) for w in windows}
            ScoreCard.objects.create(run=run, system=system, report=report, metrics={
                "claim_coverage_by_window": by_window, "claim_coverage": by_window["1"], "citation_precision": rng.random()})
    return run, systems


def surveylens_run(*, disciplines=("Biology", "Physics", "Economics"), tasks_per_discipline: int = 2, systems=None,
                   seed: int = 6, name: str = "sl run"):
    """A finished SurveyLens run: tasks whose gold surveys belong to ``disciplines``; cards with
    ``rubric_outline/content/reference`` (``scoring.metrics.rubric_score`` of random aspect
    scores with equal weights) and ``rams_*``."""
    import numpy as np

    from scoring import metrics as m
    from tests.factories import DisciplineFactory, SurveyFactory

    rng = random.Random(seed)
    systems = systems or [SystemFactory(name=n) for n in SYSTEM_NAMES[:3]]
    run = _run(name, "surveylens", JudgeConfigFactory(name=f"judge for {name}"), systems)
    for d, discipline_name in enumerate(disciplines):
        discipline = DisciplineFactory(code=f"{name}-{d}", name=discipline_name)
        for t in range(tasks_per_discipline):
            task = TaskFactory(protocol="surveylens", key=f"{name}-{d}-{t}", survey=SurveyFactory(discipline=discipline))
            for k, system in enumerate(systems):
                report = ReportFactory(task=task, system=system)
                metrics = {}
                for component, aspects in (("outline", 3), ("content", 5), ("reference", 3)):
                    scores = np.array([min(5, max(1, rng.gauss(2 + 0.6 * k + 0.3 * d, 0.7))) for _ in range(aspects)])
                    metrics[f"rubric_{component}"] = float(m.rubric_score(np.full(aspects, 1 / aspects), scores))
                    metrics[f"rams_{component}"] = rng.random()
                ScoreCard.objects.create(run=run, system=system, report=report, metrics=metrics)
    return run, systems
