"""Blind mode through the API: others' labels and the judge's verdict stay hidden until you label."""

import uuid

from django.urls import reverse

from annotation.models import Label
from core.accounts import is_global_curator
from annotation.services.projects import membership_add
from annotation.loop.settle import item_adjudicate
from tests.annotation_factories import agreement_project, annotator, hold, label_all
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
    assert a.get(reverse("api:item-detail", kwargs={"pk": item.pk})).status_code == 404  # not held: as missing
    hold(item, world.users["ann_a"])
    context = a.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    assert context["revealed"] is False and context["judge"] is None and context["other_labels"] is None

    body = {"item": item.pk, "value": {"label": "correct"}, "client_token": str(uuid.uuid4())}
    assert b.post(reverse("api:label-list"), body, format="json").status_code == 404  # b holds no claim
    assert not Label.objects.filter(item=item).exists()
    hold(item, other)
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


def test_each_user_sees_the_same_items_revealed_on_every_api_channel(world):
    """The blind rule user by user, as the API answers it: an item's other labels, gold label and
    verdict are revealed when its project is not blind, when the user labelled the item, or to
    the project's curators once the item has all its labels. The item's answer, the label list,
    the gold-label list and the verdict list all tell the same story."""
    owner, ann_a = world.users["curator"], world.users["ann_a"]
    other = annotator("other")
    membership_add(project=world.project_a, user=other, role="annotator", actor=owner)
    complete, half, untouched = world.project_a.items.order_by("position")  # blind, two labels an item
    label_all(complete, [ann_a, other], {"label": "correct"}, {"label": "omitted"})
    gold = item_adjudicate(item=complete, curator=owner, value={"label": "correct"})
    label_all(half, [other], {"label": "correct"})
    open_project = agreement_project(owner, [other], name="open", blind=False, overlap=2)
    unlabelled_open = open_project.items.order_by("position").first()
    b_items = set(world.project_b.items.all())  # blind verify project of ann_b, nobody labelled yet
    names = {complete: "complete", half: "half", untouched: "untouched", unlabelled_open: "open item"}

    # user → (items they may open, those revealed to them)
    # In a blind open project, non-curators reach only what they hold or labelled (issue #37).
    expected = {
        "ann_a": ({complete, untouched}, {complete}),  # what they labelled, and the claim ``world`` gave them
        "other": ({complete, half, unlabelled_open}, {complete, half, unlabelled_open}),
        "viewer": (set(), set()),  # viewers never label nor hold: nothing of a blind study
        "ann_b": (set(), set()),
        # curators: every item once it has all its labels, and the open project's
        "curator": ({complete, half, untouched, unlabelled_open} | b_items, {complete, unlabelled_open}),
        "admin": ({complete, half, untouched, unlabelled_open} | b_items, {complete, unlabelled_open}),
    }
    users = {**world.users, "other": other}
    for name, (visible, revealed) in expected.items():
        user = users[name]
        client = client_for(user)
        gold_ids = _ids(client.get(reverse("api:goldlabel-list")))
        verdict_ids = _ids(client.get(reverse("api:verdict-list")))
        for item in visible | {complete, half, untouched, unlabelled_open}:
            where = (name, names.get(item, item.pk))
            response = client.get(reverse("api:item-detail", kwargs={"pk": item.pk}))
            if item not in visible:
                assert response.status_code == 404, where
                continue
            context = response.json()
            assert context["revealed"] is (item in revealed), where
            assert (context["other_labels"] is not None) is (item in revealed), where
            others = set(Label.objects.filter(item=item).exclude(annotator=user).values_list("pk", flat=True))
            listed = _ids(client.get(reverse("api:label-list"), {"item": item.pk}))
            assert listed & others == (others if item in revealed else set()), where
            if item is complete:
                assert (gold.pk in gold_ids) is (item in revealed), where
            if item.target_kind == "verdict" and not is_global_curator(user):
                # global curators read every run's verdicts, so only members' lists follow the rule
                assert (item.target_id in verdict_ids) is (item in revealed), where


def test_an_agreement_item_carries_what_the_judge_saw_and_its_labels_before_the_verdict(db):
    from scoring.models import Verdict
    from tests.annotation_factories import curator, deepscholar_agreement_project

    owner, alice = curator(), annotator("alice")
    project = deepscholar_agreement_project(owner, [alice])
    citation = Verdict.objects.filter(step="deepscholar.citation_support", target_key="0:arxiv:2101.00001").get()
    item = project.items.get(target_id=citation.pk)
    client = client_for(alice)
    hold(item, alice)
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
