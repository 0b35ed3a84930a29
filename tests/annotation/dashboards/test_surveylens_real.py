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

from annotation.dashboards.inter_annotator import inter_annotator
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


def test_agreement_on_the_same_items_is_coded_by_outcome(datasets):
    """A same-item pair: the EnvSci annotator's 50 real outline preferences (each item one topic
    and one report pair) and a second annotator on exactly those items, who sees every other pair
    with its sides swapped and departs from the first on every fifth item (constructed: no
    released file has two annotators on one preference item; the two files share ids 1001–1050
    and system pairs but not topics). κ must be that of the pair outcomes, not of the preferred
    reports' ids; sklearn and krippendorff recompute it."""
    path = datasets / "surveylens" / "human_annotation" / "Annotator_EnvSci_02_outline_labels.json"
    rated = {r["id"]: r for r in json.loads(path.read_text(encoding="utf-8"))["part_c"]}
    ids = sorted(rated)
    assert len(ids) == 50 and len({rated[i]["prompt"] for i in ids}) == 5
    flip = {"A_better": "B_better", "B_better": "A_better", "tie": "tie"}
    second = {i: (flip[rated[i]["choice"]] if n % 5 == 4 else rated[i]["choice"]) for n, i in enumerate(ids)}
    owner = curator("boss")
    users = [annotator("envsci-02"), annotator("envsci-second")]
    project = AnnotationProject.objects.create(name="surveylens outline pairs", kind="pairwise", overlap=2,
                                               created_by=owner, label_set={"choice": ["left", "right", "tie"]})
    members_add(project, owner, users)
    systems = {name: SystemFactory(name=name) for name in SYSTEMS_BY_NAME}  # ids follow the names' order
    tasks = {topic: TaskFactory(protocol="surveylens", key=f"envsci-{k}")
             for k, topic in enumerate(sorted({rated[i]["prompt"] for i in ids}))}
    labels, reports = [], {}
    for n, item_id in enumerate(ids):
        record = rated[item_id]
        task = tasks[record["prompt"]]
        report = {}
        for side in "ab":  # one report per system and topic, shown in several pairs
            name = record["mapping"][f"response_{side}_model"]
            report[side] = reports.get((task.pk, name)) or reports.setdefault(
                (task.pk, name), ReportFactory(task=task, system=systems[name]))
        pair = ReportPair.objects.create(project=project, task=task, report_left=report["a"], report_right=report["b"])
        item = AnnotationItem.objects.create(project=project, target_kind="report_pair", target_id=pair.pk, task=task,
                                             position=n, labels_needed=2, labels_done=2,
                                             status=AnnotationItem.Status.COMPLETE)
        for k, (user, choice) in enumerate(zip(users, (record["choice"], second[item_id]))):
            choice = {"A_better": "left", "B_better": "right", "tie": "tie"}[choice]
            left, right = report["a"].pk, report["b"].pk
            if k == 1 and n % 2:
                left, right, choice = right, left, {"left": "right", "right": "left", "tie": "tie"}[choice]
            labels.append(Label(project=project, item=item, annotator=user, client_token=str(uuid.uuid4()),
                                value={"choice": choice, "left_report_id": left, "right_report_id": right}))
    Label.objects.bulk_create(labels)
    [stats] = [p["stats"] for p in inter_annotator(user=owner)["projects"]]
    [pair] = stats["pairs"]
    a = [_outcome(rated[i]) for i in ids]
    b = [_outcome({**rated[i], "choice": second[i]}) for i in ids]
    assert pair["n"] == 50
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert pair["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b))) == pytest.approx(0.8)
    reliability = np.array([[{"first": 0, "second": 1, "tie": 2}[v] for v in row] for row in (a, b)], dtype=float)
    assert stats["alpha"] == pytest.approx(krippendorff.alpha(reliability, level_of_measurement="nominal"), abs=1e-12)
    assert pair["kappa_low"] < pair["kappa"] < pair["kappa_high"]
    # The numbers docs/statistics.md quotes for this example.
    doc = (Path(settings.BASE_DIR) / "docs" / "statistics.md").read_text(encoding="utf-8")
    quoted = re.search(r"SurveyLens same-item agreement: κ = (\S+) \[(\S+), (\S+)\], observed agreement (\S+), "
                       r"n = (\d+); coded by preferred report κ = (-?\d\.\d+)", doc)
    assert quoted, "docs/statistics.md lost its worked agreement example"
    kappa, low, high, observed, n, by_report_kappa = quoted.groups()
    assert (float(kappa), float(low), float(high), float(observed), int(n)) == pytest.approx(
        (round(pair["kappa"], 3), round(pair["kappa_low"], 3), round(pair["kappa_high"], 3),
         round(pair["observed_agreement"], 3), 50))
    # coded by the preferred report's id instead (the app before): every report its own category
    preferred = [[f"{i}:{c['mapping']['response_' + ('a' if c['choice'] == 'A_better' else 'b') + '_model']}"
                  for i, c in ((i, {**rated[i], "choice": choice[i]}) for i in ids)]
                 for choice in ({i: rated[i]["choice"] for i in ids}, second)]
    assert float(by_report_kappa) == pytest.approx(round(cohen_kappa_score(*preferred), 3))
    # the only items both released annotators labelled: the 11 qualification questions (part_b)
    answers = [{q["question_id"]: q["selected_label"] for q in json.loads(f.read_text(encoding="utf-8"))["part_b"]}
               for f in sorted(path.parent.glob("*.json"))]
    assert sorted(answers[0]) == sorted(answers[1]) and len(answers[0]) == 11
    assert cohen_kappa_score([answers[0][q] for q in sorted(answers[0])], [answers[1][q] for q in sorted(answers[0])]) == 1.0
