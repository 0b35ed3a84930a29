"""Human position bias in pairwise preferences (issue #28 §4): first-shown vs second-shown wins,
ties, share and a two-sided binomial p-value, over the scope and per project; against
``scipy.stats.binomtest`` and counts made here from the released files."""

import json

import pytest
from django.urls import reverse
from scipy import stats

from annotation.dashboards.human_bias import binomial_two_sided_p
from annotation.models import AnnotationProject, PairwisePreference, ReportPair
from benchmark.importers.catalogue import run_import
from tests.annotation_factories import PreferenceFactory, annotator, curator, pairwise_project

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("k, n", [(0, 0), (0, 1), (3, 10), (5, 10), (55, 97), (29, 50), (100, 100), (1, 1000)])
def test_binomial_p_value_matches_scipy(k, n):
    if n == 0:
        assert binomial_two_sided_p(k, n) is None
        return
    assert binomial_two_sided_p(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-9, abs=1e-300)


def test_position_bias_on_the_released_surveylens_preferences(curator_client, datasets):
    folder = datasets / "surveylens" / "human_annotation"
    run_import("surveylens-annotations", folder)
    records = {p.stem: json.loads(p.read_text(encoding="utf-8"))["part_c"] for p in sorted(folder.glob("*.json"))}
    # response_a is the side shown first in the released study (the importer stores it as left)
    body = curator_client.get(reverse("api:dashboard-human")).json()["position_bias"]
    every = [r for rs in records.values() for r in rs]
    first = sum(r["choice"] == "A_better" for r in every)
    second = sum(r["choice"] == "B_better" for r in every)
    assert (body["first_shown_wins"], body["second_shown_wins"], body["ties"]) == (first, second, len(every) - first - second)
    assert (first, second) == (54, 46)
    assert body["share"] == pytest.approx(first / (first + second))
    assert body["p_value"] == pytest.approx(stats.binomtest(first, first + second).pvalue)
    envsci = curator_client.get(reverse("api:dashboard-human"), {"discipline": "Environmental Science"}).json()
    envsci_records = records["Annotator_EnvSci_02_outline_labels"]
    wins = sum(r["choice"] == "A_better" for r in envsci_records)
    assert envsci["position_bias"]["first_shown_wins"] == wins == 29
    assert envsci["position_bias"]["p_value"] == pytest.approx(stats.binomtest(29, 50).pvalue)
    [group] = envsci["position_bias"]["by_project"]  # imported: one group per source
    assert group["kind"] == "source" and group["n"] == 50


def test_position_bias_per_project_counts_ties_apart(curator_client):
    owner = curator("own")
    users = [annotator("pa"), annotator("pb")]
    project = pairwise_project(owner, users, n_tasks=1, name="bias check")
    other = pairwise_project(owner, users, n_tasks=1, name="other")
    choices = {project: ["left"] * 7 + ["right"] * 2 + ["tie"] * 3, other: ["right"] * 4}
    for proj, picks in choices.items():
        pair = ReportPair.objects.filter(project=proj).order_by("pk").first()
        for n, choice in enumerate(picks):
            PreferenceFactory(project=proj, choice=choice, annotator=users[n % 2], source="", task=pair.task,
                              report_left=pair.report_left, report_right=pair.report_right)
    body = curator_client.get(reverse("api:dashboard-human")).json()["position_bias"]
    assert (body["first_shown_wins"], body["second_shown_wins"], body["ties"]) == (7, 6, 3)
    by_name = {g["name"]: g for g in body["by_project"]}
    assert (by_name["bias check"]["first_shown_wins"], by_name["bias check"]["second_shown_wins"],
            by_name["bias check"]["ties"], by_name["bias check"]["n"]) == (7, 2, 3, 12)
    assert by_name["bias check"]["share"] == pytest.approx(7 / 9)
    assert by_name["bias check"]["p_value"] == pytest.approx(stats.binomtest(7, 9).pvalue)
    assert by_name["other"]["share"] == 0.0 and by_name["other"]["p_value"] == pytest.approx(stats.binomtest(0, 4).pvalue)
    scoped = curator_client.get(reverse("api:dashboard-human"), {"project": project.pk}).json()["position_bias"]
    assert scoped["n"] == 12 and [g["name"] for g in scoped["by_project"]] == ["bias check"]
    assert AnnotationProject.objects.count() == 2 and PairwisePreference.objects.count() == 16
