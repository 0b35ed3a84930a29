"""Judge vs people over every human label (issue #28 §4): each annotator against the judge, the
consensus-based figure kept beside it; against sklearn on labels read back here."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.dashboards import agreement
from annotation.models import Label
from scoring.models import Verdict
from tests.annotation.dashboards.builders import agreement_setup

pytestmark = pytest.mark.django_db


def test_each_annotator_against_the_judge_over_all_their_labels():
    project, owner, users = agreement_setup(n_verdicts=9)
    [group] = agreement.judge_agreement(user=owner)["groups"]
    judge_of = dict(Verdict.objects.values_list("pk", "label"))
    rows = {row["annotator"]: row for row in group["per_annotator"]}
    assert list(rows) == sorted(u.username for u in users)
    for user in users:
        labels = list(Label.objects.filter(project=project, annotator=user).order_by("item_id")
                      .values_list("item__target_id", "value"))
        judged = [judge_of[target] for target, _ in labels]
        given = [value["label"] for _, value in labels]
        row = rows[user.username]
        assert row["n"] == len(labels) == 9  # every label, including items without consensus
        assert row["accuracy"] == pytest.approx(np.mean(np.array(judged) == np.array(given)))
        assert row["kappa"] == pytest.approx(cohen_kappa_score(judged, given), abs=1e-12)
        assert row["kappa_low"] <= row["kappa"] <= row["kappa_high"]
    # the consensus row stays: fewer items (one unresolved disagreement left out)
    assert group["n"] == 8 and group["unresolved"] == 1
