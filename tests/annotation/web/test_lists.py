"""The project list, the progress page and the adjudication queue: who sees what, and bounded queries."""

import pytest
from django.urls import reverse

from annotation.models import AnnotationItem, GoldLabel, Label
from annotation.selectors.targets import item_target
from benchmark.services.history import proposable_update
from tests.annotation_factories import agreement_project, annotator, checklist_task, label_all, verify_project

pytestmark = pytest.mark.django_db


def body(response) -> str:
    return response.content.decode()


# --- Project list -----------------------------------------------------------------------------


def test_annotators_see_their_projects_and_their_own_progress(as_user, owner, alice, bob):
    mine = agreement_project(owner, [alice, bob], name="mine", overlap=2)
    agreement_project(owner, [bob], name="theirs")
    label_all(mine.items.first(), [alice], {"label": "correct"})
    html = body(as_user(alice, hx=False).get(reverse("annotation:project_list")))
    assert "mine" in html and "theirs" not in html
    assert "You labelled <strong>1</strong>" in html
    assert 'href="/annotate/"' in html  # the nav link


def test_curators_see_every_project_and_everyones_progress(as_user, owner, alice, bob):
    project = agreement_project(owner, [alice, bob], name="mine", labels=["correct"], overlap=2)
    agreement_project(owner, [bob], name="theirs")
    label_all(project.items.get(), [alice, bob], {"label": "correct"}, {"label": "omitted"})
    html = body(as_user(owner, hx=False).get(reverse("annotation:project_list")))
    assert "mine" in html and "theirs" in html
    assert "2 / 2 labels · 2 annotators" in html and "1 to adjudicate" in html


@pytest.mark.parametrize("n_projects", [2, 6])
def test_project_list_queries_do_not_grow_with_projects(
    as_user, owner, alice, n_projects, django_assert_max_num_queries
):
    for n in range(n_projects):
        project = agreement_project(owner, [alice], name=f"p{n}", labels=["correct", "omitted"])
        label_all(project.items.first(), [alice], {"label": "correct"})
    for user in (alice, owner):
        client = as_user(user, hx=False)
        # session, user, curator check, projects, own labels, label totals, members
        with django_assert_max_num_queries(8):
            response = client.get(reverse("annotation:project_list"))
        # a curator of a blind project is offered no link to the workspace's 403 (issue 38)
        assert body(response).count("Start labelling") == (n_projects if user == alice else 0)
        assert body(response).count("Blind: annotators label") == (0 if user == alice else n_projects)


# --- Progress ---------------------------------------------------------------------------------


def test_progress_shows_annotators_only_their_own_row(as_user, owner, alice, bob):
    project = agreement_project(owner, [alice, bob], overlap=2)
    label_all(project.items.first(), [alice, bob], {"label": "correct"})
    url = reverse("annotation:progress", args=[project.pk])
    alice_view = body(as_user(alice, hx=False).get(url))
    assert 'data-user="alice"' in alice_view and 'data-user="bob"' not in alice_view
    owner_view = body(as_user(owner, hx=False).get(url))
    assert 'data-user="alice"' in owner_view and 'data-user="bob"' in owner_view


@pytest.mark.parametrize("n_annotators", [1, 5])
def test_progress_queries_do_not_grow_with_annotators(as_user, owner, n_annotators, django_assert_max_num_queries):
    users = [annotator(f"a{n}") for n in range(n_annotators)]
    project = agreement_project(owner, users, overlap=n_annotators)
    label_all(project.items.first(), users, {"label": "correct"})
    client = as_user(owner, hx=False)
    with django_assert_max_num_queries(12):
        response = client.get(reverse("annotation:progress", args=[project.pk]))
    assert body(response).count('<tr data-user="a') == n_annotators


# --- Adjudication -----------------------------------------------------------------------------


def disagreeing_agreement_project(owner, alice, bob, n_items: int):
    project = agreement_project(owner, [alice, bob], labels=["correct"] * n_items, overlap=2)
    for item in project.items.all():
        label_all(item, [alice, bob], {"label": "correct"}, {"label": "omitted", "correction": "not in §2"})
    return project


def test_annotators_may_not_adjudicate(as_user, owner, alice, bob):
    project = disagreeing_agreement_project(owner, alice, bob, 1)
    client = as_user(alice)
    assert client.get(reverse("annotation:adjudication", args=[project.pk])).status_code == 403
    item = project.items.get()
    response = client.post(reverse("annotation:adjudicate", args=[project.pk, item.pk]), {})
    assert response.status_code == 403 and not GoldLabel.objects.exists()


def test_queue_shows_labels_side_by_side_with_the_judge(as_user, owner, alice, bob):
    project = disagreeing_agreement_project(owner, alice, bob, 2)
    html = body(as_user(owner, hx=False).get(reverse("annotation:adjudication", args=[project.pk])))
    assert '<strong data-testid="adj-count">2</strong>' in html
    assert html.count('class="ws-label"') == 4
    assert "Omitted — not in §2 (as bob)" in html and "Correct (as alice)" in html
    assert '<span class="pill verdict">correct</span>' in html  # the judge
    assert "The report states it in section 2." in html


@pytest.mark.parametrize("n_items", [2, 7])
def test_queue_queries_do_not_grow_with_items(as_user, owner, alice, bob, n_items, django_assert_max_num_queries):
    project = disagreeing_agreement_project(owner, alice, bob, n_items)
    client = as_user(owner, hx=False)
    with django_assert_max_num_queries(12):
        response = client.get(reverse("annotation:adjudication", args=[project.pk]))
    assert body(response).count("Save gold label") == n_items


def test_adjudicating_records_the_gold_label_and_note(as_user, owner, alice, bob):
    project = disagreeing_agreement_project(owner, alice, bob, 1)
    item = project.items.get()
    bobs = Label.objects.get(item=item, annotator=bob)
    prefix = f"item-{item.pk}"
    client = as_user(owner)
    url = reverse("annotation:adjudicate", args=[project.pk, item.pk])
    missing = client.post(url, {f"{prefix}-note": "checked the PDF"})
    assert missing.status_code == 422 and "checked the PDF</textarea>" in body(missing)
    response = client.post(url, {f"{prefix}-pick": f"label-{bobs.pk}", f"{prefix}-note": "checked the PDF"})
    assert response.status_code == 200 and "Gold label recorded" in body(response)
    gold = GoldLabel.objects.get(item=item)
    assert gold.value["label"] == "omitted" and gold.note == "checked the PDF"
    assert AnnotationItem.objects.get(pk=item.pk).status == AnnotationItem.Status.ADJUDICATED


def test_a_changed_proposal_shows_the_service_message_and_can_be_saved_against_the_new_version(
    as_user, owner, alice, bob
):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = project.items.get()
    label_all(item, [alice, bob], {"decision": "accept"}, {"decision": "reject", "reason": "ambiguous"})
    target = item_target(item)
    proposable_update(obj=target, changes={"text": "Edited meanwhile."}, expected_version=target.version, actor=owner)
    prefix = f"item-{item.pk}"
    client = as_user(owner)
    url = reverse("annotation:adjudicate", args=[project.pk, item.pk])
    conflict = client.post(url, {f"{prefix}-pick": "custom", f"{prefix}-custom": "accept"})
    assert conflict.status_code == 409
    assert "was changed by someone else" in body(conflict)
    assert f'name="{prefix}-expected_version" value="2"' in body(conflict)
    again = {f"{prefix}-pick": "custom", f"{prefix}-custom": "accept", f"{prefix}-expected_version": "2"}
    saved = client.post(url, again)
    assert saved.status_code == 200 and GoldLabel.objects.get(item=item).value["decision"] == "accept"
    target.refresh_from_db()
    assert (target.review_status, target.text) == ("accepted", "Edited meanwhile.")


def test_a_curator_adjudicates_by_accepting_with_an_edit(as_user, owner, alice, bob):
    task, _ = checklist_task(1)
    project = verify_project(owner, [alice, bob], tasks=[task])
    item = project.items.get()
    label_all(item, [alice, bob], {"decision": "accept"}, {"decision": "reject", "reason": "ambiguous"})
    prefix = f"item-{item.pk}"
    client = as_user(owner)
    url = reverse("annotation:adjudicate", args=[project.pk, item.pk])
    queue = body(as_user(owner, hx=False).get(reverse("annotation:adjudication", args=[project.pk])))
    assert f'name="{prefix}-edit-text"' in queue and "Edit the proposal" in queue
    unchanged = client.post(url, {f"{prefix}-pick": "custom", f"{prefix}-custom": "edit",
                                  f"{prefix}-edit-text": item_target(item).text})
    assert unchanged.status_code == 422 and "changed nothing" in body(unchanged)
    response = client.post(url, {f"{prefix}-pick": "custom", f"{prefix}-custom": "edit",
                                 f"{prefix}-edit-text": "The survey compares radar and lidar point density."})
    assert response.status_code == 200 and "Gold label recorded" in body(response)
    gold = GoldLabel.objects.get(item=item)
    assert gold.value["decision"] == "edit"
    assert gold.value["edits"] == {"text": "The survey compares radar and lidar point density."}
    target = item_target(item)
    assert (target.text, target.review_status) == ("The survey compares radar and lidar point density.", "edited")
