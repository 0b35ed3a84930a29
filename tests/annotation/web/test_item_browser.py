"""The item browser (issue 38): a project's curators list its items filtered and sorted, jump to
one, release the live claims on several and reopen complete ones, each audited; annotators (a
global curator among them) get a 403, outsiders a 404; in a blind project what an open item
hides (who labelled it, when, whether its labels disagree) stays hidden and no filter finds it."""

import pytest
from django.urls import reverse

from annotation.loop.claims import claim_next_item
from annotation.models import AnnotationItem, Assignment, ProjectMembership, Role
from core.models import AuditLog
from tests.annotation_factories import agreement_project, annotator, curator, label_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    owner = curator("owner")
    ann = [annotator("ann1"), annotator("ann2")]
    project = agreement_project(owner, ann, labels=["correct", "omitted", "incorrect", "correct"], overlap=2,
                                blind=True, name="blind check")
    items = list(AnnotationItem.objects.filter(project=project).order_by("position", "id"))
    label_all(items[0], ann, {"label": "correct"}, {"label": "omitted"})  # complete, the labels disagree
    label_all(items[1], ann, {"label": "omitted"})  # complete, agreed (with each other and the judge)
    label_all(items[2], ann[:1], {"label": "incorrect"})  # open, one label of two
    return project, owner, ann, items


def _rows(response) -> list[str]:
    import re
    return re.findall(r'data-role="item-row" data-id="(\d+)"', response.content.decode())


def test_a_curator_lists_filters_sorts_and_jumps(client, study, django_assert_max_num_queries):
    project, owner, ann, items = study
    client.force_login(owner)
    url = reverse("annotation:items", args=[project.pk])
    with django_assert_max_num_queries(20):
        everything = client.get(url)
    assert everything.status_code == 200 and len(_rows(everything)) == len(items)
    assert _rows(client.get(url, {"status": "open"})) == [str(i.pk) for i in items[2:]]
    assert _rows(client.get(url, {"disagreement": "1"})) == [str(items[0].pk)]
    assert _rows(client.get(url, {"needs_adjudication": "1"})) == [str(items[0].pk)]
    assert _rows(client.get(url, {"sort": "-labels"}))[:2] == [str(items[0].pk), str(items[1].pk)]
    jump = client.get(url, {"jump": str(items[1].position)})
    assert jump.status_code == 302 and jump["Location"] == reverse("annotation:item", args=[project.pk, items[1].pk])


def test_a_blind_project_hides_what_an_open_item_hides_on_every_filter(client, study):
    project, owner, ann, items = study
    client.force_login(owner)
    url = reverse("annotation:items", args=[project.pk])
    html = client.get(url, {"status": "open"}).content.decode()
    assert "hidden while open" in html and "ann1" not in html.split('id="items"')[1].split("</table>")[0]
    # ann1 labelled the open item 2: the annotator and labelled-after filters do not find it
    found = _rows(client.get(url, {"annotator": ann[0].pk}))
    assert str(items[2].pk) not in found and str(items[0].pk) in found
    assert str(items[2].pk) not in _rows(client.get(url, {"labelled_after": "2000-01-01"}))
    # once it is complete, it is revealed to its curators
    label_all(items[2], ann[1:], {"label": "correct"})
    assert str(items[2].pk) in _rows(client.get(url, {"annotator": ann[0].pk}))


def test_release_and_reopen_are_audited_and_refused_where_they_do_not_apply(client, study):
    project, owner, ann, items = study
    held = claim_next_item(project=project, user=ann[1])
    assert held is not None
    client.force_login(owner)
    action = reverse("annotation:items_action", args=[project.pk])
    response = client.post(action, {"action": "release", "item": [held.item_id, items[0].pk]})
    assert response.status_code == 302
    held.refresh_from_db()
    assert held.status == Assignment.Status.RELEASED
    assert AuditLog.objects.filter(action="assignment.release", actor=owner, object_id=held.item_id).count() == 1
    client.post(action, {"action": "reopen", "item": [items[0].pk, items[3].pk]})
    items[0].refresh_from_db()
    assert (items[0].status, items[0].labels_needed) == ("open", 3)
    assert AuditLog.objects.filter(action="item.reopen", object_id=items[0].pk).get().after == {
        "status": "open", "labels_needed": 3}
    items[3].refresh_from_db()
    assert items[3].labels_needed == 2  # open already: left as it was
    page = client.get(reverse("annotation:items", args=[project.pk])).content.decode()
    assert "1 item reopened" in page and "is open already" in page


def test_annotators_and_an_annotating_curator_get_403_outsiders_404(client, study):
    project, owner, ann, items = study
    url = reverse("annotation:items", args=[project.pk])
    client.force_login(ann[0])
    assert client.get(url, {"status": "open"}).status_code == 403
    assert client.post(reverse("annotation:items_action", args=[project.pk]),
                       {"action": "reopen", "item": [items[0].pk]}).status_code == 403
    labelling_curator = curator("lab-curator")
    ProjectMembership.objects.create(project=project, user=labelling_curator, role=Role.ANNOTATOR)
    client.force_login(labelling_curator)
    assert client.get(url).status_code == 403
    client.force_login(annotator("stranger"))
    assert client.get(url).status_code == 404
    items[0].refresh_from_db()
    assert items[0].status == "complete"
