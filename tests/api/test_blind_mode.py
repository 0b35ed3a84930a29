"""Blind mode through the API: others' labels and the judge's verdict stay hidden until you label."""

import uuid

from django.urls import reverse

from annotation.api.visibility import revealed_items
from annotation.models import AnnotationItem
from annotation.selectors.workspace import item_context_for
from annotation.services.projects import membership_add
from tests.annotation_factories import annotator
from tests.api.conftest import client_for


def _ids(response):
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def test_labels_and_verdicts_hidden_until_own_label(world):
    project, item = world.project_a, world.item_a
    other = annotator("other")
    membership_add(project=project, user=other, role="annotator", actor=world.users["curator"])
    verdict_id = item.target_id
    a, b = client_for(world.users["ann_a"]), client_for(other)
    assert verdict_id not in _ids(a.get(reverse("api:verdict-list")))
    context = a.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    assert context["revealed"] is False and context["judge"] is None and context["other_labels"] is None

    body = {"item": item.pk, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())}
    assert b.post(reverse("api:label-list"), body, format="json").status_code == 201
    other_label = set(_ids(b.get(reverse("api:label-list"))))
    assert not other_label & _ids(a.get(reverse("api:label-list"), {"item": item.pk}))
    assert verdict_id in _ids(b.get(reverse("api:verdict-list")))  # revealed to the one who labelled
    assert verdict_id not in _ids(a.get(reverse("api:verdict-list")))

    body = dict(body, client_token=str(uuid.uuid4()))
    assert a.post(reverse("api:label-list"), body, format="json").status_code == 201
    assert other_label <= _ids(a.get(reverse("api:label-list"), {"item": item.pk}))
    assert verdict_id in _ids(a.get(reverse("api:verdict-list")))
    context = a.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    assert context["revealed"] is True and context["judge"]["label"]
    # Project B's annotator sees nothing of project A.
    outsider = client_for(world.users["ann_b"])
    assert _ids(outsider.get(reverse("api:label-list"), {"project": project.pk})) == set()
    assert outsider.get(reverse("api:item-detail", kwargs={"pk": item.pk})).status_code == 404


def test_list_rule_agrees_with_item_context_for(world):
    """``revealed_items`` restates ``item_context_for``'s rule; they must agree for every user and item."""
    item = world.item_a
    ann_a = world.users["ann_a"]
    client_for(ann_a).post(reverse("api:label-list"), {"item": item.pk, "value": {"label": "omitted"},
                                                       "client_token": str(uuid.uuid4())}, format="json")
    for user in world.users.values():
        if user is None:
            continue
        revealed = set(revealed_items(user).values_list("pk", flat=True))
        for candidate in AnnotationItem.objects.all():
            try:
                context = item_context_for(item=candidate, user=user)
            except PermissionError:
                assert candidate.pk not in revealed
                continue
            assert context["revealed"] == (candidate.pk in revealed), (user, candidate)


def test_an_agreement_item_carries_what_the_judge_saw_and_its_labels_before_the_verdict(db):
    from scoring.models import Verdict
    from tests.annotation_factories import curator, deepscholar_agreement_project

    owner, alice = curator(), annotator("alice")
    project = deepscholar_agreement_project(owner, [alice])
    citation = Verdict.objects.filter(step="deepscholar.citation_support", target_key="0:arxiv:2101.00001").get()
    item = project.items.get(target_id=citation.pk)
    client = client_for(alice)
    context = client.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    assert context["revealed"] is False and context["judge"] is None
    assert context["item"]["labels"] == ["support", "not_support"]
    assert context["target"]["judged_text"].startswith(
        "Sentence of the report:\nWidget transformers improve accuracy on the benchmark by ten points")
    assert "Cited source: Widget Transformers for Accurate Prediction:\n" in context["target"]["judged_text"]
    assert citation.label not in {part["text"] for part in context["target"]["judged_input"]["parts"]}

    wrong = {"item": item.pk, "value": {"label": "win"}, "client_token": str(uuid.uuid4())}
    response = client.post(reverse("api:label-list"), wrong, format="json")
    assert response.status_code == 400 and "value.label: 'win' is not one of support, not_support" in str(
        response.json())
    right = dict(wrong, value={"label": "not_support"}, client_token=str(uuid.uuid4()))
    assert client.post(reverse("api:label-list"), right, format="json").status_code == 201
    assert client.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()["judge"]["label"] == citation.label
