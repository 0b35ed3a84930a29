"""Dashboard pages: every number checked against ``scoring.metrics`` run on the same stored rows."""

import csv
import io
import math
from collections import Counter, defaultdict

import numpy as np
import pytest
from django.urls import reverse
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score

from annotation.models import GoldLabel, Label, PairwisePreference
from scoring import metrics as m
from scoring.models import ScoreCard, Verdict
from tests.annotation.dashboards.builders import agreement_setup, deepsynth_run, preferences, run_tasks
from tests.support.stats import bt_map

pytestmark = pytest.mark.django_db

URLS = ("leaderboard", "human", "agreement", "chart_verdicts", "chart_scores", "chart_human_vs_auto")


def vec_mean(a):
    return np.mean(a, axis=-1)


def vec_pooled_percent(a):
    """100 · Σ correct / Σ mentioned over the task axis of (resamples, tasks, 2) count rows."""
    return 100 * a[..., 0].sum(axis=-1) / a.sum(axis=(-1, -2))


def csv_rows(response):
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.parametrize("name", URLS)
def test_login_required(client, name):
    response = client.get(reverse(f"dashboards:{name}"))
    assert response.status_code == 302 and "/login/" in response["Location"]


EMPTY_STATES = {
    "index": "No evaluation run is running.",
    "leaderboard": "No report-level score card for DeepSynth-Eval yet",
    "human": "No pairwise preference matches these filters.",
    "agreement": "No labelled judge verdict yet",
    "chart_verdicts": "No data for this chart yet.",
    "chart_scores": "No data for this chart yet.",
    "chart_human_vs_auto": "No data for this chart yet.",
}


def test_empty_database_renders_every_page(curator_client):
    assert set(EMPTY_STATES) == {"index", *URLS}
    for name, says in EMPTY_STATES.items():
        response = curator_client.get(reverse(f"dashboards:{name}"))
        assert response.status_code == 200, name
        assert says in response.content.decode(), name


def test_leaderboard_matches_metrics_on_report_cards(curator_client):
    run, systems = deepsynth_run(n_tasks=6)
    response = curator_client.get(reverse("dashboards:leaderboard"), {"protocol": "deepsynth"})
    assert response.status_code == 200
    board = response.context["board"]
    assert [metric["key"] for metric in board["metrics"]] == ["overall", "general", "constraint", "precision"]
    # Expected, from the stored report-level cards (system-level cards, report null, are not used).
    per_system = defaultdict(lambda: defaultdict(dict))
    mentions = defaultdict(list)
    for card in ScoreCard.objects.filter(run=run, report__isnull=False).select_related("report"):
        for key in ("overall", "general", "constraint", "precision"):
            if card.metrics.get(key) is not None:
                per_system[card.system_id][key][card.report.task_id] = card.metrics[key]
        mentions[card.system_id].append((card.metrics["correct"], card.metrics["incorrect"]))
    rows = {row["system_id"]: row for row in board["rows"]}
    for system in systems:
        for cell in rows[system.pk]["cells"]:
            if cell["metric"] == "precision":  # DeepSynth eq. 7 pooled over the system's mentioned items
                counts = np.array(mentions[system.pk], dtype=float)
                expected = m.bootstrap_ci(vec_pooled_percent, counts, n_resamples=1000, seed=0, vectorized=True)
                assert cell["estimate"] == pytest.approx(100 * counts[:, 0].sum() / counts.sum())
                assert (cell["low"], cell["high"]) == pytest.approx((expected["low"], expected["high"]))
                assert cell["n_tasks"] == len(counts) and cell["pooled"]
                continue
            values = np.array(list(per_system[system.pk][cell["metric"]].values()))
            expected = m.bootstrap_ci(vec_mean, values, n_resamples=1000, seed=0, vectorized=True)
            assert cell["estimate"] == pytest.approx(values.mean())
            assert (cell["low"], cell["high"]) == pytest.approx((expected["low"], expected["high"]))
            assert cell["n_tasks"] == len(values)
        assert rows[system.pk]["n_tasks"] == 6
        assert rows[system.pk]["items_judged"] == 72
    # the first system lacks one constraint score
    first = next(c for c in rows[systems[0].pk]["cells"] if c["metric"] == "constraint")
    assert first["n_tasks"] == 5
    # best vs second: paired t-test over shared tasks
    ordered = sorted(systems, key=lambda s: -np.mean(list(per_system[s.pk]["overall"].values())))
    best, second = ordered[0], ordered[1]
    assert board["rows"][0]["system_id"] == best.pk
    shared = sorted(set(per_system[best.pk]["overall"]) & set(per_system[second.pk]["overall"]))
    test = m.paired_t_test([per_system[best.pk]["overall"][t] for t in shared],
                           [per_system[second.pk]["overall"][t] for t in shared])
    assert board["tests"]["overall"]["p_value"] == pytest.approx(test["p_value"])
    assert test["p_value"] < 0.05  # the builder's best system is 15 points ahead
    # Holm across the table's metrics: sorted raw p-values times (m − rank), made monotone
    raw = {k: t["p_value"] for k, t in board["tests"].items() if t and t["p_value"] is not None}
    order = sorted(raw, key=raw.get)
    holm, running = {}, 0.0
    for rank, key in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * raw[key]))
        holm[key] = running
    assert {k: board["tests"][k]["p_holm"] for k in raw} == pytest.approx(holm)
    for key, adjusted in holm.items():
        best_cell = next(c for c in board["rows"][0]["cells"] if c["metric"] == key)
        assert best_cell["significant"] == (adjusted < 0.05 and board["tests"][key]["best"] == board["rows"][0]["system_id"]
                                            and board["tests"][key]["mean_difference"] > 0)
    best_cell = next(c for c in board["rows"][0]["cells"] if c["metric"] == "overall")
    assert best_cell["significant"] and holm["overall"] < 0.05
    html = response.content.decode()
    assert f"{np.mean(list(per_system[best.pk]['overall'].values())):.1f}" in html
    assert "▲" in html and "Human ranking" in html


def test_leaderboard_precision_is_the_mean_of_task_values_for_per_report_runs(curator_client):
    run, systems = deepsynth_run(n_tasks=5, precision_variant="per_report")
    board = curator_client.get(reverse("dashboards:leaderboard"), {"protocol": "deepsynth"}).context["board"]
    for row in board["rows"]:
        cards = ScoreCard.objects.filter(run=run, system_id=row["system_id"], report__isnull=False)
        values = np.array([card.metrics["precision"] for card in cards])
        counts = np.array([(card.metrics["correct"], card.metrics["incorrect"]) for card in cards], dtype=float)
        cell = next(c for c in row["cells"] if c["metric"] == "precision")
        assert cell["estimate"] == pytest.approx(values.mean())
        assert cell["estimate"] != pytest.approx(100 * counts[:, 0].sum() / counts.sum())
        assert "pooled" not in cell


def test_leaderboard_without_significant_gap_has_no_mark(curator_client):
    run, systems = deepsynth_run(n_tasks=6)
    ScoreCard.objects.filter(report__isnull=False).update(metrics={"overall": 50.0})
    board = curator_client.get(reverse("dashboards:leaderboard")).context["board"]
    assert board["tests"]["overall"]["p_value"] is None and board["tests"]["overall"]["n_shared"] == 6
    assert not any(cell["significant"] for row in board["rows"] for cell in row["cells"])


def test_no_best_vs_second_test_on_fewer_than_five_tasks(curator_client):
    deepsynth_run(n_tasks=4)
    response = curator_client.get(reverse("dashboards:leaderboard"))
    test = response.context["board"]["tests"]["overall"]
    assert test["n_shared"] == 4 and test["p_value"] is None and not test["significant"]
    assert "not tested: fewer than 5 shared tasks" in response.content.decode()


def test_leaderboard_filters_by_run_and_takes_newest_card(curator_client):
    run_a, systems = deepsynth_run(n_tasks=3, name="run A")
    run_b, _ = deepsynth_run(n_tasks=3, systems=systems, name="run B")
    all_board = curator_client.get(reverse("dashboards:leaderboard")).context["board"]
    assert all_board["n_runs"] == 2 and all_board["rows"][0]["n_tasks"] == 6
    only_a = curator_client.get(reverse("dashboards:leaderboard"), {"run": run_a.pk}).context["board"]
    assert only_a["n_runs"] == 1 and only_a["rows"][0]["n_tasks"] == 3


def test_leaderboard_csv(curator_client):
    run, systems = deepsynth_run(n_tasks=4)
    rows = csv_rows(curator_client.get(reverse("dashboards:leaderboard"), {"protocol": "deepsynth", "format": "csv"}))
    assert len(rows) == 3 * 4
    overall = {r["system"]: r for r in rows if r["metric"] == "overall"}
    for system in systems:
        values = [c.metrics["overall"] for c in ScoreCard.objects.filter(system=system, report__isnull=False)]
        assert float(overall[system.name]["mean"]) == pytest.approx(np.mean(values))
        assert overall[system.name]["tasks"] == "4"


def test_human_ranking_matches_bradley_terry(curator_client):
    run, systems = deepsynth_run(n_tasks=5, systems=None)
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run))
    preferences(systems=systems, n_tasks=2, source="elsewhere")  # surveylens tasks: outside the deepsynth scope
    response = curator_client.get(reverse("dashboards:human"), {"protocol": "deepsynth"})
    ranking = response.context["ranking"]
    rows = list(PairwisePreference.objects.filter(task__protocol="deepsynth").order_by("pk").values_list(
        "report_left__system__name", "report_right__system__name", "choice", "task_id", "report_left_id",
        "report_right_id"))
    names = sorted({n for r in rows for n in r[:2]})
    comparisons = [(names.index(a), names.index(b), {"left": 1, "right": 0, "tie": 0.5}[c]) for a, b, c, *_ in rows]
    theta = bt_map(comparisons, len(names), 0.0)  # not separable: the maximum-likelihood θ
    got = {s["system"]: s for s in ranking["systems"]}
    assert ranking["n_comparisons"] == len(rows) == 5 * 3 * 2 and ranking["n_items"] == 5 * 3
    assert ranking["scope"]["protocol"] == "deepsynth"
    # every system won and lost somewhere; only some resamples of the 15 items are separable
    assert [w.split(" of ")[1] for w in ranking["warnings"]] == ["1000 resamples are separable: the interval leans on the prior there"]
    assert 0 < ranking["n_separable_resamples"] < 1000
    for i, name in enumerate(names):
        assert got[name]["theta"] == pytest.approx(theta[i], abs=1e-5)
        assert got[name]["low"] < got[name]["theta"] < got[name]["high"]
        assert got[name]["bt_elo_scale"] == pytest.approx(1000 + 400 * theta[i] / np.log(10), abs=1e-3)
    # The two annotators' comparisons of one item are resampled together.
    items = [(t, min(a, b), max(a, b)) for *_, t, a, b in rows]
    boot = m.bradley_terry_clustered(comparisons, clusters=items, n_items=len(names), n_resamples=1000, seed=0)
    assert [got[n]["low"] for n in names] == pytest.approx(list(boot["low"]))
    ranks = m.rank_with_ci(boot["low"], boot["high"])
    assert [got[n]["rank"] for n in names] == list(ranks)
    # correlation with each of the protocol's own metrics over the shared systems (SurveyLens Table 7)
    corr = {c["metric"]: c for c in ranking["correlations"]}
    assert set(corr) == {"overall", "general", "constraint", "precision"}
    assert {c["protocol"] for c in ranking["correlations"]} == {"deepsynth"}
    theta_of = [got[s.name]["theta"] for s in systems]
    means = [np.mean([c.metrics["general"] for c in ScoreCard.objects.filter(system=s, report__isnull=False)])
             for s in systems]
    assert corr["general"]["n"] == 3
    assert corr["general"]["spearman"]["rho"] == pytest.approx(spearmanr(theta_of, means).statistic)
    assert corr["general"]["kendall"]["tau"] == pytest.approx(kendalltau(theta_of, means).statistic)
    assert "Spearman" in response.content.decode()
    csv_ = csv_rows(curator_client.get(reverse("dashboards:human"), {"protocol": "deepsynth", "format": "csv"}))
    assert {r["system"] for r in csv_} == set(names)
    unscoped = curator_client.get(reverse("dashboards:human")).context["ranking"]
    assert unscoped["n_comparisons"] == len(rows) + 2 * 3 * 2 and not unscoped["correlations"]


def test_human_ranking_warns_about_separation_and_views_per_annotator(curator_client):
    run, systems = deepsynth_run(n_tasks=2, systems=None)
    for pref in preferences(systems=systems, n_tasks=3, protocol="deepsynth"):
        # the last system wins every comparison it is in
        best = systems[-1]
        if best.pk in (pref.report_left.system_id, pref.report_right.system_id):
            pref.choice = "left" if pref.report_left.system_id == best.pk else "right"
            pref.save(update_fields=["choice"])
    response = curator_client.get(reverse("dashboards:human"), {"protocol": "deepsynth", "by": "annotator"})
    ranking = response.context["ranking"]
    assert any(w.startswith(f"{systems[-1].name} never lost") for w in ranking["warnings"])
    assert ranking["n_separable_resamples"] == ranking["n_resamples"] == 1000
    top = ranking["systems"][0]
    assert top["system"] == systems[-1].name and top["theta"] < 5 and top["high"] - top["low"] > 2
    assert [g["group"] for g in ranking["breakdown"]] == ["ann-a", "ann-b"]
    assert [g["n_comparisons"] for g in ranking["breakdown"]] == [9, 9]
    assert "never lost a comparison" in response.content.decode()


def test_judge_agreement_and_inter_annotator_numbers(curator_client):
    project, owner, users = agreement_setup(n_verdicts=6)
    response = curator_client.get(reverse("dashboards:agreement"))
    assert response.status_code == 200
    [group] = response.context["judge"]["groups"]
    # Independent reference labels: gold if any, else the unanimous annotator label.
    labels = defaultdict(list)
    for item_id, value in Label.objects.filter(project=project).values_list("item_id", "value"):
        labels[item_id].append(value["label"])
    gold = dict(GoldLabel.objects.filter(item__project=project).values_list("item_id", "value"))
    judge_of = dict(Verdict.objects.values_list("pk", "label"))
    judged, reference, unresolved = [], [], 0
    for item in project.items.order_by("position", "id"):
        if item.pk in gold:
            ref = gold[item.pk]["label"]
        elif len(set(labels[item.pk])) == 1:
            ref = labels[item.pk][0]
        else:
            unresolved += 1
            continue
        judged.append(judge_of[item.target_id])
        reference.append(ref)
    assert group["n"] == len(judged) and group["unresolved"] == unresolved == 1
    assert group["accuracy"] == pytest.approx(m.percent_agreement(judged, reference))
    assert group["kappa"] == pytest.approx(m.cohen_kappa(judged, reference))
    assert group["alpha"] == pytest.approx(m.krippendorff_alpha([judged, reference], level="nominal"))
    confusion = Counter(zip(judged, reference))
    for row in group["confusion"]["rows"]:
        for label, n in zip(group["confusion"]["labels"], row["counts"]):
            assert n == confusion[(row["label"], label)]
    assert group["n_disagreements"] == sum(1 for a, b in zip(judged, reference) if a != b)
    html = response.content.decode()
    first = group["disagreements"][0]
    assert reverse("annotation:item", args=[first["project_id"], first["item_id"]]) in html
    # inter-annotator agreement of the two annotators
    [iaa] = [p for p in response.context["iaa"]["projects"] if p["id"] == project.pk]
    items = sorted(labels)
    a = [Label.objects.get(item_id=i, annotator=users[0]).value["label"] for i in items]
    b = [Label.objects.get(item_id=i, annotator=users[1]).value["label"] for i in items]
    assert iaa["stats"]["alpha"] == pytest.approx(m.krippendorff_alpha([a, b], level="nominal"))
    cats = sorted(set(a) | set(b))
    counts = np.array([[(x == c) + (y == c) for c in cats] for x, y in zip(a, b)])
    assert iaa["stats"]["fleiss"] == pytest.approx(m.fleiss_kappa(counts))
    [pair] = iaa["stats"]["pairs"]
    assert pair["kappa"] == pytest.approx(m.cohen_kappa(a, b))
    assert pair["reading"] == m.landis_koch(m.cohen_kappa(a, b))
    assert m.landis_koch(m.cohen_kappa(a, b)) in html


def test_agreement_names_steps_in_words(curator_client):
    from tests.annotation_factories import submit_held as label_submit
    from tests.annotation_factories import annotator, curator, deepscholar_agreement_project, token

    alice = annotator("alice")
    project = deepscholar_agreement_project(curator("owner"), [alice])
    item = project.items.filter(target_id__in=Verdict.objects.filter(
        step="deepscholar.citation_support").values("pk")).first()
    label_submit(item=item, annotator=alice, value={"label": "support"}, client_token=token())
    html = curator_client.get(reverse("dashboards:agreement")).content.decode()
    assert '<span title="deepscholar.citation_support">DeepScholar-bench: citation support</span>' in html
    assert "<code>deepscholar.citation_support</code>" not in html


def test_agreement_hidden_from_non_curators(client):
    project, owner, users = agreement_setup(n_verdicts=3)
    client.force_login(users[0])
    response = client.get(reverse("dashboards:agreement"))
    assert response.context["judge"]["groups"] == [] and response.context["iaa"]["projects"] == []


def test_imported_preferences_agreement_when_pairs_coincide(curator_client):
    run, systems = deepsynth_run(n_tasks=2)
    prefs = preferences(systems=systems, n_tasks=3)
    # the second annotator saw every pair with its sides swapped: the same judgement, coded the same
    for pref in prefs[1::2]:
        pref.report_left, pref.report_right = pref.report_right, pref.report_left
        pref.choice = {"left": "right", "right": "left", "tie": "tie"}[pref.choice]
        pref.save()
    [imported] = curator_client.get(reverse("dashboards:agreement")).context["imported"]
    assert imported["n_shared"] == 9 and imported["n_annotators"] == 2
    by_pair = defaultdict(dict)
    for pref in PairwisePreference.objects.select_related("report_left", "report_right"):
        left, right = pref.report_left.system_id, pref.report_right.system_id
        winner = {"left": left, "right": right}.get(pref.choice)
        outcome = "tie" if winner is None else ("first" if winner == min(left, right) else "second")
        by_pair[(pref.task_id, frozenset((pref.report_left_id, pref.report_right_id)))][pref.annotator_id] = outcome
    annotators = sorted({a for v in by_pair.values() for a in v})
    a = [v[annotators[0]] for v in by_pair.values()]
    b = [v[annotators[1]] for v in by_pair.values()]
    [pair] = imported["stats"]["pairs"]
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b))
    assert pair["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b))) and pair["n"] == 9


def test_verdict_chart_counts_and_csv(curator_client):
    run, systems = deepsynth_run(n_tasks=3)
    Verdict.objects.filter(pk=Verdict.objects.first().pk).update(label="", error="timeout")
    response = curator_client.get(reverse("dashboards:chart_verdicts"), {"protocol": "deepsynth", "run": run.pk})
    html = response.content.decode()
    assert '<svg' in html and 'role="img"' in html
    expected = Counter()
    for name, label, error in Verdict.objects.values_list("report__system__name", "label", "error"):
        expected[(name, "(failed)" if error else label)] += 1
    for row in response.context["data"]["rows"]:
        for part in row["counts"]:
            assert part["n"] == expected[(row["system"], part["label"])]
            assert f'{row["system"]} — {part["label"]}: {part["n"]} of' in html or part["n"] == 0
    rows = csv_rows(curator_client.get(reverse("dashboards:chart_verdicts"), {"protocol": "deepsynth", "format": "csv"}))
    assert sum(int(r["count"]) for r in rows) == Verdict.objects.count()


def test_score_chart_points_and_csv(curator_client):
    run, systems = deepsynth_run(n_tasks=4)
    response = curator_client.get(reverse("dashboards:chart_scores"), {"protocol": "deepsynth", "metric": "precision"})
    assert response.context["metric"] == "precision"
    html = response.content.decode()
    assert html.count("<circle") == 12
    rows = csv_rows(curator_client.get(reverse("dashboards:chart_scores"),
                                       {"protocol": "deepsynth", "metric": "precision", "format": "csv"}))
    stored = sorted(c.metrics["precision"] for c in ScoreCard.objects.filter(report__isnull=False))
    assert sorted(float(r["precision"]) for r in rows) == pytest.approx(stored)


def test_human_vs_automated_scatter(curator_client):
    run, systems = deepsynth_run(n_tasks=3)
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run))
    response = curator_client.get(reverse("dashboards:chart_human_vs_auto"), {"metric": "deepsynth:overall"})
    corr = response.context["corr"]
    assert corr["metric"] == "overall" and corr["n"] == 3
    assert "<svg" in response.content.decode()
    rows = csv_rows(curator_client.get(reverse("dashboards:chart_human_vs_auto"),
                                       {"metric": "deepsynth:overall", "format": "csv"}))
    assert {r["system"] for r in rows} == {s.name for s in systems}
    for r in rows:
        assert math.isfinite(float(r["human_bt_theta"]))


def _populate(scale: int, tag: str = ""):
    run, systems = deepsynth_run(n_tasks=2 * scale, name=f"run {scale}{tag}")
    preferences(systems=systems, n_tasks=scale, source=f"src-{scale}{tag}")
    return run


@pytest.mark.parametrize("name", URLS)
def test_query_count_does_not_grow_with_rows(curator_client, django_assert_max_num_queries, name):
    run = _populate(1)
    agreement_setup(n_verdicts=3)
    url = reverse(f"dashboards:{name}")
    params = {"protocol": "deepsynth"}
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        assert curator_client.get(url, params).status_code == 200
    # five times the rows
    for n in range(2):  # several times the rows
        _populate(2, tag=f"-{n}")
    with django_assert_max_num_queries(len(small.captured_queries)):
        assert curator_client.get(url, params).status_code == 200
    with django_assert_max_num_queries(13):  # one of them: annotation.middleware's blind check
        curator_client.get(url, {**params, "run": run.pk})


def test_leaderboard_columns_are_the_protocols_headline_metrics_not_its_counts(curator_client):
    from scoring.metric_names import headline_metrics

    run, systems = deepsynth_run(n_tasks=2)
    stored = {"overall": 50.0, "general": 40.0, "constraint": 60.0, "precision": 90.0, "groups_scored": 3,
              "items_per_group": 4.0}
    ScoreCard.objects.filter(report__isnull=False).update(metrics=stored)
    board = curator_client.get(reverse("dashboards:leaderboard")).context["board"]
    assert [c["key"] for c in board["metrics"]] == ["overall", "general", "constraint", "precision"]
    keys = ["entries_outline", "quality_language", "reference_f1", "quality_mean", "tau_outline", "quality_critical",
            "win_rate_vs_human", "reference_tp"]
    assert headline_metrics("surveyscope", keys) == [
        "reference_tp", "reference_f1", "quality_mean", "quality_language", "quality_critical", "win_rate_vs_human"]
    # SciSage Table 4's order of its quality columns (Language, Critical, Section, Document), then the task's own
    keys = sorted(["quality_structure", "quality_section_structure", "quality_depth", "quality_critical",
                   "quality_language", "reference_tp"])
    assert headline_metrics("surveyscope", keys) == [
        "reference_tp", "quality_language", "quality_critical", "quality_section_structure", "quality_structure",
        "quality_depth"]
    assert headline_metrics("unknown", ["b", "a"]) == ["b", "a"]  # no headline list: every metric
