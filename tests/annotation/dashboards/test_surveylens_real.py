"""The real SurveyLens human annotations, imported as PairwisePreference rows."""

import json
import math
import re
import uuid
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.conf import settings
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.dashboards import agreement
from annotation.models import AnnotationItem, AnnotationProject, Label, PairwisePreference, ReportPair
from benchmark.importers.catalogue import run_import
from tests.annotation_factories import annotator, curator, members_add
from tests.factories import ReportFactory, SystemFactory, TaskFactory
from scoring import metrics as m
from tests.support.stats import bt_map

pytestmark = pytest.mark.django_db

SYSTEMS = {"Autosurvey", "Gemini", "SciSage", "SurveyForge", "SurveyX"}
SYSTEMS_BY_NAME = sorted(SYSTEMS)


def test_human_ranking_and_agreement_on_real_surveylens_preferences(curator_client, datasets):
    run_import("surveylens-annotations", datasets / "surveylens" / "human_annotation")
    assert PairwisePreference.objects.count() == 100
    response = curator_client.get(reverse("dashboards:human"))
    ranking = response.context["ranking"]
    assert ranking["n_comparisons"] == 100 and ranking["n_annotators"] == 2
    names = {s["system"].split(" ")[0] for s in ranking["systems"]}
    assert names == SYSTEMS
    assert all(math.isfinite(s["theta"]) and s["low"] <= s["theta"] <= s["high"] for s in ranking["systems"])
    records = _records(datasets)
    order = sorted({r["mapping"][side] for r in records for side in ("response_a_model", "response_b_model")})
    outcome = {"A_better": 1.0, "B_better": 0.0, "tie": 0.5}
    comparisons = [(order.index(r["mapping"]["response_a_model"]), order.index(r["mapping"]["response_b_model"]),
                    outcome[r["choice"]]) for r in records]
    expected = bt_map(comparisons, len(order), 0.0)  # not separable: the maximum-likelihood θ
    got = {s["system"]: s["theta"] for s in ranking["systems"]}
    assert not ranking["prior_used"] and ranking["estimator"] == "maximum likelihood"
    assert [got[n] for n in order] == pytest.approx(list(expected), abs=1e-5)
    # SurveyLens' released EloCalculator (scripts/evaluation/eval_preference.py at 342f6392, K 32, start 1500),
    # run on these records in labelling order: its output, recorded here
    upstream_elo = {"Autosurvey": 1460.6737276011465, "Gemini": 1726.173372634615, "SciSage": 1353.0763746072084,
                    "SurveyForge": 1676.4407173648162, "SurveyX": 1283.6358077922139}
    elo = {s["system"]: s["surveylens_elo"] for s in ranking["systems"]}
    assert elo == pytest.approx(upstream_elo, abs=1e-9)
    # Chatbot Arena's (K 4, start 1000) names a different best system on the same sequence
    arena = {s["system"]: s["arena_elo"] for s in ranking["systems"]}
    assert max(elo, key=elo.get) == "Gemini" and max(arena, key=arena.get) == "SurveyForge"
    # not separable as a whole (only some resamples are), and every record is its own item
    assert all("resamples are separable" in w for w in ranking["warnings"]) and ranking["n_items"] == 100
    doc = (Path(settings.BASE_DIR) / "docs" / "statistics.md").read_text(encoding="utf-8")
    quoted = re.search(r"SurveyLens outline ranking: (.+)\.\n", doc)
    assert quoted, "docs/statistics.md lost its worked ranking example"
    stated = dict(part.rsplit(" ", 1) for part in quoted.group(1).split(", "))
    assert {name: float(v) for name, v in stated.items()} == {n: round(t, 3) for n, t in zip(order, expected)}
    # SurveyLens reports alignment per discipline: one ranking per annotator's discipline
    by_discipline = curator_client.get(reverse("dashboards:human"), {"by": "discipline"}).context["ranking"]
    assert [g["n_comparisons"] for g in by_discipline["breakdown"]] == [50, 50]
    html = response.content.decode()
    for name in SYSTEMS:
        assert name in html
    # The two annotators (Biology, Environmental Science) judged different topics: no shared pair.
    agreement = curator_client.get(reverse("dashboards:agreement"))
    [imported] = agreement.context["imported"]
    assert imported["n"] == 100 and imported["n_shared"] == 0 and imported["n_annotators"] == 2
    assert "no pair was judged by more than one annotator" in agreement.content.decode()


def _records(datasets):
    folder = datasets / "surveylens" / "human_annotation"
    return [r for path in sorted(folder.glob("*.json")) for r in json.loads(path.read_text(encoding="utf-8"))["part_c"]]


def _outcome(record):
    """The choice as the outcome of the system pair ordered by name: whatever side each was shown on."""
    a, b = record["mapping"]["response_a_model"], record["mapping"]["response_b_model"]
    if record["choice"] == "tie":
        return "tie"
    return "first" if (a if record["choice"] == "A_better" else b) == min(a, b) else "second"


def test_agreement_of_the_two_annotators_on_the_same_items_is_coded_by_outcome(datasets):
    """Both annotator files rate items 1001–1050 with the same system pair per item id. As a pairwise
    project whose 50 items both annotators label (the second seeing every other pair with its
    sides swapped), κ must be that of the pair outcomes, not of the preferred reports' ids."""
    files = sorted((datasets / "surveylens" / "human_annotation").glob("*.json"))
    rated = [{r["id"]: r for r in json.loads(path.read_text(encoding="utf-8"))["part_c"]} for path in files]
    ids = sorted(rated[0])
    assert ids == sorted(rated[1]) and len(ids) == 50
    assert all(rated[0][i]["mapping"] == rated[1][i]["mapping"] for i in ids)
    owner = curator("boss")
    users = [annotator("biology-01"), annotator("envsci-02")]
    project = AnnotationProject.objects.create(name="surveylens outline pairs", kind="pairwise", overlap=2,
                                               created_by=owner, label_set={"choice": ["left", "right", "tie"]})
    members_add(project, owner, users)
    systems = {name: SystemFactory(name=name) for name in SYSTEMS_BY_NAME}  # ids follow the names' order
    labels = []
    for n, item_id in enumerate(ids):
        mapping = rated[0][item_id]["mapping"]
        task = TaskFactory(protocol="surveylens", key=f"outline-item-{item_id}")
        report = {side: ReportFactory(task=task, system=systems[mapping[f"response_{side}_model"]]) for side in "ab"}
        pair = ReportPair.objects.create(project=project, task=task, report_left=report["a"], report_right=report["b"])
        item = AnnotationItem.objects.create(project=project, target_kind="report_pair", target_id=pair.pk, task=task,
                                             position=n, labels_needed=2, labels_done=2,
                                             status=AnnotationItem.Status.COMPLETE)
        for k, user in enumerate(users):
            choice = {"A_better": "left", "B_better": "right", "tie": "tie"}[rated[k][item_id]["choice"]]
            left, right = report["a"].pk, report["b"].pk
            if k == 1 and n % 2:
                left, right, choice = right, left, {"left": "right", "right": "left", "tie": "tie"}[choice]
            labels.append(Label(project=project, item=item, annotator=user, client_token=str(uuid.uuid4()),
                                value={"choice": choice, "left_report_id": left, "right_report_id": right}))
    Label.objects.bulk_create(labels)
    [stats] = [p["stats"] for p in agreement.inter_annotator(user=owner)["projects"]]
    [pair] = stats["pairs"]
    a = [_outcome(rated[0][i]) for i in ids]
    b = [_outcome(rated[1][i]) for i in ids]
    assert pair["n"] == 50
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert pair["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    reliability = np.array([[{"first": 0, "second": 1, "tie": 2}[v] for v in row] for row in (a, b)], dtype=float)
    assert stats["alpha"] == pytest.approx(krippendorff.alpha(reliability, level_of_measurement="nominal"), abs=1e-12)
    assert pair["kappa_low"] < pair["kappa"] < pair["kappa_high"]
    # The numbers docs/statistics.md quotes for this example.
    doc = (Path(settings.BASE_DIR) / "docs" / "statistics.md").read_text(encoding="utf-8")
    quoted = re.search(r"SurveyLens outline agreement: κ = (\S+) \[(\S+), (\S+)\], observed agreement (\S+), "
                       r"n = (\d+); coded by preferred report κ = (\S+)", doc)
    assert quoted, "docs/statistics.md lost its worked agreement example"
    kappa, low, high, observed, n, before = quoted.groups()
    assert (float(kappa), float(low), float(high), float(observed), int(n)) == pytest.approx(
        (round(pair["kappa"], 3), round(pair["kappa_low"], 3), round(pair["kappa_high"], 3),
         round(pair["observed_agreement"], 3), 50))
    by_report = [f"{i}:{rated[k][i]['mapping']['response_' + ('a' if rated[k][i]['choice'] == 'A_better' else 'b') + '_model']}"
                 for k in range(2) for i in ids]
    assert float(before) == pytest.approx(round(cohen_kappa_score(by_report[:50], by_report[50:]), 3))
