"""The blind rule itself (``annotation.blind``); ``tests/api/test_blind_mode.py`` and
``tests/api/test_blind_channels.py`` check what every channel shows by it."""

import pytest

from annotation.loop.claims import claim_next_item
from annotation.blind import blind_items, blind_labelling_projects, item_revealed, revealed, revealed_unlabelled
from annotation.models import AnnotationItem, AnnotationProject, Role
from tests.annotation_factories import agreement_project, label_all

pytestmark = pytest.mark.django_db

Status = AnnotationItem.Status
OPEN, COMPLETE, ADJUDICATED = Status.OPEN, Status.COMPLETE, Status.ADJUDICATED


@pytest.mark.parametrize(("blind", "role", "status", "revealed"), [
    (False, Role.ANNOTATOR, OPEN, True),
    (False, Role.VIEWER, OPEN, True),
    (False, Role.CURATOR, OPEN, True),
    (True, Role.ANNOTATOR, OPEN, False),
    (True, Role.ANNOTATOR, COMPLETE, False),  # only their own label reveals it to an annotator
    (True, Role.ANNOTATOR, ADJUDICATED, False),
    (True, Role.VIEWER, ADJUDICATED, False),
    (True, Role.CURATOR, OPEN, False),
    (True, Role.CURATOR, COMPLETE, True),
    (True, Role.CURATOR, ADJUDICATED, True),
])
def test_what_reveals_an_item_whoever_labelled_it(blind, role, status, revealed):
    assert revealed_unlabelled(blind=blind, role=role, status=status) is revealed


def test_one_item_costs_a_query_only_when_its_own_label_decides(owner, alice, bob, django_assert_num_queries):
    project = agreement_project(owner, [alice, bob], labels=["correct", "omitted"], overlap=2)
    first = AnnotationItem.objects.select_related("project").filter(project=project).order_by("position").first()
    with django_assert_num_queries(1):
        assert item_revealed(item=first, role=Role.ANNOTATOR, user=alice) is False
    with django_assert_num_queries(0):  # a claim held is a label not yet given
        assert item_revealed(item=first, role=Role.ANNOTATOR, user=alice, holds_claim=True) is False
    with django_assert_num_queries(1):
        assert item_revealed(item=first, role=Role.CURATOR, user=owner) is False  # still open
    label_all(first, [alice, bob], {"label": "correct"})
    first = AnnotationItem.objects.select_related("project").get(pk=first.pk)
    with django_assert_num_queries(1):
        assert item_revealed(item=first, role=Role.ANNOTATOR, user=alice) is True
    with django_assert_num_queries(0):
        assert item_revealed(item=first, role=Role.CURATOR, user=owner) is True  # it has all its labels
    open_project = agreement_project(owner, [alice], name="open", blind=False)
    open_item = AnnotationItem.objects.select_related("project").filter(project=open_project).first()
    with django_assert_num_queries(0):
        assert item_revealed(item=open_item, role=Role.ANNOTATOR, user=alice) is True


def test_blind_items_are_an_annotators_unlabelled_items_of_blind_projects(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct", "omitted"], overlap=2)
    agreement_project(owner, [alice], name="open", blind=False)
    first, second = project.items.order_by("position")
    label_all(first, [alice], {"label": "correct"})
    assert set(blind_items(alice)) == {second}
    assert set(blind_items(bob)) == {first, second}
    assert set(blind_items(owner)) == set()  # curators do not label in blind projects
    claim = claim_next_item(project=project, user=alice)
    assert claim.item == second and set(blind_items(alice)) == {second}  # a claim reveals nothing
    assert blind_labelling_projects(alice) == ["agreement"]
    label_all(second, [alice], {"label": "omitted"})
    assert set(blind_items(alice)) == set() and blind_labelling_projects(alice) == []


@pytest.mark.parametrize(("reveal", "closed", "labelled", "revealed_"), [
    ("close", False, False, False),
    ("close", False, True, False),  # a pairwise study's default: the label reveals nothing ...
    ("close", True, False, True),  # ... its close reveals everything to everyone
    ("label", False, False, False),
    ("label", False, True, True),
    ("label", True, False, True),
])
def test_a_blind_project_reveals_at_close_or_after_each_label_as_it_says(reveal, closed, labelled, revealed_):
    project = AnnotationProject(blind=True, reveal=reveal, status="closed" if closed else "open")
    assert revealed(project=project, role=Role.ANNOTATOR, status=OPEN, labelled=labelled) is revealed_
    assert revealed(project=project, role=Role.VIEWER, status=COMPLETE, labelled=False) is closed
