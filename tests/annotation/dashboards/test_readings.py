"""Issue 38, dashboards that read themselves: a scope picker on every dashboard page, "human vs
automated" opening on a protocol with points, the one-line readings (κ, calibrated gain,
separable resamples) checked at their band edges and linked to docs/statistics.md as served,
and the human ranking saying when it pools project labels and imported files."""

import re

import pytest
from django.urls import reverse

from annotation.dashboards.views_reading import section_anchor
from annotation.templatetags.readings import gain_reading, kappa_reading, separable_reading
from tests.annotation.dashboards.builders import agreement_setup, deepsynth_run, preferences, run_tasks

pytestmark = pytest.mark.django_db
PAGES = ("leaderboard", "human", "agreement", "chart_verdicts", "chart_scores", "chart_human_vs_auto", "look_next",
         "chart_recall_quartiles", "chart_coverage_window", "chart_heatmap", "judge_sensitivity")


def test_kappa_readings_follow_landis_and_koch_and_say_the_prevalence_case():
    assert kappa_reading({"kappa": -0.1}).startswith("κ -0.10: worse than chance")
    assert kappa_reading({"kappa": 0.0, "n": 200}).startswith("κ 0.00: slight")
    assert "fair" in kappa_reading({"kappa": 0.2}) and "moderate" in kappa_reading({"kappa": 0.41})
    assert "substantial" in kappa_reading({"kappa": 0.61}) and "almost perfect" in kappa_reading({"kappa": 0.81})
    prevalence = kappa_reading({"kappa": 0.0, "accuracy": 0.9, "n": 100})
    assert "90% raw agreement comes from one label being far more common" in prevalence
    assert "only 12 labels" in kappa_reading({"kappa": 0.5, "n": 12})
    assert kappa_reading({"kappa": None}) == ""


def test_gain_and_separable_readings():
    assert gain_reading(1.0).startswith("×1.00: the judge adds (almost) nothing")
    assert "worth 2.5 times as many" in gain_reading(2.5)
    assert gain_reading(None) == ""
    assert separable_reading({"n_separable_resamples": 316, "n_resamples": 1000}).startswith(
        "316 of 1000 resamples (32%) are separable")
    assert "collect more between systems close" in separable_reading({"n_separable_resamples": 316, "n_resamples": 1000})
    assert "comparisons alone" in separable_reading({"n_separable_resamples": 0, "n_resamples": 1000})


@pytest.mark.parametrize("name", PAGES)
def test_every_dashboard_page_shows_a_scope_picker(curator_client, name):
    response = curator_client.get(reverse(f"dashboards:{name}"))
    assert response.status_code == 200 and 'data-role="scope-picker"' in response.content.decode(), name


def test_human_vs_automated_opens_on_the_protocol_that_has_points(curator_client):
    run, systems = deepsynth_run(n_tasks=3)
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run), source="")  # labelled in the app
    preferences(systems=systems[:2], n_tasks=2, source="surveylens")  # imported, no automated scores
    response = curator_client.get(reverse("dashboards:chart_human_vs_auto"))
    html = response.content.decode()
    assert response.context["protocol"] == "deepsynth" and response.context["corr"]["n"] == 3
    assert "<svg" in html and 'id="chart-empty"' not in html
    # the picker changes the protocol; a metric of another protocol is dropped, not shown empty by mistake
    other = curator_client.get(reverse("dashboards:chart_human_vs_auto"),
                               {"protocol": "surveylens", "metric": "deepsynth:overall"})
    assert "No system of the human preferences on surveylens tasks has automated scores" in other.content.decode()


def test_the_human_ranking_says_when_it_pools_project_labels_and_imported_files(curator_client):
    run, systems = deepsynth_run(n_tasks=3)
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run), source="")
    preferences(systems=systems, n_tasks=2, protocol="deepsynth", source="surveylens")
    pooled = curator_client.get(reverse("dashboards:human")).content.decode()
    assert 'data-role="mixed-sources"' in pooled and "projects and surveylens" in pooled
    assert 'data-role="reading"' in pooled and "resamples" in pooled
    one = curator_client.get(reverse("dashboards:human"), {"source": "surveylens"}).content.decode()
    assert 'data-role="mixed-sources"' not in one


def test_agreement_readings_and_label_scope(curator_client):
    agreement_setup(n_verdicts=6)
    html = curator_client.get(reverse("dashboards:agreement")).content.decode()
    readings = re.search(r'<ul class="db-readings" data-role="readings".*?</ul>', html, re.S).group(0)
    assert "κ " in readings and f'{reverse("dashboards:statistics")}#agreement' in readings
    imported = curator_client.get(reverse("dashboards:agreement"), {"labels": "imported"}).content.decode()
    assert 'id="judge-agreement"' not in imported and 'id="imp-title"' in imported


def test_the_statistics_page_has_the_anchors_the_readings_link_to(curator_client):
    html = curator_client.get(reverse("dashboards:statistics")).content.decode()
    for anchor in ("agreement", "human-ranking", "calibrated-scores"):
        assert f'id="{anchor}"' in html, anchor
    assert section_anchor("Human ranking (<code>/dashboards/human/</code>, …)") == "human-ranking"
    doc = html.split('id="statistics-doc"')[1].split("</article>")[0]
    assert "<script" not in doc and "<table>" in doc  # sanitized markdown, tables kept
