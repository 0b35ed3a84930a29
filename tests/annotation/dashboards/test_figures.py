"""The papers' figures (ReportBench Table 2 and A.2.4, DeepScholar Fig. 5, SurveyLens Fig. 5):
every number checked against ``scoring.metrics`` run on the same stored rows."""

import csv
import io
from collections import defaultdict

import numpy as np
import pytest
from django.urls import reverse

from annotation.dashboards import charts
from benchmark.models import GoldReference
from scoring import metrics as m
from scoring.models import ScoreCard, Verdict
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory
from tests.annotation.dashboards.builders import deepscholar_run, reportbench_run, surveylens_run
from tests.factories import BibEntryFactory, ReportFactory, TaskFactory

pytestmark = pytest.mark.django_db


def vec_mean(a):
    return np.mean(a, axis=-1)


def csv_rows(response):
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def matched_bibs(report, judge):
    """What the report cited according to ``judge``: its ``matched`` reference verdicts."""
    rows = Verdict.objects.filter(report=report, judge_config=judge, target_kind="report_reference", label="matched")
    return {v.raw_response["gold"]["bib_entry"] for v in rows}


# --------------------------------------------------------------------------- recall by quartile


def test_recall_by_quartile_is_the_papers_pooled_recall(curator_client):
    run, systems, tasks = reportbench_run(n_tasks=5)
    # another judge's matches on the same reports must not count for this run's cards
    other = JudgeConfigFactory(name="other judge")
    some_report = ScoreCard.objects.filter(run=run, report__isnull=False).first().report
    uncited = next(g for g in GoldReference.objects.filter(task=some_report.task)
                   if g.bib_entry_id not in matched_bibs(some_report, run.judge_config))
    VerdictFactory(report=some_report, judge_config=other, step="reportbench.references", target_kind="report_reference",
                   target_id=0, target_key="0", label="matched", raw_response={"gold": {"bib_entry": uncited.bib_entry_id}})

    response = curator_client.get(reverse("dashboards:chart_recall_quartiles"))
    assert response.status_code == 200
    data = response.context["data"]
    rows = {r["system_id"]: r for r in data["rows"]}
    for system in systems:
        surveys = []
        for card in ScoreCard.objects.filter(run=run, system=system, report__isnull=False).select_related("report"):
            golds = GoldReference.objects.filter(task=card.report.task).select_related("bib_entry").order_by("position")
            cited = matched_bibs(card.report, run.judge_config)
            surveys.append(([g.bib_entry.citation_count for g in golds], [g.bib_entry_id in cited for g in golds]))
        expected = m.pooled_recall_by_quartile(surveys)
        got = [c["recall"] for c in rows[system.pk]["cells"]]
        assert got == pytest.approx(expected)
        sizes = np.bincount(np.concatenate([m.citation_quartiles(c) for c, _ in surveys]), minlength=5)[1:]
        assert [c["n_references"] for c in rows[system.pk]["cells"]] == sizes.tolist()
        assert rows[system.pk]["n_tasks"] == 5
    assert data["n_tasks_counts"] == 5 and data["n_tasks_stored"] == 0
    # the builder's best system cites more, and everybody cites highly cited papers more
    best = rows[systems[-1].pk]["cells"]
    assert best[3]["recall"] > best[0]["recall"]
    html = response.content.decode()
    assert 'id="chart-recall-quartiles"' in html
    assert f'{100 * best[3]["recall"]:.1f}' in html

    exported = csv_rows(curator_client.get(reverse("dashboards:chart_recall_quartiles"), {"format": "csv"}))
    assert len(exported) == 3 * 4
    q4 = {r["system"]: r for r in exported if r["quartile"] == "Q4"}
    assert float(q4[systems[-1].name]["recall"]) == pytest.approx(best[3]["recall"])


def test_recall_by_quartile_uses_stored_quartiles_and_leaves_out_uncounted_references(curator_client):
    judge = JudgeConfigFactory(name="rb judge")
    task = TaskFactory(protocol="reportbench", key="stored")
    golds = [GoldReference.objects.create(task=task, position=i, citation_quartile=q, bib_entry=BibEntryFactory())
             for i, q in enumerate((1, 1, 2, 4))]
    task2 = TaskFactory(protocol="reportbench", key="counted")
    counted = [GoldReference.objects.create(task=task2, position=i, bib_entry=BibEntryFactory(citation_count=c))
               for i, c in enumerate((5, 50, None, 500, 5000))]
    rejected = GoldReference.objects.create(task=task2, position=9, review_status="rejected",
                                            bib_entry=BibEntryFactory(citation_count=7))
    run, systems, _ = reportbench_run(tasks=[], judge=judge, name="manual")
    system = systems[0]
    for t, cite in ((task, [golds[0], golds[3]]), (task2, [counted[1], counted[2], rejected])):
        report = ReportFactory(task=t, system=system)
        for i, gold in enumerate(cite):
            VerdictFactory(report=report, judge_config=judge, step="reportbench.references", target_kind="report_reference",
                           target_id=0, target_key=str(i), label="matched",
                           raw_response={"gold": {"bib_entry": gold.bib_entry_id}})
        ScoreCard.objects.create(run=run, system=system, report=report, metrics={"recall": 0.5})
    data = curator_client.get(reverse("dashboards:chart_recall_quartiles")).context["data"]
    [row] = [r for r in data["rows"] if r["system_id"] == system.pk]
    # task 2: quartiles of the four counted references (5, 50, 500, 5000) by the paper's rule
    q2 = m.citation_quartiles([5, 50, 500, 5000]).tolist()
    totals, hits = [0] * 4, [0] * 4
    for q, cited in zip((1, 1, 2, 4), (True, False, False, True)):
        totals[q - 1] += 1
        hits[q - 1] += cited
    for q, cited in zip(q2, (False, True, False, False)):
        totals[q - 1] += 1
        hits[q - 1] += cited
    assert [c["n_references"] for c in row["cells"]] == totals
    assert [c["n_cited"] for c in row["cells"]] == hits
    assert [c["recall"] for c in row["cells"]] == pytest.approx([h / t if t else None for h, t in zip(hits, totals)])
    assert data["n_tasks_stored"] == 1 and data["n_tasks_counts"] == 1 and data["n_references_left_out"] == 1


# --------------------------------------------------------------------------- claim coverage by window


def test_coverage_by_window_means_and_intervals(curator_client):
    run, systems = deepscholar_run(n_tasks=6)
    extra = TaskFactory(protocol="deepscholar", key="malformed")
    ScoreCard.objects.create(run=run, system=systems[0], report=ReportFactory(task=extra, system=systems[0]),
                             metrics={"claim_coverage_by_window": {"x": 0.5, "2": "bad", "0": 0.25}})
    response = curator_client.get(reverse("dashboards:chart_coverage_window"))
    data = response.context["data"]
    assert data["windows"] == [0, 1, 2, 3, 4, 5]
    assert data["n_malformed"] == 2 and data["n_cards_with"] == 19
    series = {s["system_id"]: s for s in data["series"]}
    for system in systems:
        by_window = defaultdict(list)
        for card in ScoreCard.objects.filter(system=system, report__isnull=False).order_by("pk"):  # the figure's order
            for key, value in card.metrics["claim_coverage_by_window"].items():
                if key.isdigit() and isinstance(value, float):
                    by_window[int(key)].append(value)
        for point in series[system.pk]["points"]:
            values = np.array(by_window[point["window"]])
            ci = m.bootstrap_ci(vec_mean, values, n_resamples=1000, seed=0, vectorized=True)
            assert point["estimate"] == pytest.approx(values.mean())
            assert (point["low"], point["high"]) == pytest.approx((ci["low"], ci["high"]))
            assert point["n_tasks"] == len(values)
        if system != systems[0]:  # (the first also has the malformed card, at w = 0 only)
            # wider windows never cover less (the metric's definition), so neither do their means
            means = [p["estimate"] for p in series[system.pk]["points"]]
            assert means == sorted(means)
    html = response.content.decode()
    assert 'id="chart-coverage-window"' in html and "w = 5" in html
    exported = csv_rows(curator_client.get(reverse("dashboards:chart_coverage_window"), {"format": "csv"}))
    assert len(exported) == 3 * 6
    first = next(r for r in exported if r["system"] == systems[0].name and r["window"] == "0")
    assert float(first["mean"]) == pytest.approx(series[systems[0].pk]["points"][0]["estimate"])
    assert first["tasks"] == "7"


# --------------------------------------------------------------------------- discipline heatmap


def _expected_cells(metric):
    cells = defaultdict(list)
    for card in ScoreCard.objects.filter(run__protocol="surveylens", report__isnull=False).select_related(
            "report__task__survey__discipline", "system"):
        if metric == "rubric_overall":
            value = np.mean([card.metrics[f"rubric_{c}"] for c in ("outline", "content", "reference")])
        else:
            value = card.metrics[metric]
        cells[(card.report.task.survey.discipline.name, card.system.name)].append(value)
    return {key: (np.mean(values), len(values)) for key, values in cells.items()}


def test_heatmap_overall_rubric_by_default(curator_client):
    surveylens_run(tasks_per_discipline=2)
    response = curator_client.get(reverse("dashboards:chart_heatmap"))
    assert response.status_code == 200
    data = response.context["data"]
    assert data["metric"] == "rubric_overall"
    expected = _expected_cells("rubric_overall")
    seen = 0
    for row in data["rows"]:
        for cell in row["cells"]:
            mean, n = expected[(row["discipline"], cell["system"])]
            assert cell["mean"] == pytest.approx(mean) and cell["n"] == n == 2
            seen += 1
    assert seen == 9 and [r["discipline"] for r in data["rows"]] == ["Biology", "Economics", "Physics"]
    html = response.content.decode()
    for (discipline, system), (mean, n) in expected.items():
        assert f"{discipline} × {system}: mean {mean:.2f} over {n} reports" in html
        assert f">{mean:.2f}</text>" in html  # the value printed in the cell
    exported = csv_rows(curator_client.get(reverse("dashboards:chart_heatmap"), {"format": "csv", "metric": "rams_content"}))
    assert len(exported) == 9
    rams = _expected_cells("rams_content")
    for r in exported:
        assert float(r["rams_content"]) == pytest.approx(rams[(r["discipline"], r["system"])][0])


def test_heatmap_refuses_unknown_metric_and_protocol(curator_client):
    surveylens_run(tasks_per_discipline=1)
    response = curator_client.get(reverse("dashboards:chart_heatmap"), {"metric": "nonsense"})
    assert response.status_code == 400
    assert "metric: no SurveyLens score card has &#x27;nonsense&#x27;" in response.content.decode()
    response = curator_client.get(reverse("dashboards:chart_heatmap"), {"protocol": "bogus"})
    assert response.status_code == 400 and "protocol: &#x27;bogus&#x27; is not one of" in response.content.decode()


def test_heatmap_text_contrast_on_every_colour():
    def contrast(a, b):
        la, lb = charts._luminance(a), charts._luminance(b)
        return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)

    for i in range(101):
        fill = charts.sequential_colour(i / 100)
        assert contrast(fill, charts.ink_for(fill)) >= 4.5, fill  # WCAG AA for the printed values


# --------------------------------------------------------------------------- judge sensitivity


def test_judge_sensitivity_rank_correlations(curator_client):
    judge_a, judge_b = JudgeConfigFactory(name="gemini judge"), JudgeConfigFactory(name="gpt judge")
    run_a, systems, tasks = reportbench_run(n_tasks=4, judge=judge_a, name="with A",
                                            systems=None)
    from tests.factories import SystemFactory

    systems.append(SystemFactory(name="Fourth"))
    run_a.systems.add(systems[-1])
    reportbench_run(tasks=tasks, systems=systems[-1:], judge=judge_a, name="with A too", seed=11)
    reportbench_run(tasks=tasks, systems=systems, judge=judge_b, name="with B", seed=9)
    # a task only judge A scored: not shared, so it must not move A's means
    reportbench_run(n_tasks=1, systems=systems, judge=judge_a, name="A only", seed=12)

    response = curator_client.get(reverse("dashboards:judge_sensitivity"),
                                  {"protocol": "reportbench", "judge_a": judge_a.pk, "judge_b": judge_b.pk})
    assert response.status_code == 200
    data = response.context["data"]
    assert data["n_shared"] == 4 * 4 and data["n_tasks"] == 4
    by_key = {e["key"]: e for e in data["metrics"]}
    assert {"precision", "recall", "match_rate", "factual_accuracy"} <= set(by_key)
    for key, entry in by_key.items():
        a_means, b_means = [], []
        for row in entry["systems"]:
            def mean(judge):
                return np.mean([c.metrics[key] for c in ScoreCard.objects.filter(
                    run__judge_config=judge, system_id=row["system_id"], report__task__in=tasks)])
            a_means.append(mean(judge_a))
            b_means.append(mean(judge_b))
            assert row["a"] == pytest.approx(a_means[-1]) and row["b"] == pytest.approx(b_means[-1])
            assert row["n_tasks"] == 4
        assert entry["spearman"]["rho"] == pytest.approx(m.spearman(a_means, b_means)["rho"])
        assert entry["kendall"]["tau"] == pytest.approx(m.kendall_tau(a_means, b_means)["tau"])
        assert entry["same_ranking"] == (list(np.argsort(a_means)) == list(np.argsort(b_means)))
    html = response.content.decode()
    assert 'id="chart-sensitivity"' in html and "gemini judge" in html
    exported = csv_rows(curator_client.get(reverse("dashboards:judge_sensitivity"),
                                           {"judge_a": judge_a.pk, "judge_b": judge_b.pk, "format": "csv"}))
    assert len(exported) == sum(e["n_systems"] for e in data["metrics"])
    # defaults: the two most recently used judges
    assert curator_client.get(reverse("dashboards:judge_sensitivity")).context["data"]["n_shared"] == 16


@pytest.mark.parametrize("params, message", [
    ({"judge_a": "same", "judge_b": "same"}, "judge_b: choose a judge configuration different from judge_a"),
    ({"judge_a": "9999", "judge_b": "a"}, "judge_a: judge configuration 9999 has no report score card for ReportBench"),
    ({"judge_a": "x1", "judge_b": "a"}, "judge_a: &#x27;x1&#x27; is not an id"),
    ({"judge_a": "a"}, "judge_a, judge_b: choose two judge configurations"),
])
def test_judge_sensitivity_refuses_bad_choices(curator_client, params, message):
    judge_a, judge_b = JudgeConfigFactory(name="ja"), JudgeConfigFactory(name="jb")
    _, systems, tasks = reportbench_run(n_tasks=2, judge=judge_a, name="a")
    reportbench_run(tasks=tasks, systems=systems, judge=judge_b, name="b")
    ids = {"a": str(judge_a.pk), "same": str(judge_a.pk)}
    query = {k: ids.get(v, v) for k, v in params.items()}
    response = curator_client.get(reverse("dashboards:judge_sensitivity"), query)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_judge_sensitivity_with_one_judge_explains(curator_client):
    reportbench_run(n_tasks=2)
    response = curator_client.get(reverse("dashboards:judge_sensitivity"))
    assert response.status_code == 200
    assert "1 judge configuration scored ReportBench reports: two are needed to compare" in response.content.decode()


# --------------------------------------------------------------------------- bounded queries

NEW_PAGES = ("chart_recall_quartiles", "chart_coverage_window", "chart_heatmap", "judge_sensitivity", "look_next",
             "index", "run_progress")


def _populate_all(scale: int, tag: str):
    from tests.annotation.dashboards.test_history_and_progress import _running_run

    judge_a, judge_b = JudgeConfigFactory(name=f"A {tag}"), JudgeConfigFactory(name=f"B {tag}")
    _, systems, tasks = reportbench_run(n_tasks=2 * scale, judge=judge_a, name=f"rb {tag}")
    reportbench_run(tasks=tasks, systems=systems, judge=judge_b, name=f"rb B {tag}")
    deepscholar_run(n_tasks=2 * scale, name=f"ds {tag}")
    surveylens_run(tasks_per_discipline=scale, name=f"sl {tag}", disciplines=(f"Biology {tag}", f"Physics {tag}"))
    report = ReportFactory()
    for target in range(3 * scale):  # judges A and B disagree on every target
        VerdictFactory(report=report, judge_config=judge_a, step="deepsynth.checklist_group", target_kind="item",
                       target_id=target, label="correct", confidence=0.3)
        VerdictFactory(report=report, judge_config=judge_b, step="deepsynth.checklist_group", target_kind="item",
                       target_id=target, label="incorrect")
    _running_run(f"running {tag}")


@pytest.mark.parametrize("name", NEW_PAGES)
def test_query_count_does_not_grow_with_rows(curator_client, django_assert_max_num_queries, name):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _populate_all(1, "small")
    url = reverse(f"dashboards:{name}")
    with CaptureQueriesContext(connection) as small:
        assert curator_client.get(url).status_code == 200
    assert len(small.captured_queries) <= 14, [q["sql"][:120] for q in small.captured_queries]
    for n in range(2):
        _populate_all(3, f"big-{n}")
    with django_assert_max_num_queries(len(small.captured_queries) + (4 if name in ("index", "run_progress") else 0)):
        response = curator_client.get(url)  # (two more running runs: two queries each, up to ten runs)
        assert response.status_code == 200
    with django_assert_max_num_queries(len(small.captured_queries) + 4):
        assert curator_client.get(url, {"format": "csv"}).status_code == 200


def test_judge_sensitivity_pools_deepsynth_precision_like_the_leaderboard(curator_client):
    from scoring.models import EvaluationRun
    from tests.factories import SystemFactory

    judges = [JudgeConfigFactory(name="pooled judge"), JudgeConfigFactory(name="per-report judge")]
    systems = [SystemFactory(name="Alpha"), SystemFactory(name="Beta")]
    tasks = [TaskFactory(protocol="deepsynth", key=f"ds-sens-{t}") for t in range(3)]
    # (N_correct, N_incorrect) per system, task and judge: unequal mentions, so pooling matters
    counts = {0: [[(1, 3), (30, 2), (5, 5)], [(4, 4), (2, 0), (9, 1)]],
              1: [[(2, 2), (25, 5), (6, 4)], [(3, 5), (1, 1), (8, 2)]]}
    reports = {(s, t): ReportFactory(task=task, system=system)
               for s, system in enumerate(systems) for t, task in enumerate(tasks)}
    for j, judge in enumerate(judges):
        run = EvaluationRun.objects.create(name=f"sens {j}", protocol="deepsynth", judge_config=judge,
                                           status=EvaluationRun.Status.FINISHED)
        for s, system in enumerate(systems):
            for t in range(len(tasks)):
                correct, incorrect = counts[j][s][t]
                metrics = {"overall": 10.0 * (s + 1), "precision": 100 * correct / (correct + incorrect),
                           "correct": correct, "incorrect": incorrect, "omitted": 1,
                           "variants": {"group_score": "paper", "precision": ("pooled", "per_report")[j]}}
                ScoreCard.objects.create(run=run, system=system, report=reports[(s, t)],
                                         metrics=metrics, items_judged=correct + incorrect + 1)
    data = curator_client.get(reverse("dashboards:judge_sensitivity"), {
        "protocol": "deepsynth", "judge_a": judges[0].pk, "judge_b": judges[1].pk}).context["data"]
    entry = next(e for e in data["metrics"] if e["key"] == "precision")
    for row in entry["systems"]:
        s = [sy.pk for sy in systems].index(row["system_id"])
        a, b = np.array(counts[0][s], dtype=float), np.array(counts[1][s], dtype=float)
        assert row["a"] == pytest.approx(100 * a[:, 0].sum() / a.sum())  # judge A's runs: pooled (the paper's)
        assert row["b"] == pytest.approx(np.mean(100 * b[:, 0] / b.sum(axis=1)))  # judge B's runs: per report
