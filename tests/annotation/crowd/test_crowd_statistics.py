"""Agreement figures of a crowd study: attention checks never count, and the figures are given
also without the annotators the checks flag — checked against Krippendorff's α computed here
from its definition (coincidence matrix, NumPy), not by the app's functions."""

import numpy as np
import pytest

from annotation.crowd.services import attention_check_set, crowd_join, crowd_study_set
from annotation.dashboards.agreement import curated_projects
from annotation.dashboards.inter_annotator import agreement_compute
from annotation.models import AnnotationItem
from tests.annotation_factories import agreement_project, label_all

pytestmark = pytest.mark.django_db

LABELS = ("correct", "omitted", "incorrect")


def alpha_nominal(units: list[list[str]]) -> float:
    """Krippendorff's α, nominal: 1 − D_o/D_e over the coincidence matrix of units with ≥ 2 values."""
    codes = {c: i for i, c in enumerate(sorted({v for unit in units for v in unit}))}
    o = np.zeros((len(codes), len(codes)))
    for unit in units:
        if len(unit) < 2:
            continue
        for i, a in enumerate(unit):
            for j, b in enumerate(unit):
                if i != j:
                    o[codes[a], codes[b]] += 1 / (len(unit) - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = (o.sum() - np.trace(o)) / n
    d_e = (n * n - (n_c ** 2).sum()) / (n * (n - 1))
    return 1 - d_o / d_e


def test_agreement_without_checks_and_without_flagged_annotators(owner):
    project = agreement_project(owner, [], labels=("correct", "omitted", "correct", "incorrect", "omitted"),
                                overlap=3, name="crowd verdicts")
    study = crowd_study_set(project=project, actor=owner, quota=5, check_rate=0.2)
    workers = [crowd_join(study=study, worker_id=f"w{n}")[0].user for n in range(3)]
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    check, regular = items[-1], items[:-1]
    attention_check_set(project=project, item_id=check.pk, expected={"label": "omitted"}, actor=owner)
    answers = {  # per regular item, the three workers' labels; w2 answers at random and fails the check
        0: ("correct", "correct", "incorrect"),
        1: ("omitted", "omitted", "correct"),
        2: ("correct", "correct", "omitted"),
        3: ("incorrect", "omitted", "correct"),
    }
    for n, item in enumerate(regular):
        label_all(item, workers, *({"label": value} for value in answers[n]))
    label_all(check, workers, {"label": "omitted"}, {"label": "omitted"}, {"label": "correct"})

    row = next(p for p in curated_projects(owner, with_fingerprint=True) if p["id"] == project.pk)
    values, _ = agreement_compute(row)
    assert values["n_labels"] == 12 and values["n_units"] == 4  # the check's three labels are not counted
    assert values["alpha"] == pytest.approx(alpha_nominal([list(a) for a in answers.values()]), abs=1e-9)
    assert values["flagged"] == 1
    without = values["without_flagged"]
    assert (without["n_labels"], without["n_annotators"]) == (8, 2)
    assert without["alpha"] == pytest.approx(alpha_nominal([list(a[:2]) for a in answers.values()]), abs=1e-9)
