"""The rating kind in the loop: adjudication beyond the declared distance, undo where the
project is not blind, and a blind rating's refusal in its own words."""

import pytest

from annotation.loop.undo import label_undo_last
from annotation.models import AnnotationItem, Label
from annotation.services.errors import UndoRefusedError
from annotation.services.projects import project_create
from tests.annotation_factories import annotator, curator, label_all, members_add
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db


def _project(*, blind: bool, overlap: int = 2, scale=None):
    owner = curator("owner")
    raters = [annotator("ana"), annotator("ben")]
    task = TaskFactory()
    for n in range(2):
        ReportFactory(task=task, system=SystemFactory(name=f"s{n}"))
    project = project_create(name="r", kind="rating", created_by=owner, tasks=[task], criteria=["coverage", "structure"],
                             overlap=overlap, blind=blind, scale=scale)
    members_add(project, owner, raters)
    return project, raters


@pytest.mark.parametrize("scale, a, b, disagree", [
    (None, 2, 3, False),  # 1–5: a quarter of the scale, 1 apart is agreement
    (None, 2, 4, True),
    ({"min": 0, "max": 100}, 40, 65, False),  # 0–100: 25
    ({"min": 0, "max": 100}, 40, 66, True),
    ({"min": 1, "max": 5, "adjudicate_beyond": 0}, 3, 4, True),
])
def test_scores_further_apart_than_the_declared_distance_go_to_a_curator(scale, a, b, disagree):
    project, raters = _project(blind=True, scale=scale)
    item = AnnotationItem.objects.filter(project=project).first()
    item = label_all(item, raters, {"scores": {"coverage": a, "structure": a}},
                     {"scores": {"coverage": b, "structure": a}})
    assert item.status == AnnotationItem.Status.COMPLETE and item.disagreement is disagree


def test_undo_where_not_blind():
    project, (ana, _) = _project(blind=False, overlap=1)
    item = AnnotationItem.objects.filter(project=project).first()
    label_all(item, [ana], {"scores": {"coverage": 4, "structure": 4}})
    label_undo_last(annotator=ana, project=project)
    assert not Label.objects.exists()


def test_a_blind_rating_is_final_in_its_own_words():
    project, (ana, _) = _project(blind=True, overlap=1)
    item = AnnotationItem.objects.filter(project=project).order_by("position").first()
    label_all(item, [ana], {"scores": {"coverage": 4, "structure": 4}})
    with pytest.raises(UndoRefusedError, match=f"your rating on item {item.position} is final: .* which system wrote"):
        label_undo_last(annotator=ana, project=project)
    assert Label.objects.count() == 1
