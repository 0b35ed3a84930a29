"""Inter-annotator agreement at a larger size: the streamed figures equal ``scoring.metrics`` called
directly on the same labels, with a bounded number of queries; stored, they are served until a change."""

import random
import uuid
from itertools import combinations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.dashboards import agreement
from annotation.dashboards.inter_annotator import inter_annotator
from annotation.services.agreement import agreement_statistics_settle
from annotation.models import AnnotationItem, AnnotationProject, Label
from scoring import metrics as m
from tests.annotation_factories import annotator, curator, members_add

N_ITEMS = 2_000
DECISIONS = ("accept", "accept", "accept", "reject", "edit")


def _project_with_labels(owner, users, *, kind, value_of, name, **fields):
    project = AnnotationProject.objects.create(name=name, kind=kind, overlap=len(users), created_by=owner, **fields)
    members_add(project, owner, users)
    items = AnnotationItem.objects.bulk_create(
        AnnotationItem(project=project, target_kind="nugget", target_id=n, position=n, labels_needed=len(users),
                       labels_done=len(users), status=AnnotationItem.Status.COMPLETE)
        for n in range(N_ITEMS))
    Label.objects.bulk_create(
        Label(project=project, item=item, annotator=user, value=value_of(n, k), client_token=uuid.uuid4())
        for n, item in enumerate(items) for k, user in enumerate(users))
    return project


def _direct(project, key_of, *, level):
    """The figures by ``scoring.metrics`` on the coders × items matrix read back from the rows."""
    users = sorted({u for u in Label.objects.filter(project=project).values_list("annotator__username", flat=True)})
    cells = {(i, u): key_of(v) for i, u, v in Label.objects.filter(project=project)
             .values_list("item_id", "annotator__username", "value")}
    items = sorted({i for i, _ in cells})
    rows = [[cells[(i, u)] for i in items] for u in users]
    cats = sorted({v for row in rows for v in row}, key=str)
    table = np.array([[sum(row[j] == c for row in rows) for c in cats] for j in range(len(items))])
    return {
        "alpha": m.krippendorff_alpha(np.array(rows, dtype=object if level == "nominal" else float), level=level),
        "fleiss": m.fleiss_kappa(table),
        "pairs": {(a, b): m.cohen_kappa(rows[i], rows[j]) for (i, a), (j, b) in combinations(enumerate(users), 2)},
        "observed": {(a, b): np.mean([x == y for x, y in zip(rows[i], rows[j])])
                     for (i, a), (j, b) in combinations(enumerate(users), 2)},
    }


def _check(stats, direct, *, n_annotators, level):
    assert stats["n_units"] == stats["n_pairable"] == N_ITEMS
    assert stats["n_labels"] == N_ITEMS * n_annotators and stats["n_annotators"] == n_annotators
    assert stats["level"] == level
    assert stats["alpha"] == pytest.approx(direct["alpha"], rel=1e-9)
    assert stats["fleiss"] == pytest.approx(direct["fleiss"], rel=1e-9)
    assert {(p["a"], p["b"]): p["kappa"] for p in stats["pairs"]} == pytest.approx(direct["pairs"], rel=1e-9)
    assert all(p["n"] == N_ITEMS for p in stats["pairs"])
    assert {(p["a"], p["b"]): p["observed_agreement"] for p in stats["pairs"]} == pytest.approx(direct["observed"])
    assert all(p["kappa_low"] < p["kappa"] < p["kappa_high"] for p in stats["pairs"])
    assert stats["alpha_low"] < stats["alpha"] < stats["alpha_high"]


def test_inter_annotator_at_2000_items_equals_direct_metrics_with_bounded_queries(db, monkeypatch):
    monkeypatch.setattr("annotation.dashboards.inter_annotator.INLINE_LABELS", 10_000)  # computed in the read
    owner = curator("scale-boss")
    users = [annotator(f"scale-{n}") for n in (3, 1, 2)]  # created out of name order
    rng = random.Random(7)
    verify_values = {}

    def verify_value(n, k):
        decision = rng.choice(DECISIONS)
        value = {"decision": decision, "edits": {"text": f"fix {rng.randrange(3)}"}} if decision == "edit" else {
            "decision": decision, "reason": "duplicate" if decision == "reject" else ""}
        verify_values[(n, k)] = value
        return value

    verify = _project_with_labels(owner, users, kind="verify", value_of=verify_value, name="scale verify")
    # Declared ordinal, ranked as the label set lists them: "0" < "1" < "2".
    grades = _project_with_labels(owner, users, kind="agreement", name="scale grades", label_level="ordinal",
                                  label_set={"label": ["0", "1", "2"]},
                                  value_of=lambda n, k: {"label": str(rng.choice((0, 1, 1, 2)))})

    with CaptureQueriesContext(connection) as cold:
        figures = inter_annotator(user=owner)
    # the projects with their label counters and stored figures (none yet), per project its
    # newest label and one streamed query of its labels, the names (the user's role came with
    # the user: ``core.authentication``)
    assert len(cold.captured_queries) == 1 + 2 * (1 + 1) + 1
    by_name = {p["name"]: p["stats"] for p in figures["projects"]}
    verify_key = lambda v: agreement._label_key("verify", v)  # noqa: E731
    _check(by_name["scale verify"], _direct(verify, verify_key, level="nominal"), n_annotators=3, level="nominal")
    assert len({verify_key(v) for v in verify_values.values()}) == 5  # accept, reject and three distinct edits
    _check(by_name["scale grades"], _direct(grades, lambda v: float(v["label"]), level="ordinal"),
           n_annotators=3, level="ordinal")
    assert [(p["a"], p["b"]) for p in by_name["scale verify"]["pairs"]] == [
        ("scale-1", "scale-2"), ("scale-1", "scale-3"), ("scale-2", "scale-3")]
    assert {p["statistics"]["state"] for p in figures["projects"]} == {"current"}
    agreement_statistics_settle(figures)  # what the page does with what it read: stores the figures

    # unchanged: served as stored, no query of the labels
    with CaptureQueriesContext(connection) as warm:
        again = inter_annotator(user=owner)
    assert again["projects"] == figures["projects"] and not again["computed_here"]
    assert len(warm.captured_queries) == 1 + 2 + 1
    assert not any('"annotation_label"."item_id"' in q["sql"] for q in warm.captured_queries)

    # one label more (a fourth annotator on one item): new figures, computed afresh
    extra = annotator("scale-4")
    item = AnnotationItem.objects.filter(project=verify).order_by("position").first()
    # the item's counter moves with its labels, as ``label_submit`` and the undo keep it
    AnnotationItem.objects.filter(pk=item.pk).update(labels_needed=4, labels_done=4)
    Label.objects.create(project=verify, item=item, annotator=extra, value={"decision": "reject", "reason": "other",
                                                                          "note": "n"}, client_token=uuid.uuid4())
    stats = {p["name"]: p["stats"] for p in inter_annotator(user=owner)["projects"]}["scale verify"]
    assert stats["n_labels"] == 3 * N_ITEMS + 1 and stats["n_annotators"] == 4
    assert stats["fleiss"] is None and stats["fleiss_note"] == "items have different numbers of labels"
    cells = {(i, u): verify_key(v) for i, u, v in Label.objects.filter(project=verify)
             .values_list("item_id", "annotator__username", "value")}
    names = sorted({u for _, u in cells})
    items = sorted({i for i, _ in cells})
    matrix = np.array([[cells.get((i, u)) for i in items] for u in names], dtype=object)
    assert stats["alpha"] == pytest.approx(m.krippendorff_alpha(matrix, level="nominal"), rel=1e-9)
    assert [p["n"] for p in stats["pairs"] if "scale-4" in (p["a"], p["b"])] == [1, 1, 1]
    # deleting that label brings back the stored figures (count and newest id together detect it)
    Label.objects.filter(annotator=extra).delete()
    AnnotationItem.objects.filter(pk=item.pk).update(labels_done=3)
    assert inter_annotator(user=owner)["projects"] == figures["projects"]
