"""Calibrated DeepScholar claim coverage: a unit is a claim sentence, several citation-pair
verdicts each (the documents cited within ±1 sentence and the query context). Sampled by
sentence; unit values against a computation by hand from the stored verdicts, and against the
pipeline's per-report claim coverage; the PPI figures against a numpy closed form."""


import numpy as np
import pytest

from annotation.calibration.selectors import calibrated_scores
from annotation.models import AnnotationItem, Role
from annotation.services.projects import membership_add, project_create
from benchmark.models import Protocol
from scoring.models import Verdict
from scoring.pipelines.deepscholar.citation_support import CITATIONS, PAIR_KIND, score_citation_support
from scoring.pipelines.deepscholar.documents import report_citations
from scoring.pipelines.deepscholar.inputs import query_text
from scoring.pipelines.deepscholar.pipeline import StoredLabels
from tests.annotation.calibration.closed_form import assert_row_is_ppi
from tests.annotation_factories import annotator, label_all
from tests.factories import SystemFactory, TaskFactory
from tests.scoring.pipelines.test_deepscholar import StepJudge, make_case, make_report, make_run, pipeline
from tests.scoring.services.fakes import judge_config

# What each sentence of the case's report cites (its module docstring): s2's document has no text
# (its pairs are failed verdicts), s4 cites nothing.
CITED = {0: "arxiv:2101.00001", 1: "url:example.org/gadgets", 2: "title:a theory of everything unrelated",
         3: "arxiv:2202.00002"}
WINDOW = 1


def _judged():
    """Three DeepScholar tasks on the case's survey, two systems' reports on each (the case's
    text), the citation step judged by the scripted judge, then a third of the labels flipped at
    random so that the judge's sentences differ between reports."""
    first, _ = make_case()
    tasks = [first] + [TaskFactory(protocol=Protocol.DEEPSCHOLAR, survey=first.survey) for _ in range(2)]
    systems = [SystemFactory(name="alpha"), SystemFactory(name="beta")]
    config = judge_config()
    run = make_run(config)
    run.tasks.set(tasks)
    run.systems.set(systems)
    first.reports.all().delete()
    reports = [make_report(task, system=system) for task in tasks for system in systems]
    rng = np.random.default_rng(5)
    for report in reports:
        pipeline.run_step(run=run, report=report, step=CITATIONS, judge=StepJudge(config))
        for verdict in Verdict.objects.filter(report=report, target_kind=PAIR_KIND, error=""):
            if rng.random() < 1 / 3:
                verdict.label = "not_support" if verdict.label == "support" else "support"
                verdict.save(update_fields=["label"])
    return config, tasks, systems, reports, run


def _window_keys(i: int) -> list[str]:
    return [f"{i}:{CITED[j]}" for j in range(max(0, i - WINDOW), i + WINDOW + 1) if j in CITED] + [f"{i}:query"]


def _covered(labels: list[str | None]) -> float | None:
    """1 when a pair supports the sentence; None when none does and a pair has no label."""
    if any(label == "support" for label in labels):
        return 1.0
    return None if any(label is None for label in labels) else 0.0


def _units_by_hand(report, expert: dict[int, str]):
    """(judge value, expert value or None) of each determined claim sentence of ``report``."""
    rows = {v.target_key: v for v in Verdict.objects.filter(report=report, target_kind=PAIR_KIND, error="")}
    out = []
    for i in range(5):
        present = [rows[key] for key in _window_keys(i) if key in rows]
        f = _covered([rows[key].label if key in rows else None for key in _window_keys(i)])
        if f is None:
            continue
        y = None
        if all(v.pk in expert for v in present):
            y = _covered([expert[rows[key].pk] if key in rows else None for key in _window_keys(i)])
        out.append((f, y))
    return out


@pytest.mark.django_db
def test_claim_coverage_by_sentence_matches_an_independent_computation(owner):
    config, tasks, systems, reports, run = _judged()
    project = project_create(name="by sentence", kind="agreement", created_by=owner, tasks=tasks,
                             judge_config=config, sampling="stratified", sample_size=18, sampling_unit="sentence",
                             label_set={"label": ["support", "not_support"]})
    assert project.steps == [CITATIONS]
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    verdicts = {v.pk: v for v in Verdict.objects.filter(pk__in=[i.target_id for i in items])}
    units = [(verdicts[i.target_id].report_id, verdicts[i.target_id].target_key.split(":")[0]) for i in items]
    drawn = list(dict.fromkeys(units))
    # 6 reports x 5 claim sentences = 30 units, 15 per system: 9 drawn per system, π = 9/15
    assert len(drawn) == 18 and all(i.inclusion_probability == pytest.approx(9 / 15) for i in items)
    assert sum(1 for k in range(1, len(units)) if units[k] != units[k - 1]) == 17  # a sentence's verdicts together
    for report_id, sentence in drawn:  # the pairs a drawn sentence's value reads (window 1 and the query), all held
        every = Verdict.objects.filter(report_id=report_id, target_kind=PAIR_KIND, error="",
                                       target_key__in=_window_keys(int(sentence))).exclude(label="")
        assert {v.pk for v in every} == {i.target_id for i, u in zip(items, units) if u == (report_id, sentence)}
    beyond = Verdict.objects.filter(target_kind=PAIR_KIND, target_key=f"0:{CITED[3]}")  # asked for windows ≥ 3
    assert beyond.count() == 6 and not beyond.filter(pk__in=verdicts).exists()

    expert_user = annotator("expert")
    membership_add(project=project, user=expert_user, role=Role.ANNOTATOR, actor=owner)
    expert = {}
    for k, item in enumerate(items):
        judge = verdicts[item.target_id].label
        expert[item.target_id] = ("not_support" if judge == "support" else "support") if k % 4 == 0 else judge
        label_all(item, [expert_user], {"label": expert[item.target_id]})
    result = calibrated_scores(run=run, project=project, user=owner)
    assert [m["metric"] for m in result["metrics"]] == ["claim_coverage"]
    entry = result["metrics"][0]
    assert entry["unit"] == "sentence"
    for system in systems:
        mine = [r for r in reports if r.system_id == system.pk]
        by_report = [_units_by_hand(r, expert) for r in mine]
        coverage = []
        for report, values in zip(mine, by_report):  # the pipeline's own claim coverage of each report
            stored = StoredLabels(run=run, report=report)
            score = score_citation_support(run=run, citations=report_citations(report), query=query_text(report.task),
                                           stored=stored, precision_variant="paper")
            assert score["claim_coverage"] == pytest.approx(np.mean([f for f, _ in values]))
            coverage.append(score["claim_coverage"])
        # a unit's value × U / (R · n_r): the units' mean is the mean over reports of the reports' coverage
        units = sum(len(per) for per in by_report)
        values = [(f * a, None if y is None else y * a)
                  for per in by_report for a in [units / (len(by_report) * len(per))] for f, y in per]
        assert sorted({len(per) for per in by_report}) != [5]  # undetermined sentences: unequal units per report
        f_all = np.array([f for f, _ in values])
        f = np.array([f for f, y in values if y is not None])
        y = np.array([y for _, y in values if y is not None])
        row = next(r for r in entry["systems"] if r["system_id"] == system.pk)
        assert row["judge_only"]["estimate"] == pytest.approx(np.mean(coverage))  # the system's claim coverage
        assert y.size >= 3
        assert_row_is_ppi(row, y, f, f_all)
