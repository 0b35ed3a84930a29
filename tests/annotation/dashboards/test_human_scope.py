"""Correlations of the human ranking with automated metrics stay in the human scope (issue #28 §1):
the automated side is scored on the scoped preferences' tasks only and on the scoped component's
metrics only; n systems and tasks shown; fewer than three systems, no correlation."""

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from annotation.dashboards import human
from annotation.models import PairwisePreference
from benchmark.importers.catalogue import run_import
from benchmark.models import Report, Task
from scoring.models import EvaluationRun, ScoreCard
from tests.annotation_factories import JudgeConfigFactory
from tests.factories import ReportFactory, SurveyFactory, DisciplineFactory, TaskFactory

pytestmark = pytest.mark.django_db

ENVSCI = "Environmental Science"


def _run(systems):
    run = EvaluationRun.objects.create(name="surveylens scores", protocol="surveylens",
                                       judge_config=JudgeConfigFactory(name="offline"),
                                       status=EvaluationRun.Status.FINISHED)
    run.systems.set(systems)
    return run


def _card(run, report, **metrics):
    ScoreCard.objects.create(run=run, system=report.system, report=report, metrics=metrics, items_judged=1)


@pytest.fixture
def envsci_with_reversed_biology(datasets):
    return build_envsci_with_reversed_biology(datasets)


def build_envsci_with_reversed_biology(datasets):
    """The real SurveyLens outline preferences; on every EnvSci task ``rubric_outline`` orders the
    systems as the EnvSci annotator's Bradley–Terry ranking does and ``rubric_content`` the
    opposite way; five new Biology tasks (never compared by anyone) score the outline reversed
    and so strongly that the mean over all tasks reverses the order."""
    run_import("surveylens-annotations", datasets / "surveylens" / "human_annotation")
    envsci = human.human_ranking(scope=human.Scope(protocol="surveylens", discipline=ENVSCI), with_correlations=False)
    order = [s["system_id"] for s in sorted(envsci["systems"], key=lambda s: s["theta"])]  # weakest first
    assert len(order) == 5 and len({s["theta"] for s in envsci["systems"]}) == 5
    envsci_tasks = list(Task.objects.filter(preferences__task__survey__discipline__name=ENVSCI).distinct())
    assert len(envsci_tasks) == 5
    systems = [Report.objects.filter(system_id=sid).first().system for sid in order]
    run = _run(systems)
    for task in envsci_tasks:
        for rank, system in enumerate(systems):
            report = Report.objects.filter(task=task, system=system).first() or ReportFactory(task=task, system=system)
            _card(run, report, rubric_outline=1.0 + rank * 0.5, rubric_content=5.0 - rank * 0.5)
    biology = DisciplineFactory(name="Biology")
    for t in range(5):
        task = TaskFactory(protocol="surveylens", key=f"unjudged-biology-{t}", survey=SurveyFactory(discipline=biology))
        for rank, system in enumerate(systems):
            _card(run, ReportFactory(task=task, system=system), rubric_outline=50.0 - rank * 10.0,
                  rubric_content=1.0)
    return envsci, systems, envsci_tasks


def test_envsci_correlation_uses_only_envsci_tasks_and_outline_metrics(curator_client, envsci_with_reversed_biology):
    envsci, systems, envsci_tasks = envsci_with_reversed_biology
    body = curator_client.get(reverse("api:dashboard-human"), {"protocol": "surveylens", "discipline": ENVSCI}).json()
    assert body["automated_scope"]["n_tasks"] == 5 and body["automated_scope"]["component"] == "outline"
    by_metric = {c["metric"]: c for c in body["correlations"]}
    assert set(by_metric) == {"rubric_outline"}  # rubric_content scores the content, not the outline
    outline = by_metric["rubric_outline"]
    assert (outline["n_systems"], outline["n_tasks"]) == (5, 5)
    # independent: the metric's system means over the EnvSci tasks, scipy's correlations with θ
    theta = {s["system"]: s["theta"] for s in body["systems"]}
    cards = ScoreCard.objects.filter(report__task__in=envsci_tasks)
    means = {p["system"]: np.mean([c.metrics["rubric_outline"] for c in cards if c.system_id == p_id])
             for p, p_id in ((p, next(s["system_id"] for s in body["systems"] if s["system"] == p["system"]))
                             for p in outline["points"])}
    x = [theta[name] for name in means]
    y = [means[name] for name in means]
    assert outline["spearman"]["rho"] == pytest.approx(stats.spearmanr(x, y).statistic) == pytest.approx(1.0)
    assert outline["kendall"]["tau"] == pytest.approx(stats.kendalltau(x, y).statistic)
    # Before: the whole protocol's leaderboard (Biology tasks included) turned ρ to −1.
    all_cards = ScoreCard.objects.filter(run__protocol="surveylens", report__isnull=False)
    whole = {s.pk: np.mean([c.metrics["rubric_outline"] for c in all_cards if c.system_id == s.pk]) for s in systems}
    ids = [next(s["system_id"] for s in body["systems"] if s["system"] == name) for name in means]
    assert stats.spearmanr(x, [whole[i] for i in ids]).statistic == pytest.approx(-1.0)


def test_holm_across_the_table_and_exact_permutation_p_values(curator_client, envsci_with_reversed_biology):
    PairwisePreference.objects.filter(component="outline").update(component="report")  # every metric applies
    body = curator_client.get(reverse("api:dashboard-human"),
                              {"protocol": "surveylens", "discipline": ENVSCI, "p": "permutation"}).json()
    table = body["correlations"]
    assert {c["metric"] for c in table} == {"rubric_outline", "rubric_content"}
    raw = [c["spearman"]["p_value"] for c in table]
    # Holm by hand: sorted ascending, (m − j + 1)·p, running maximum, capped at 1
    order = np.argsort(raw, kind="stable")
    expected = np.maximum.accumulate(np.minimum(1, (len(raw) - np.arange(len(raw))) * np.array(raw)[order]))
    assert [table[k]["spearman"]["p_holm"] for k in order] == pytest.approx(list(expected))
    for c in table:
        x = [p["human"] for p in c["points"]]
        y = np.array([p["metric"] for p in c["points"]])
        reference = stats.permutation_test((x,), lambda v: stats.spearmanr(v, y).statistic,
                                           permutation_type="pairings")
        assert c["permutation"]["exact"] and c["permutation"]["n_permutations"] == 120
        assert c["permutation"]["spearman"] == pytest.approx(reference.pvalue)
        # ρ = ±1 over 5 systems: 2 of 120 re-pairings are as extreme, p = 1/60 — not the t-approximation's 0
        assert c["permutation"]["spearman"] == pytest.approx(2 / 120)
        assert c["spearman"]["p_value"] == 0.0


def test_mixed_components_or_fewer_than_three_systems_give_no_correlation(curator_client, envsci_with_reversed_biology):
    first = PairwisePreference.objects.filter(task__survey__discipline__name=ENVSCI).order_by("pk").first()
    PairwisePreference.objects.filter(pk=first.pk).update(component="content")
    body = curator_client.get(reverse("api:dashboard-human"), {"protocol": "surveylens", "discipline": ENVSCI}).json()
    assert body["correlations"] == [] and "several components" in body["correlation_note"]
    # one task, two systems compared on it: no correlation, and why
    PairwisePreference.objects.update(component="outline")
    pref = PairwisePreference.objects.filter(task__survey__discipline__name=ENVSCI).order_by("pk").first()
    body = curator_client.get(reverse("api:dashboard-human"),
                              {"protocol": "surveylens", "annotator": pref.annotator.username,
                               "discipline": ENVSCI, "component": "outline"}).json()
    assert body["correlations"]  # the full scope correlates
    PairwisePreference.objects.exclude(pk=pref.pk).delete()
    body = curator_client.get(reverse("api:dashboard-human"), {"protocol": "surveylens"}).json()
    assert body["correlations"] == [] and body["correlation_skipped"]
    assert all(s["n_systems"] == 2 for s in body["correlation_skipped"])
    assert "fewer than 3" in body["correlation_note"]
