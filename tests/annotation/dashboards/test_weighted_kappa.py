"""Weighted Cohen's κ beside α for ordinal label sets (issue #28 §2), against scikit-learn."""

import random
import uuid

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.dashboards.inter_annotator import inter_annotator
from annotation.dashboards import agreement
from annotation.models import AnnotationItem, AnnotationProject, Label
from scoring import metrics as m
from tests.annotation_factories import annotator, curator, members_add

pytestmark = pytest.mark.django_db

SCALE = ["poor", "fair", "good", "very good", "excellent"]


def test_ordinal_project_shows_linear_and_quadratic_kappa(db):
    owner = curator("ord-boss")
    users = [annotator("ord-a"), annotator("ord-b")]
    project = AnnotationProject.objects.create(name="ordinal", kind="agreement", overlap=2, created_by=owner,
                                               label_set={"label": SCALE}, label_level="ordinal")
    members_add(project, owner, users)
    rng = random.Random(3)
    items = AnnotationItem.objects.bulk_create(
        AnnotationItem(project=project, target_kind="nugget", target_id=n, position=n, labels_needed=2,
                       labels_done=2, status=AnnotationItem.Status.COMPLETE) for n in range(80))
    a, b = [], []
    for item in items:
        first = rng.choice([0, 2, 3, 4])  # "fair" is never the first annotator's: weights use the scale's positions
        second = min(4, max(0, first + rng.choice([-2, -1, 0, 0, 0, 1])))
        a.append(SCALE[first])
        b.append(SCALE[second])
    Label.objects.bulk_create([Label(project=project, item=item, annotator=user, client_token=uuid.uuid4(),
                                     value={"label": label})
                               for item, pair in zip(items, zip(a, b)) for user, label in zip(users, pair)])
    [found] = [p for p in inter_annotator(user=owner)["projects"] if p["id"] == project.pk]
    [pair] = found["stats"]["pairs"]
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    for weights in ("linear", "quadratic"):
        expected = cohen_kappa_score(a, b, weights=weights, labels=SCALE)
        assert pair[f"kappa_{weights}"] == pytest.approx(expected, abs=1e-12)
        assert pair[f"kappa_{weights}_low"] < pair[f"kappa_{weights}"] < pair[f"kappa_{weights}_high"]
    # near misses dominate: the weighted κ exceed the unweighted one
    assert pair["kappa_quadratic"] > pair["kappa_linear"] > pair["kappa"]


def test_nominal_projects_have_no_weighted_kappa(db):
    stats = agreement.agreement_stats({1: {"x": "a", "y": "b"}, 2: {"x": "a", "y": "a"}})
    assert "kappa_linear" not in stats["pairs"][0]


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_bootstrap_kappa_matches_sklearn_and_resamples_items(weights):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 5, 40)
    y = np.clip(x + rng.integers(-1, 2, 40), 0, 4)
    found = m.cohen_kappa_bootstrap(x.astype(float), y.astype(float), weights=weights, n_resamples=30, seed=4)
    assert found["kappa"] == pytest.approx(cohen_kappa_score(x, y, weights=weights, labels=range(5)), abs=1e-12)
    draws = np.random.default_rng(4)
    samples = []
    for _ in range(30):
        idx = draws.integers(0, 40, 40)
        samples.append(cohen_kappa_score(x[idx], y[idx], weights=weights, labels=range(5)))
    assert (found["low"], found["high"]) == pytest.approx(tuple(np.quantile(samples, [0.025, 0.975])))
    with pytest.raises(ValueError, match="numbers"):
        m.cohen_kappa_bootstrap(["a", "b"], ["a", "a"], weights=weights)
