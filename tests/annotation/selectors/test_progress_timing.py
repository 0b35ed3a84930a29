"""Time per item and last activity on the progress page (issue 30): every label kind stores
``seconds_taken`` (the workspace form posts it, the API takes it, a pairwise value's own counts),
and the progress figures are the median and mean of what is stored, recomputed here with numpy."""

import numpy as np
import pytest
from django.urls import reverse

from annotation.loop.claims import assignment_skip, claim_next_item
from annotation.models import Label
from annotation.selectors.progress import project_progress
from annotation.loop.labels import label_submit
from tests.annotation_factories import agreement_project, pairwise_project, token

pytestmark = pytest.mark.django_db


def test_progress_shows_median_mean_n_and_last_activity_per_annotator(client, owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct"] * 5, overlap=2)
    taken = {alice: [12.0, 3.5, 40.25], bob: [7.0, None]}  # bob's second label carries no time
    for user, seconds in taken.items():
        for value in seconds:
            claim = claim_next_item(project=project, user=user)
            label_submit(item=claim.item, annotator=user, value={"label": "correct"}, client_token=token(),
                         seconds_taken=value)
    assignment_skip(assignment=claim_next_item(project=project, user=bob), user=bob)
    rows = {row["username"]: row for row in project_progress(project=project, user=owner)["annotators"]}
    alice_seconds = np.array(taken[alice])
    assert rows["alice"]["seconds_median"] == pytest.approx(np.median(alice_seconds))
    assert rows["alice"]["seconds_mean"] == pytest.approx(alice_seconds.mean())
    assert rows["alice"]["n_timed"] == 3 and rows["bob"]["n_timed"] == 1
    assert rows["bob"]["seconds_median"] == rows["bob"]["seconds_mean"] == 7.0
    newest_label = Label.objects.filter(annotator=alice).latest("created_at").created_at
    assert rows["alice"]["last_activity"] == newest_label
    skip = bob.assignments.get(status="skipped").ended_at
    assert rows["bob"]["last_activity"] == skip >= Label.objects.filter(annotator=bob).latest("created_at").created_at
    assert rows["curator"]["n_timed"] == 0 and rows["curator"]["last_activity"] is None

    client.force_login(owner)
    html = client.get(reverse("annotation:progress", args=[project.pk])).content.decode()
    assert f"{np.median(alice_seconds):.1f} s" in html and f"({alice_seconds.mean():.1f} s)" in html
    assert html.count("ago</time>") == 2


def test_every_kind_stores_seconds_taken_from_the_form_and_the_api(client, owner, alice):
    agreement = agreement_project(owner, [alice], labels=["correct"], overlap=1)
    pairwise = pairwise_project(owner, [alice], n_systems=2, overlap=1)
    client.force_login(alice)
    item = claim_next_item(project=agreement, user=alice).item
    response = client.post(reverse("annotation:label", args=[agreement.pk, item.pk]),
                           {"client_token": token(), "label": "correct", "seconds_taken": "8.5"})
    assert response.status_code in (200, 302)
    assert Label.objects.get(item=item).seconds_taken == 8.5
    # the API: a top-level seconds_taken for any kind; a pairwise value's own one when that is absent
    pair_item = claim_next_item(project=pairwise, user=alice).item
    body = {"item": pair_item.pk, "client_token": token(), "value": {"choice": "left", "seconds_taken": 21.0}}
    answer = client.post("/api/labels/", body, content_type="application/json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["seconds_taken"] == 21.0 and Label.objects.get(item=pair_item).seconds_taken == 21.0
    bad = client.post("/api/labels/", {**body, "client_token": token(), "seconds_taken": -1},
                      content_type="application/json")
    assert bad.status_code == 400
