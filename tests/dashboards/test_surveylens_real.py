"""The real SurveyLens human annotations, imported as PairwisePreference rows."""

import math

import pytest
from django.urls import reverse

from annotation.models import PairwisePreference
from benchmark.importers.catalogue import run_import
from scoring import metrics as m

pytestmark = pytest.mark.django_db

SYSTEMS = {"Autosurvey", "Gemini", "SciSage", "SurveyForge", "SurveyX"}


def test_human_ranking_and_agreement_on_real_surveylens_preferences(curator_client, datasets):
    run_import("surveylens-annotations", datasets / "surveylens" / "human_annotation")
    assert PairwisePreference.objects.count() == 100
    response = curator_client.get(reverse("dashboards:human"))
    ranking = response.context["ranking"]
    assert ranking["n_comparisons"] == 100 and ranking["n_annotators"] == 2
    names = {s["system"].split(" ")[0] for s in ranking["systems"]}
    assert names == SYSTEMS
    assert all(math.isfinite(s["theta"]) and s["low"] <= s["theta"] <= s["high"] for s in ranking["systems"])
    rows = list(PairwisePreference.objects.order_by("pk").values_list(
        "report_left__system__name", "report_right__system__name", "choice"))
    order = sorted({n for r in rows for n in r[:2]})
    expected = m.bradley_terry([(order.index(a), order.index(b), {"left": 1, "right": 0, "tie": 0.5}[c]) for a, b, c in rows],
                               n_items=len(order))
    got = {s["system"]: s["theta"] for s in ranking["systems"]}
    assert [got[n] for n in order] == pytest.approx(list(expected), abs=1e-9)
    html = response.content.decode()
    for name in SYSTEMS:
        assert name in html
    # The two annotators (Biology, Environmental Science) judged different topics: no shared pair.
    agreement = curator_client.get(reverse("dashboards:agreement"))
    [imported] = agreement.context["imported"]
    assert imported["n"] == 100 and imported["n_shared"] == 0 and imported["n_annotators"] == 2
    assert "no pair was judged by more than one annotator" in agreement.content.decode()
